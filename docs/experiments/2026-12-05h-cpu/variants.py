"""Softmax 4096x1024's scratch stash of our exp in AVX-512 groups as c413a94 rendered it
(`apmath_scratch_avx512`) and piped (`apmath_scratch_avx512_piped`), as this checkout renders them,
whose max passes keep MAX_GROUPS times the partials (`..._max4`), and hand-edited twins of the first,
into OUT (default /tmp/sm_variants), one `<kernel>.<name>.c` each:

- `nomax`: the max pass dropped (the max taken as 3.0: cost attribution, not the same bits);
- `nopf`: no requests for the rows ahead in the exp pass;
- `maxv`: the max's 32 partials folded in registers (`_mm512_max_ps` and narrower, the scalar tree's
  pairs and operand order) instead of through the stack;
- `max8`, `max8v`: eight partials (128 columns a group) in the max pass, then the two of the
  rendered loop; `max8v` also folds in registers;
- `hand`: the hand-made piped prototype (the row's final pass streamed out at each group of the next
  row's max pass, from a buffer each thread keeps; the row's last columns after the max pass, as
  the renderer does: `CRenderer.pipes`).

python docs/experiments/2026-12-05h-cpu/variants.py [OUT]   (PYTHONPATH at the checkout)"""
import os
import sys

from autoperfect.backends import cfamily, cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/sm_variants"
spec = parse_op("softmax", {"fn": "def softmax(x):\n    return mx.softmax(x, axis=-1)\n",
                            "inputs": {"x": {"shape": [4096, 1024], "dtype": "float32"}}})
(k,) = [k for k in front(spec).kernels if k is not None]
by_name = {s.name: s for s in cpu.schedules_for(k)}
os.makedirs(OUT, exist_ok=True)
sources = {f"{name}_max4": cpu.render(k, by_name[name]) for name in ("apmath_scratch_avx512", "apmath_scratch_avx512_piped")}
cfamily.MAX_GROUPS = 1  # c413a94's max pass, two partials: the sources the edits below apply to
base = cpu.render(k, by_name["apmath_scratch_avx512"])
sources |= {"apmath_scratch_avx512": base, "apmath_scratch_avx512_piped": cpu.render(k, by_name["apmath_scratch_avx512_piped"])}


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


sources["nomax"] = edit(base, "const float r1 = a1;", "const float r1 = 3.0f;")
sources["nopf"] = edit(base, "if (N <= 8192) {\n                __builtin_prefetch", "if (0) {\n                __builtin_prefetch")
STORE = """        _mm512_storeu_ps(p1 + 0, p1v0);
        _mm512_storeu_ps(p1 + 16, p1v1);
"""
FOLD = """        const __m512 m16 = _mm512_max_ps(p1v0, p1v1);
        const __m256 m8 = _mm256_max_ps(_mm512_castps512_ps256(m16), _mm512_extractf32x8_ps(m16, 1));
        const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
        const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        const __m128 m1 = _mm_max_ss(m2, _mm_movehdup_ps(m2));
        p1[0] = _mm_cvtss_f32(m1);
"""
TREE = """      for (int l = 0; l < 16; l++) { p1[l] = p1[l] > p1[l + 16] ? p1[l] : p1[l + 16]; }
      for (int l = 0; l < 8; l++) { p1[l] = p1[l] > p1[l + 8] ? p1[l] : p1[l + 8]; }
      for (int l = 0; l < 4; l++) { p1[l] = p1[l] > p1[l + 4] ? p1[l] : p1[l + 4]; }
      for (int l = 0; l < 2; l++) { p1[l] = p1[l] > p1[l + 2] ? p1[l] : p1[l + 2]; }
      for (int l = 0; l < 1; l++) { p1[l] = p1[l] > p1[l + 1] ? p1[l] : p1[l + 1]; }
"""
folded = edit(edit(base, STORE, FOLD), TREE, "#if !defined(__AVX512F__)\n" + TREE + "#endif\n")
sources["maxv"] = folded
LOOP_START = "      {\n        __m512 p1v0 = _mm512_loadu_ps(p1 + 0);"
EIGHT = """      {
        __m512 q[8];
        for (int u = 0; u < 8; u++) q[u] = _mm512_set1_ps(-INFINITY);
        for (; jm + 128 <= N; jm += 128) {
          for (int u = 0; u < 8; u++) q[u] = _mm512_max_ps(q[u], _mm512_loadu_ps(in0 + b0 + jm + 16 * u));
        }
        for (int u = 0; u < 4; u++) q[u] = _mm512_max_ps(q[u], q[u + 4]);
        for (int u = 0; u < 2; u++) q[u] = _mm512_max_ps(q[u], q[u + 2]);
        __m512 p1v0 = q[0], p1v1 = q[1];
        for (; jm + 32 <= N; jm += 32) {
          p1v0 = _mm512_max_ps(p1v0, _mm512_loadu_ps(in0 + b0 + jm));
          p1v1 = _mm512_max_ps(p1v1, _mm512_loadu_ps(in0 + b0 + jm + 16));
        }
"""


