/* hand_inline.c calling vmath.c's entry point _ZGVeN16v_ap_expf instead of inlining the exp:
   as slow as the rendered apmath_scratch_v16 in cache (README). */
#include <stdint.h>
#include <math.h>
#include <immintrin.h>

float ap_expf(float);
__m512 _ZGVeN16v_ap_expf(__m512);
static inline __m512 ex16_inl(__m512 x) {
  const __m512 c = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(0x1.715476p+0f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e43p-1f), c);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-0x1.05c61p-29f), r);
  __m512 p = _mm512_set1_ps(0x1.687c22p-10f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.123b8ep-7f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555b58p-5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.55548ep-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffff8p-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

void k_81ce194d1b274a87(void **bufs, const int64_t *dims, const int64_t *strides) {
  const float *restrict in0 = (const float *)bufs[0];
  float *restrict out1 = (float *)bufs[1];
  const int64_t N = dims[1];
  const int64_t R = dims[0];
  const int ap_stream = R * N * 4 >= 16777216 && N <= 8192;
  #pragma omp parallel if(R * N >= 32768)
  {
  float ap_buf[8192] __attribute__((aligned(64)));
  #pragma omp for schedule(static)
  for (int64_t r = 0; r < R; r++) {
    const float *x = in0 + r * strides[0];
    float *o = out1 + r * N;
    float *e = N <= 8192 ? ap_buf : o;
    int64_t j = 0;
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (; j + 64 <= N; j += 64) {
      m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + j));
      m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + j + 16));
      m2 = _mm512_max_ps(m2, _mm512_loadu_ps(x + j + 32));
      m3 = _mm512_max_ps(m3, _mm512_loadu_ps(x + j + 48));
    }
    for (; j < N; j += 16) {
      const __mmask16 k = N - j >= 16 ? 0xFFFF : (__mmask16)((1u << (N - j)) - 1);
      m0 = _mm512_mask_max_ps(m0, k, m0, _mm512_maskz_loadu_ps(k, x + j));
    }
    const float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
    const __m512 mv = _mm512_set1_ps(m);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    j = 0;
    for (; j + 32 <= N; j += 32) {
      _mm_prefetch((const char *)(x + 2 * strides[0] + j), _MM_HINT_T0); _mm_prefetch((const char *)(x + 2 * strides[0] + j + 16), _MM_HINT_T0);
      const __m512 e0 = _ZGVeN16v_ap_expf(_mm512_sub_ps(_mm512_loadu_ps(x + j), mv));
      const __m512 e1 = _ZGVeN16v_ap_expf(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), mv));
      _mm512_store_ps(e + j, e0); _mm512_store_ps(e + j + 16, e1);
      s0 = _mm512_add_ps(s0, e0); s1 = _mm512_add_ps(s1, e1);
    }
    for (; j < N; j += 16) {
      const __mmask16 k = N - j >= 16 ? 0xFFFF : (__mmask16)((1u << (N - j)) - 1);
      const __m512 e0 = _ZGVeN16v_ap_expf(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), mv));
      _mm512_mask_storeu_ps(e + j, k, e0);
      s0 = _mm512_mask_add_ps(s0, k, s0, e0);
    }
    const float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    const __m512 q = _mm512_set1_ps(1.0f / s);
    j = 0;
    if (ap_stream) {
      int64_t a = ((64 - ((uintptr_t)o & 63)) & 63) >> 2;
      if (a > N) a = N;
      if (a) _mm512_mask_storeu_ps(o, (__mmask16)((1u << a) - 1), _mm512_mul_ps(_mm512_loadu_ps(e), q));
      j = a;
      for (; j + 16 <= N; j += 16) _mm512_stream_ps(o + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), q));
    }
    for (; j < N; j += 16) {
      const __mmask16 k = N - j >= 16 ? 0xFFFF : (__mmask16)((1u << (N - j)) - 1);
      _mm512_mask_storeu_ps(o + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, e + j), q));
    }
  }
  if (ap_stream) _mm_sfence();
  }
}

float ap_dummy(float x) { return ap_expf(x); }
