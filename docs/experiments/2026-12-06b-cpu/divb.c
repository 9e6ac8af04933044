/* GELU's _sigmoid body over 64K floats in the L2, one thread: x / (1 + e) by vdivps against a
   reciprocal estimate, a Newton step and a correction (rcp14, 2 FMAs, a product, 2 FMAs).
   gcc -O3 -march=native -ffp-contract=fast divb.c -o divb -lm && ./divb (from this folder) */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <math.h>
#include "../../../autoperfect/backends/vmath_avx512.h"  /* the kernels' own ap_expf_v16 */
static inline __m512 fdiv(__m512 a, __m512 b) {
  __m512 y = _mm512_rcp14_ps(b);
  __m512 e = _mm512_fnmadd_ps(b, y, _mm512_set1_ps(1.0f));
  y = _mm512_fmadd_ps(y, e, y);
  __m512 q = _mm512_mul_ps(a, y);
  __m512 r = _mm512_fnmadd_ps(q, b, a);
  return _mm512_fmadd_ps(r, y, q);
}
static inline __m512 body(__m512 v0, int fast) {
  __m512 v1 = v0 * v0, v2 = v1 * v0;
  __m512 v5 = v0 + 0x1.6e4e26p-5f * v2;
  __m512 v9 = -2.0f * (0x1.988454p-1f * v5);
  __m512 d = 1.0f + ap_expf_v16(v9);
  if (fast) return fdiv(v0, d); return v0 / d;
}
int main(int argc, char **argv) {
  long n = 1 << 16; /* 256 KB in, 256 KB out: in L2 */
  float *x = aligned_alloc(64, n * 4), *y = aligned_alloc(64, n * 4);
  for (long i = 0; i < n; i++) x[i] = (float)(i % 2000) / 200.0f - 5.0f;
  for (int fast = 0; fast < 2; fast++) for (int t = 0; t < 3; t++) {
    struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
    for (int rep = 0; rep < 2000; rep++)
      for (long i = 0; i < n; i += 16) _mm512_storeu_ps(y + i, body(_mm512_loadu_ps(x + i), fast));
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
    printf("%s %.3f ns/element  (%f)\n", fast ? "rcp+NR+corr" : "vdivps    ", s / (2000.0 * n) * 1e9, y[123]);
  }
}