def eight(source: str, tail: str) -> str:
    a = source.index(LOOP_START)
    b = source.index("#else", a)
    return source[:a] + EIGHT + tail + "      }\n" + source[b:]


sources["max8"] = eight(base, STORE)
sources["max8v"] = eight(folded, FOLD)

# the hand-made piped prototype
hand = edit(base, """  #pragma omp parallel if(R * N >= 32768)
  {
  #pragma omp for schedule(static)""", """  const int ap_piped = ap_stream && N % 16 == 0 && ((uintptr_t)out1 & 63) == 0;
  #pragma omp parallel if(R * N >= 32768)
  {
  int64_t ap_last = -1; float ap_cq4 = 0.0f;
  float ap_buf[8192] __attribute__((aligned(64)));
  #pragma omp for schedule(static)""")
hand = edit(hand, "    float ap_buf[8192] __attribute__((aligned(64)));\n    float *ap_row",
            "    int64_t ap_done = 0;\n    float *ap_row")
hand = edit(hand, """        for (; jm + 32 <= N; jm += 32) {
          {
            const int64_t j = jm + 0;
            const __m512 v0 = _mm512_loadu_ps(in0 + b0 + j);
            p1v0 = _mm512_max_ps(p1v0, v0);""", """        for (; jm + 32 <= N; jm += 32) {
          if (ap_piped && ap_last >= 0) {
            const __m512 q = _mm512_set1_ps(ap_cq4);
            _mm512_stream_ps(out1 + ap_last * N + jm, _mm512_load_ps(ap_buf + jm) * q);
            _mm512_stream_ps(out1 + ap_last * N + jm + 16, _mm512_load_ps(ap_buf + jm + 16) * q);
            ap_done = jm + 32;
          }
          {
            const int64_t j = jm + 0;
            const __m512 v0 = _mm512_loadu_ps(in0 + b0 + j);
            p1v0 = _mm512_max_ps(p1v0, v0);""")
REST = """      {
        const __m512 q = _mm512_set1_ps(ap_cq4);
        for (int64_t j = {lo}; j < N; j += 16) _mm512_stream_ps(out1 + ap_last * N + j, _mm512_load_ps(ap_buf + j) * q);
      }
"""
hand = edit(hand, "    const float r1 = a1;\n", "    const float r1 = a1;\n    if (ap_piped && ap_last >= 0)\n"
            + REST.replace("{lo}", "ap_done"))
a = hand.index("    int64_t jc = N;\n    if (ap_stream) {")
b = hand.index("  if (ap_stream) _mm_sfence();")
unpiped = hand[a:b].rstrip()[:-1]  # the row loop's closing brace dropped
hand = (hand[:a] + "    if (ap_piped) {\n      ap_last = r; ap_cq4 = q4;\n    } else {\n" + unpiped + "    }\n  }\n"
        + "  if (ap_last >= 0)\n" + REST.replace("{lo}", "0") + hand[b:])
sources["hand"] = hand
for name, source in sources.items():
    with open(os.path.join(OUT, f"{k.name}.{name}.c"), "w") as f:
        f.write(source)
print(OUT, sorted(sources))
