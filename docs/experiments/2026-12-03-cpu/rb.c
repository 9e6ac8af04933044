#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
/* rmsnorm over rows of N, B rows per block: stats of B rows, then B rows written (NT when aligned) */
#define BODY(B) \
void rms_b##B(const float *restrict x, const float *restrict w, float *restrict o, int64_t R, int64_t N) { \
  _Pragma("omp parallel") { \
  _Pragma("omp for schedule(static)") \
  for (int64_t rb = 0; rb < R; rb += B) { \
    float sc[B]; const int64_t re = rb + B < R ? rb + B : R; \
    for (int64_t r = rb; r < re; r++) { \
      float p[32] = {0}; const float *xr = x + r * N; int64_t jm = 0; \
      for (; jm + 32 <= N; jm += 32) { \
        _Pragma("omp simd simdlen(16)") for (int l = 0; l < 32; l++) p[l] += xr[jm + l] * xr[jm + l]; } \
      float a = 0; for (int l = 0; l < 32; l++) a += p[l]; \
      for (; jm < N; jm++) a += xr[jm] * xr[jm]; \
      sc[r - rb] = 1.0f / sqrtf(a / N + 1e-6f); } \
    for (int64_t r = rb; r < re; r++) { \
      const float *xr = x + r * N; float *orow = o + r * N; const float s = sc[r - rb]; int64_t jc = 0; \
      jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2; if (jc > N) jc = N; \
      for (int64_t j = 0; j < jc; j++) orow[j] = xr[j] * s * w[j]; \
      for (; jc + 64 <= N; jc += 64) { float t[64] __attribute__((aligned(64))); \
        _Pragma("omp simd simdlen(16)") for (int j = 0; j < 64; j++) t[j] = xr[jc + j] * s * w[jc + j]; \
        for (int q = 0; q < 64; q += 16) _mm512_stream_ps(orow + jc + q, _mm512_load_ps(t + q)); } \
      for (int64_t j = jc; j < N; j++) orow[j] = xr[j] * s * w[j]; } } \
  _mm_sfence(); } }
BODY(1) BODY(4) BODY(16) BODY(64)
void copy_nt(const float *restrict a, float *restrict b, int64_t n) {
  _Pragma("omp parallel") { _Pragma("omp for schedule(static)")
  for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(b + i, _mm512_loadu_ps(a + i)); _mm_sfence(); } }
int main(int argc, char **argv) {
  int64_t R = 4096, N = 1024; int gap = argc > 1 ? atoi(argv[1]) : 0;
  char *xb = aligned_alloc(64, R*N*4 + 64), *ob = aligned_alloc(64, R*N*4 + 64);
  float *x = (float*)(xb + 16), *o = (float*)(ob + 8), *w = aligned_alloc(64, N*4);   /* MLX-like offsets */
  for (int64_t i = 0; i < R*N; i++) { x[i] = (i % 1000) * 0.001f; o[i] = 0; } for (int j = 0; j < N; j++) w[j] = 1;
  float *big = malloc((64<<20)*4); for (int64_t i = 0; i < (64<<20); i++) big[i] = 1; volatile float sink = 0;
  const char *nm[5] = {"rows x1", "rows x4", "rows x16", "rows x64", "copy_nt"}; double t[5][41];
  for (int k = 0; k < 41; k++) for (int v = 0; v < 5; v++) {
    if (gap) for (int64_t i = 0; i < (64<<20); i += 16) sink += big[i];
    double s = now();
    switch (v) { case 0: rms_b1(x, w, o, R, N); break; case 1: rms_b4(x, w, o, R, N); break;
      case 2: rms_b16(x, w, o, R, N); break; case 3: rms_b64(x, w, o, R, N); break; default: copy_nt(x, (float*)ob, R*N); }
    t[v][k] = now() - s; }
  for (int v = 0; v < 5; v++) { qsort(t[v], 41, 8, cmp); printf("%s%s: %.3f ms (%.1f GB/s of 32 MB)\n", nm[v], gap ? " after a sweep" : "", t[v][20]*1e3, 2*R*N*4/t[v][20]/1e9); }
}
