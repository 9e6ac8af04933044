// Every 0.25 s: FMA work on one thread and the same work on each of two (the ratio of their times:
// about 1 where the two vCPUs run on whole cores of their own, 2 where they share one) and the best
// of three 2-thread streaming copies of 128 MB (GB/s). Build: gcc -O2 -march=native -fopenmp -o cores
// cores.c; run: OMP_PLACES=cores OMP_PROC_BIND=close ./cores SAMPLES (prints "ratio GB/s" per line).
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
static float work(long n) {
  __m512 a[8]; for (int i = 0; i < 8; i++) a[i] = _mm512_set1_ps(i * 1e-3f);
  const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-3f);
  for (long k = 0; k < n; k++) for (int i = 0; i < 8; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
  __m512 s = a[0]; for (int i = 1; i < 8; i++) s = _mm512_add_ps(s, a[i]);
  return _mm512_reduce_add_ps(s);
}
int main(int argc, char **argv) {
  long n = 1000000, N = 1L << 25; volatile float sink = 0;
  int reps = argc > 1 ? atoi(argv[1]) : 40;
  float *x = aligned_alloc(64, N * 4), *y = aligned_alloc(64, N * 4);
  #pragma omp parallel for
  for (long i = 0; i < N; i++) { x[i] = i; y[i] = 0; }
  for (int r = 0; r < reps; r++) {
    double t0 = now(); sink += work(n); double t1 = now() - t0;
    t0 = now();
    #pragma omp parallel num_threads(2)
    { float v = work(n); _Pragma("omp atomic") sink += v; }
    double t2 = now() - t0;
    double best = 1e9;
    for (int k = 0; k < 3; k++) {
      t0 = now();
      #pragma omp parallel for num_threads(2) schedule(static)
      for (long i = 0; i < N; i += 16) _mm512_stream_ps(y + i, _mm512_load_ps(x + i));
      _mm_sfence();
      double t = now() - t0; if (t < best) best = t;
    }
    printf("%.2f %.1f\n", t2 / t1, 2.0 * N * 4 / best / 1e9);
    fflush(stdout);
    struct timespec ts = {0, 250000000}; nanosleep(&ts, 0);
  }
}
