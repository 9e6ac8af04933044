#include <stdint.h>
#include <math.h>
#include <immintrin.h>
/* RMSNorm 4096x1024 written by hand with the kernel ABI (ab_two.py loads it as the op's kernel k_8fd23a00acfad99b):
   four FMA accumulators, a tree sum, the next row prefetched from the store loop, stores streamed
   from registers. */
void k_8fd23a00acfad99b(void **bufs, const int64_t *dims, const int64_t *strides) {
  const float *restrict x = (const float *)bufs[0];
  const float *restrict w = (const float *)bufs[1];
  float *restrict o = (float *)bufs[2];
  const int64_t N = dims[1], R = dims[0];
  #pragma omp parallel
  {
  #pragma omp for schedule(static)
  for (int64_t r = 0; r < R; r++) {
    const float *xr = x + r * strides[0]; float *orow = o + r * N; const float *xn = xr + strides[0];
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t j = 0;
    for (; j + 64 <= N; j += 64) {
      __m512 v0 = _mm512_loadu_ps(xr + j), v1 = _mm512_loadu_ps(xr + j + 16), v2 = _mm512_loadu_ps(xr + j + 32), v3 = _mm512_loadu_ps(xr + j + 48);
      a0 = _mm512_fmadd_ps(v0, v0, a0); a1 = _mm512_fmadd_ps(v1, v1, a1); a2 = _mm512_fmadd_ps(v2, v2, a2); a3 = _mm512_fmadd_ps(v3, v3, a3);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    for (; j < N; j++) sum += xr[j] * xr[j];
    const float s = 1.0f / sqrtf(sum / N + 0x1.0c6f7a0000000p-20f);
    int64_t jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2; if (jc > N) jc = N;
    __m512 vs = _mm512_set1_ps(s);
    for (int64_t i = 0; i < jc; i++) orow[i] = xr[i] * s * w[i];
    for (; jc + 64 <= N; jc += 64) {
      __builtin_prefetch(xn + jc); __builtin_prefetch(xn + jc + 16); __builtin_prefetch(xn + jc + 32); __builtin_prefetch(xn + jc + 48);
      for (int q = 0; q < 64; q += 16)
        _mm512_stream_ps(orow + jc + q, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xr + jc + q), vs), _mm512_loadu_ps(w + jc + q)));
    }
    for (int64_t i = jc; i < N; i++) orow[i] = xr[i] * s * w[i];
  }
  _mm_sfence();
  }
}
