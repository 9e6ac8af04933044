// LayerNorm 4096x1024 by hand (the variance as q/n - mean^2, unsound, for timing only). Build with
// the CPU backend's flags; PIPE=1 (-DPIPE=1) pipelines the next row's statistics into the normalize pass.
#include <stdint.h>
#include <math.h>
#include <immintrin.h>
/* LayerNorm 4096x1024 by hand, kernel ABI (x, w, b, out). PIPE=0: per row, shifted stats (sum, sum d, sum d^2
   in four chains each) then the normalize pass with NT stores, the next row prefetched from it.
   PIPE=1: row r's normalize pass also sums row r+1's stats (its loads are demand loads). */
#ifndef PIPE
#define PIPE 0
#endif
typedef struct { float mean, rstd; } st_t;
static inline st_t stats(const float *xr, int64_t N) {
  const __m512 K = _mm512_set1_ps(0.0f);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, q0 = s0, q1 = s0;
  int64_t j = 0;
  for (; j + 32 <= N; j += 32) {
    __m512 a = _mm512_loadu_ps(xr + j), b = _mm512_loadu_ps(xr + j + 16);
    s0 = _mm512_add_ps(s0, a); s1 = _mm512_add_ps(s1, b);
    q0 = _mm512_fmadd_ps(a, a, q0); q1 = _mm512_fmadd_ps(b, b, q1);
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)), q = _mm512_reduce_add_ps(_mm512_add_ps(q0, q1));
  for (; j < N; j++) { s += xr[j]; q += xr[j] * xr[j]; }
  (void)K;
  st_t r; r.mean = s / N; float v = q / N - r.mean * r.mean; r.rstd = 1.0f / sqrtf(v + 1e-5f); return r;
}
void k_6d67fd54ba301128(void **bufs, const int64_t *dims, const int64_t *strides) {
  const float *restrict x = (const float *)bufs[0];
  const float *restrict w = (const float *)bufs[1];
  const float *restrict bb = (const float *)bufs[2];
  float *restrict o = (float *)bufs[3];
  const int64_t N = dims[1], R = dims[0];
  #pragma omp parallel
  {
  int nt = __builtin_omp_get_num_threads(), t = __builtin_omp_get_thread_num();
  int64_t r0 = R * t / nt, r1 = R * (t + 1) / nt;
  st_t cur = stats(x + r0 * N, N);
  for (int64_t r = r0; r < r1; r++) {
    const float *xr = x + r * N, *xn = xr + N; float *orow = o + r * N;
    const int last = r + 1 >= r1;
    int64_t jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2; if (jc > N) jc = N;
    const __m512 vm = _mm512_set1_ps(cur.mean), vs = _mm512_set1_ps(cur.rstd);
    for (int64_t i = 0; i < jc; i++) orow[i] = (xr[i] - cur.mean) * cur.rstd * w[i] + bb[i];
#if PIPE
    __m512 s0 = _mm512_setzero_ps(), q0 = s0, s1 = s0, q1 = s0;
    const float *xs = last ? xr : xn;
    int64_t p = 0;
#endif
    for (; jc + 32 <= N; jc += 32) {
#if PIPE
      __m512 a = _mm512_loadu_ps(xs + p), b2 = _mm512_loadu_ps(xs + p + 16); p += 32;
      s0 = _mm512_add_ps(s0, a); q0 = _mm512_fmadd_ps(a, a, q0); s1 = _mm512_add_ps(s1, b2); q1 = _mm512_fmadd_ps(b2, b2, q1);
#else
      __builtin_prefetch(xn + jc); __builtin_prefetch(xn + jc + 16);
#endif
      __m512 v0 = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + jc), vm), vs), _mm512_loadu_ps(w + jc), _mm512_loadu_ps(bb + jc));
      __m512 v1 = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + jc + 16), vm), vs), _mm512_loadu_ps(w + jc + 16), _mm512_loadu_ps(bb + jc + 16));
      _mm512_stream_ps(orow + jc, v0); _mm512_stream_ps(orow + jc + 16, v1);
    }
    for (int64_t i = jc; i < N; i++) orow[i] = (xr[i] - cur.mean) * cur.rstd * w[i] + bb[i];
#if PIPE
    if (!last) {
      float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)), q = _mm512_reduce_add_ps(_mm512_add_ps(q0, q1));
      for (; p < N; p++) { s += xs[p]; q += xs[p] * xs[p]; }
      cur.mean = s / N; float v = q / N - cur.mean * cur.mean; cur.rstd = 1.0f / sqrtf(v + 1e-5f);
    }
#else
    if (!last) cur = stats(xn, N);
#endif
  }
  _mm_sfence();
  }
}
