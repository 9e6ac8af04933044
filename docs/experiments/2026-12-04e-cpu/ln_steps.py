"""LayerNorm's generated candidate with the hand kernel's passes (ln_hand.c) put in: `S2` its
statistics pass (K, three sums in two AVX-512 chains each, folded in registers), `S3` its normalize
pass (32 floats a step, stores streamed from registers, one row ahead), `S23` both; each gives the
candidate's bits (../2026-12-03b-cpu/ab_two.py prints the difference). Usage, from the repository
root: `python docs/experiments/2026-12-04e-cpu/ln_steps.py CANDIDATE.c OUTDIR` with CANDIDATE.c a
rendering of `rows_shifted_v16_near` (../2026-12-03c-cpu/render.py layernorm DIR)."""
import sys
from pathlib import Path

STATS = """    float r3, r10;
    {
      const float *xr = in0 + b0;
      float k = 0; for (int j = 0; j < 16; j++) k += xr[j]; k /= 16;
      const __m512 K = _mm512_set1_ps(k);
      __m512 p0 = _mm512_setzero_ps(), p1 = p0, s0 = p0, s1 = p0, q0 = p0, q1 = p0;
      int64_t j = 0;
      for (; j + 32 <= N; j += 32) {
        __m512 a = _mm512_loadu_ps(xr + j), b = _mm512_loadu_ps(xr + j + 16);
        p0 = _mm512_add_ps(p0, a); p1 = _mm512_add_ps(p1, b);
        __m512 da = _mm512_sub_ps(a, K), db = _mm512_sub_ps(b, K);
        s0 = _mm512_add_ps(s0, da); s1 = _mm512_add_ps(s1, db);
        q0 = _mm512_add_ps(q0, _mm512_mul_ps(da, da)); q1 = _mm512_add_ps(q1, _mm512_mul_ps(db, db));
      }
      float p = _mm512_reduce_add_ps(_mm512_add_ps(p0, p1)), s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
      float q = _mm512_reduce_add_ps(_mm512_add_ps(q0, q1));
      for (; j < N; j++) { p += xr[j]; s += xr[j] - k; q += (xr[j] - k) * (xr[j] - k); }
      r3 = p / N; r10 = 1.0f / sqrtf((q - s * (s / N)) / N + r8);
    }
"""
NORMALIZE = """    {
      const float *xr = in0 + b0, *xn = xr + ap_ahead * strides[0], *w = in1, *bb = in2;
      float *orow = out3 + r * N;
      int64_t jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2; if (jc > N) jc = N;
      const __m512 vm = _mm512_set1_ps(r3), vs = _mm512_set1_ps(r10);
      for (int64_t i = 0; i < jc; i++) orow[i] = (xr[i] - r3) * r10 * w[i] + bb[i];
      for (; jc + 32 <= N; jc += 32) {
        __builtin_prefetch(xn + jc); __builtin_prefetch(xn + jc + 16);
        for (int h = 0; h < 32; h += 16)
          _mm512_stream_ps(orow + jc + h, _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(
              _mm512_loadu_ps(xr + jc + h), vm), vs), _mm512_loadu_ps(w + jc + h)), _mm512_loadu_ps(bb + jc + h)));
      }
      for (int64_t i = jc; i < N; i++) orow[i] = (xr[i] - r3) * r10 * w[i] + bb[i];
    }
  }
"""


def swap(source: str, start: str, end: str, new: str, keep_end: bool) -> str:
    a, b = source.index(start), source.index(end)
    return source[:a] + new + source[b if keep_end else b + len(end):]


src, out = Path(sys.argv[1]).read_text(), Path(sys.argv[2])
stats = lambda s: swap(s, "    float a1 = 0.0f;\n", "    const float r10 = (1.0f / sqrtf(r9));\n", STATS, False)
normalize = lambda s: swap(s, "    int64_t jc = N;\n    if (ap_stream) {", "  if (ap_stream) _mm_sfence();", NORMALIZE, True)
out.mkdir(parents=True, exist_ok=True)
for name, text in (("S2", stats(src)), ("S3", normalize(src)), ("S23", normalize(stats(src)))):
    (out / f"layernorm.{name}.c").write_text(text)
