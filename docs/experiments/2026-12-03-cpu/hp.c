/* A fresh 64 MB output (malloc'd past glibc's mmap threshold, freed after each call: glibc's default
   for large blocks) written by 2 OpenMP threads with streaming stores, with and without
   madvise(MADV_HUGEPAGE) on its 2 MB-aligned interior first. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <sys/mman.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static void hint(void *p, size_t n) {
  uintptr_t lo = ((uintptr_t)p + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1), hi = ((uintptr_t)p + n) & ~(uintptr_t)((2u << 20) - 1);
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}
static void fill(const float *restrict a, float *restrict o, int64_t n) {
  #pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) o[i] = a[i] * 2.0f;
}
int main() {
  int64_t n = 16 << 20; float *a = malloc(n * 4); for (int64_t i = 0; i < n; i++) a[i] = i;
  double t[2][21];
  for (int k = 0; k < 21; k++) for (int v = 0; v < 2; v++) {
    double s = now(); float *o = malloc(n * 4); if (v) hint(o, n * 4); fill(a, o, n); volatile float x = o[n - 1]; free(o); t[v][k] = now() - s; (void)x; }
  for (int v = 0; v < 2; v++) { qsort(t[v], 21, 8, cmp); printf("%s: %.2f ms (malloc, fill 64 MB, free)\n", v ? "madvise(MADV_HUGEPAGE)" : "plain pages", t[v][10] * 1e3); }
}
