/* RMSNorm 4096x1024, one row at a time, prefetching D rows ahead: D = 0 (none), 1, 2, 4, 8; the
   prefetches spread over the statistics pass (one line per 16 floats), as the renderer's. Against a
   streaming copy of the same bytes. Back to back (./pf 0) or after a 256 MB sweep (./pf 1). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <math.h>
#include <time.h>
#include <immintrin.h>
#include <omp.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static void rms(const float *restrict x, const float *restrict w, float *restrict o, int64_t R, int64_t N, int D) {
  #pragma omp parallel
  {
  #pragma omp for schedule(static)
  for (int64_t r = 0; r < R; r++) {
    const float *xr = x + r * N; float *orow = o + r * N;
    float p[32] = {0}; int64_t jm = 0;
    for (; jm + 32 <= N; jm += 32) {
      if (D) { __builtin_prefetch(xr + D * N + jm); __builtin_prefetch(xr + D * N + jm + 16); }
      #pragma omp simd simdlen(16)
      for (int l = 0; l < 32; l++) p[l] += xr[jm + l] * xr[jm + l];
    }
    float a = 0; for (int l = 0; l < 32; l++) a += p[l];
    for (; jm < N; jm++) a += xr[jm] * xr[jm];
    const float s = 1.0f / sqrtf(a / N + 1e-6f);
    int64_t jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2; if (jc > N) jc = N;
    for (int64_t j = 0; j < jc; j++) orow[j] = xr[j] * s * w[j];
    for (; jc + 64 <= N; jc += 64) { float t[64] __attribute__((aligned(64)));
      #pragma omp simd simdlen(16)
      for (int j = 0; j < 64; j++) t[j] = xr[jc + j] * s * w[jc + j];
      for (int q = 0; q < 64; q += 16) _mm512_stream_ps(orow + jc + q, _mm512_load_ps(t + q)); }
    for (int64_t j = jc; j < N; j++) orow[j] = xr[j] * s * w[j];
  }
  _mm_sfence();
  }
}
/* Software-pipelined rows: one loop writes row r (its scale known) while it sums row r+1's squares,
   so reads from memory and streaming stores run together, as in a copy. Each thread's first row is
   summed alone. */
static void rms_pipe(const float *restrict x, const float *restrict w, float *restrict o, int64_t R, int64_t N) {
  #pragma omp parallel
  {
  int nt = omp_get_num_threads(), id = omp_get_thread_num();
  int64_t lo = R * id / nt, hi = R * (id + 1) / nt;
  float s = 0;
  if (lo < hi) { float p[32] = {0}; const float *xr = x + lo * N;
    for (int64_t jm = 0; jm + 32 <= N; jm += 32) {
      #pragma omp simd simdlen(16)
      for (int l = 0; l < 32; l++) p[l] += xr[jm + l] * xr[jm + l]; }
    float a = 0; for (int l = 0; l < 32; l++) a += p[l]; s = 1.0f / sqrtf(a / N + 1e-6f); }
  for (int64_t r = lo; r < hi; r++) {
    const float *xr = x + r * N, *xn = x + (r + 1 < hi ? r + 1 : r) * N; float *orow = o + r * N;
    float p[32] = {0};
    int64_t jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2;   /* N multiple of 64 assumed here */
    for (int64_t j = 0; j < jc; j++) orow[j] = xr[j] * s * w[j];
    for (; jc + 64 <= N; jc += 64) { float t[64] __attribute__((aligned(64)));
      #pragma omp simd simdlen(16)
      for (int j = 0; j < 64; j++) t[j] = xr[jc + j] * s * w[jc + j];
      for (int q = 0; q < 64; q += 16) _mm512_stream_ps(orow + jc + q, _mm512_load_ps(t + q));
      for (int h = 0; h < 2; h++) {
        #pragma omp simd simdlen(16)
        for (int l = 0; l < 32; l++) p[l] += xn[jc - 64 + 32 * h + l + 64] * xn[jc - 64 + 32 * h + l + 64]; } }
    for (int64_t j = jc; j < N; j++) orow[j] = xr[j] * s * w[j];
    float a = 0; for (int l = 0; l < 32; l++) a += p[l];
    s = 1.0f / sqrtf(a / N + 1e-6f);
  }
  _mm_sfence();
  }
}
static void copy_nt(const float *restrict a, float *restrict b, int64_t n) {
  #pragma omp parallel
  { 
  #pragma omp for schedule(static)
  for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(b + i, _mm512_loadu_ps(a + i));
  _mm_sfence(); }
}
int main(int argc, char **argv) {
  int64_t R = 4096, N = 1024; int gap = argc > 1 ? atoi(argv[1]) : 0;
  char *xb = aligned_alloc(64, R*N*4 + 64), *ob = aligned_alloc(64, R*N*4 + 64);
  float *x = (float*)(xb + 16), *o = (float*)(ob + 8), *w = aligned_alloc(64, N*4);
  for (int64_t i = 0; i < R*N; i++) { x[i] = (i % 1000) * 0.001f; o[i] = 0; } for (int j = 0; j < N; j++) w[j] = 1;
  float *big = malloc((64<<20)*4); for (int64_t i = 0; i < (64<<20); i++) big[i] = 1; volatile float sink = 0;
  const int Ds[5] = {0, 1, 2, 4, 8}; double t[7][41];
  for (int k = 0; k < 41; k++) for (int v = 0; v < 7; v++) {
    if (gap) for (int64_t i = 0; i < (64<<20); i += 16) sink += big[i];
    double s = now();
    if (v < 5) rms(x, w, o, R, N, Ds[v]); else if (v == 6) rms_pipe(x, w, o, R, N); else copy_nt(x, (float*)ob, R*N);
    t[v][k] = now() - s; }
  for (int v = 0; v < 7; v++) { qsort(t[v], 41, 8, cmp);
    if (v < 5) printf("prefetch %d rows ahead", Ds[v]); else if (v == 6) printf("pipelined rows     "); else printf("streaming copy     ");
    printf("%s: %.3f ms\n", gap ? " after a sweep" : "", t[v][20]*1e3); }
}
