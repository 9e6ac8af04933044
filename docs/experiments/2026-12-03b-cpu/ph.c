/* RMSNorm 4096x1024 phases over 9 rotating input/output sets (bursts of 9): stats pass only, store
   pass only (scale by a constant, NT stores), both (rms), pipelined variants; copy_nt and read of the
   same bytes. 4 KB pages (malloc, no madvise) unless argv[1] == 1 (MADV_HUGEPAGE). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <sys/mman.h>
#include <immintrin.h>
#include <omp.h>
#define R 4096
#define N 1024
#define SETS 9
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
float sums[R];
static inline float rowsum_pf(const float *xr, const float *xn) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int j = 0; j < N; j += 64) {
    __builtin_prefetch(xn + j); __builtin_prefetch(xn + j + 16); __builtin_prefetch(xn + j + 32); __builtin_prefetch(xn + j + 48);
    __m512 v0 = _mm512_loadu_ps(xr + j), v1 = _mm512_loadu_ps(xr + j + 16), v2 = _mm512_loadu_ps(xr + j + 32), v3 = _mm512_loadu_ps(xr + j + 48);
    a0 = _mm512_fmadd_ps(v0, v0, a0); a1 = _mm512_fmadd_ps(v1, v1, a1); a2 = _mm512_fmadd_ps(v2, v2, a2); a3 = _mm512_fmadd_ps(v3, v3, a3);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}
static inline float rowsum(const float *xr) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int j = 0; j < N; j += 64) {
    __m512 v0 = _mm512_loadu_ps(xr + j), v1 = _mm512_loadu_ps(xr + j + 16), v2 = _mm512_loadu_ps(xr + j + 32), v3 = _mm512_loadu_ps(xr + j + 48);
    a0 = _mm512_fmadd_ps(v0, v0, a0); a1 = _mm512_fmadd_ps(v1, v1, a1); a2 = _mm512_fmadd_ps(v2, v2, a2); a3 = _mm512_fmadd_ps(v3, v3, a3);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}
/* the output row o (8 bytes past a line: head of 14 floats plain, lines streamed, tail plain) */
static inline void rowstore(const float *xr, const float *w, float *orow, float s) {
  int64_t jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2;
  __m512 vs = _mm512_set1_ps(s);
  for (int64_t j = 0; j < jc; j++) orow[j] = xr[j] * s * w[j];
  for (; jc + 16 <= N; jc += 16) _mm512_stream_ps(orow + jc, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xr + jc), vs), _mm512_loadu_ps(w + jc)));
  for (int64_t j = jc; j < N; j++) orow[j] = xr[j] * s * w[j];
}
static void stats(const float *x, const float *w, float *o) {
  #pragma omp parallel for schedule(static)
  for (int r = 0; r < R; r++) sums[r] = rowsum(x + (int64_t)r * N);
}
static void stores(const float *x, const float *w, float *o) {
  #pragma omp parallel
  { 
  #pragma omp for schedule(static)
  for (int r = 0; r < R; r++) rowstore(x + (int64_t)r * N, w, o + (int64_t)r * N, 0.5f);
  _mm_sfence(); }
}
static void rms(const float *x, const float *w, float *o) {
  #pragma omp parallel
  {
  #pragma omp for schedule(static)
  for (int r = 0; r < R; r++) { const float *xr = x + (int64_t)r * N; float s = 1.0f / sqrtf(rowsum(xr) / N + 1e-6f); rowstore(xr, w, o + (int64_t)r * N, s); }
  _mm_sfence(); }
}
/* stats of rows in blocks of B (rows r..r+B-1), then their stores: a block of 16 rows is 64 KB */
static void rms_block(const float *x, const float *w, float *o, int B) {
  #pragma omp parallel
  {
  int nt = omp_get_num_threads(), id = omp_get_thread_num(); int lo = R * id / nt, hi = R * (id + 1) / nt;
  float s[64];
  for (int r0 = lo; r0 < hi; r0 += B) { int e = r0 + B < hi ? r0 + B : hi;
    for (int r = r0; r < e; r++) s[r - r0] = 1.0f / sqrtf(rowsum(x + (int64_t)r * N) / N + 1e-6f);
    for (int r = r0; r < e; r++) rowstore(x + (int64_t)r * N, w, o + (int64_t)r * N, s[r - r0]); }
  _mm_sfence(); }
}
/* stores of row r interleaved with the sums of row r+D, D rows ahead: reads and writes in one loop */
static void rms_pipe(const float *x, const float *w, float *o, int D) {
  #pragma omp parallel
  {
  int nt = omp_get_num_threads(), id = omp_get_thread_num(); int lo = R * id / nt, hi = R * (id + 1) / nt;
  float s[128]; /* ring of scales */
  for (int r = lo; r < lo + D && r < hi; r++) s[r % 128] = 1.0f / sqrtf(rowsum(x + (int64_t)r * N) / N + 1e-6f);
  for (int r = lo; r < hi; r++) {
    const float *xr = x + (int64_t)r * N; float *orow = o + (int64_t)r * N;
    int ahead = r + D < hi; const float *xn = x + (int64_t)(ahead ? r + D : r) * N;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    int64_t jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2; float sc = s[r % 128]; __m512 vs = _mm512_set1_ps(sc);
    for (int64_t j = 0; j < jc; j++) orow[j] = xr[j] * sc * w[j];
    int64_t j2 = 0;
    for (; jc + 16 <= N; jc += 16, j2 += 16) {
      _mm512_stream_ps(orow + jc, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xr + jc), vs), _mm512_loadu_ps(w + jc)));
      __m512 v = _mm512_loadu_ps(xn + j2); if (j2 & 16) a1 = _mm512_fmadd_ps(v, v, a1); else a0 = _mm512_fmadd_ps(v, v, a0);
    }
    for (int64_t j = jc; j < N; j++) orow[j] = xr[j] * sc * w[j];
    for (; j2 < N; j2 += 16) { __m512 v = _mm512_loadu_ps(xn + j2); a0 = _mm512_fmadd_ps(v, v, a0); }
    if (ahead) s[(r + D) % 128] = 1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) / N + 1e-6f);
  }
  _mm_sfence(); }
}
static inline void rowstore_pf(const float *xr, const float *w, float *orow, float s, const float *xn);
/* store pass prefetches row r+D1, sum pass prefetches row r+D2 */
static void rms_both(const float *x, const float *w, float *o, int D1, int D2) {
  #pragma omp parallel
  {
  #pragma omp for schedule(static)
  for (int r = 0; r < R; r++) { const float *xr = x + (int64_t)r * N;
    float s = 1.0f / sqrtf(rowsum_pf(xr, x + (int64_t)(r + D2 < R ? r + D2 : r) * N) / N + 1e-6f);
    rowstore_pf(xr, w, o + (int64_t)r * N, s, x + (int64_t)(r + D1 < R ? r + D1 : r) * N); }
  _mm_sfence(); }
}
static void copy_nt(const float *a, const float *w, float *b) {
  #pragma omp parallel
  {
  #pragma omp for schedule(static)
  for (int64_t i = 0; i < (int64_t)R * N - 16; i += 16) _mm512_stream_ps((float*)(((uintptr_t)(b + i + 16)) & ~63), _mm512_loadu_ps(a + i));
  _mm_sfence(); }
}
static void readk(const float *a, const float *w, float *b) { stats(a, w, b); }
/* the stores of row r issue prefetches of row r+D's lines (one per 16 floats) */
static inline void rowstore_pf(const float *xr, const float *w, float *orow, float s, const float *xn) {
  int64_t jc = ((64 - ((uintptr_t)orow & 63)) & 63) >> 2;
  __m512 vs = _mm512_set1_ps(s);
  for (int64_t j = 0; j < jc; j++) orow[j] = xr[j] * s * w[j];
  int64_t p = 0;
  for (; jc + 16 <= N; jc += 16, p += 16) { __builtin_prefetch(xn + p); _mm512_stream_ps(orow + jc, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xr + jc), vs), _mm512_loadu_ps(w + jc))); }
  for (int64_t j = jc; j < N; j++) orow[j] = xr[j] * s * w[j];
}
static void rms_spf(const float *x, const float *w, float *o, int D) {
  #pragma omp parallel
  {
  #pragma omp for schedule(static)
  for (int r = 0; r < R; r++) { const float *xr = x + (int64_t)r * N; float s = 1.0f / sqrtf(rowsum(xr) / N + 1e-6f);
    rowstore_pf(xr, w, o + (int64_t)r * N, s, x + (int64_t)(r + D < R ? r + D : r) * N); }
  _mm_sfence(); }
}
int main(int argc, char **argv) {
  int huge = argc > 1 && atoi(argv[1]);
  float *x[SETS], *o[SETS], *w = aligned_alloc(64, N * 4);
  for (int j = 0; j < N; j++) w[j] = 1;
  for (int k = 0; k < SETS; k++) {
    size_t bytes = (size_t)R * N * 4 + 4096;
    char *xb = malloc(bytes), *ob = malloc(bytes);
    if (huge) { madvise((void*)(((uintptr_t)xb + 4095) & ~4095), bytes - 4096, MADV_HUGEPAGE); madvise((void*)(((uintptr_t)ob + 4095) & ~4095), bytes - 4096, MADV_HUGEPAGE); }
    x[k] = (float*)(((uintptr_t)xb + 63) & ~63) + 4; o[k] = (float*)((((uintptr_t)ob + 63) & ~63) + 8);
    for (int64_t i = 0; i < (int64_t)R * N; i++) { x[k][i] = (i % 1000) * 0.001f; o[k][i] = 0; }
  }
  const char *names[] = {"stats only", "stores only", "rms", "rms block 4", "rms block 16", "rms pipe D=1", "rms pipe D=2", "copy_nt", "read (=stats)", "rms store-prefetch D=1", "rms store-prefetch D=2", "spf 1 + sum pf 2", "spf 2 + sum pf 2", "spf 1 + sum pf 1"};
  enum { V = 14, REP = 21 }; double t[V][REP];
  for (int rep = 0; rep < REP + 2; rep++) for (int v = 0; v < V; v++) {
    double s = now();
    for (int k = 0; k < SETS; k++) switch (v) {
      case 0: stats(x[k], w, o[k]); break; case 1: stores(x[k], w, o[k]); break; case 2: rms(x[k], w, o[k]); break;
      case 3: rms_block(x[k], w, o[k], 4); break; case 4: rms_block(x[k], w, o[k], 16); break;
      case 5: rms_pipe(x[k], w, o[k], 1); break; case 6: rms_pipe(x[k], w, o[k], 2); break; case 9: rms_spf(x[k], w, o[k], 1); break; case 10: rms_spf(x[k], w, o[k], 2); break; case 11: rms_both(x[k], w, o[k], 1, 2); break; case 12: rms_both(x[k], w, o[k], 2, 2); break; case 13: rms_both(x[k], w, o[k], 1, 1); break;
      case 7: copy_nt(x[k], w, o[k]); break; case 8: readk(x[k], w, o[k]); }
    if (rep >= 2) t[v][rep - 2] = (now() - s) / SETS; }
  volatile float sink = 0; for (int r = 0; r < R; r++) sink += sums[r];
  for (int v = 0; v < V; v++) { qsort(t[v], REP, 8, cmp); printf("%-14s %.3f ms\n", names[v], t[v][REP / 2] * 1e3); }
}
