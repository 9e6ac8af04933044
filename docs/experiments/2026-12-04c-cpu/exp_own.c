/* An exp of our own against libmvec's (glibc's vector expf, what the `libmvec` schedules call).
   Since 2026-12-04 (evening) the steps are autoperfect/backends/vmath.c's, included here, where
   this sketch first wrote them out with the same constants (rerun so, at 16cd16e: libmvec 0.300,
   intrin 0.165-0.169, clone 0.386-0.387, inlined 0.319-0.320 ns a float):
   - `intrin`: AVX-512 intrinsics, clamp to [-104, 89] (NaN kept), n = round(x log2 e), r = x - n ln2
     in two FMAs (Cody-Waite), a degree-6 polynomial (least squares on Chebyshev nodes, c0 = c1 = 1),
     2^n by vscalefps, which also rounds denormal results once;
   - `clone`: the same steps in scalar C under `omp declare simd`, GCC's vector clone of it, 2^n as
     two exponent-field multiplications (what a renderer of scalar SIMD loops could emit: the
     intrinsic version needs its own vector-ABI symbol beside a scalar one of the same name, which
     only an asm label gives in one file, and the static checks refuse asm);
   - `inlined`: that scalar function inlined into the `omp simd` loop (no clone, no call).
   Times on 8192 floats in [-20, 0] (softmax's range), one thread, best of 300, three times; the
   worst error in ulps over every float32 (x with a finite float result against exp in double).
     gcc -O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math \
         exp_own.c -o exp_own -lmvec -lm && ./exp_own [ulps] */
#include "../../../autoperfect/backends/vmath.c"  /* ap_expf and its vector forms: the steps below */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#pragma omp declare simd notinbranch
float expf(float);

/* vmath.c's functions inlined into the loops below (`flatten`: every call in them, recursively) */
static inline __m512 exp16(__m512 x) { return _ZGVeN16v_ap_expf(x); }
static inline float exp_inlined(float x) { return ap_expf(x); }

#pragma omp declare simd notinbranch simdlen(16)
__attribute__((flatten)) float exp_clone(float x) { return exp_inlined(x); }

void libmvec(const float *restrict x, float *restrict y, int n) {
  #pragma omp simd simdlen(16)
  for (int i = 0; i < n; i++) y[i] = expf(x[i]);
}
__attribute__((flatten)) void intrin(const float *restrict x, float *restrict y, int n) {  /* n: a multiple of 16 */
  for (int i = 0; i < n; i += 16) _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i)));
}
void clone(const float *restrict x, float *restrict y, int n) {
  #pragma omp simd simdlen(16)
  for (int i = 0; i < n; i++) y[i] = exp_clone(x[i]);
}
__attribute__((flatten)) void inlined(const float *restrict x, float *restrict y, int n) {
  #pragma omp simd simdlen(16)
  for (int i = 0; i < n; i++) y[i] = exp_inlined(x[i]);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
typedef void (*fn)(const float *restrict, float *restrict, int);

static double worst_ulps(fn f) {
  enum { B = 1 << 16 };
  static float xs[B], ys[B];
  double worst = 0;
  for (uint64_t base = 0; base < (1ull << 32); base += B) {
    for (int i = 0; i < B; i++) { uint32_t u = (uint32_t)(base + i); memcpy(xs + i, &u, 4); }
    f(xs, ys, B);
    for (int i = 0; i < B; i++) {
      const double ref = exp((double)xs[i]);
      const float rf = (float)ref;
      if (xs[i] != xs[i]) { if (ys[i] == ys[i]) return INFINITY; continue; }
      if (isinf(rf)) { if (!isinf(ys[i])) return INFINITY; continue; }
      const double ulp = fabsf(rf) < 0x1p-126f ? 0x1p-149 : ldexp(1.0, ilogb(rf) - 23);
      const double e = fabs(ys[i] - ref) / ulp;
      if (e > worst) worst = e;
    }
  }
  return worst;
}

int main(int argc, char **argv) {
  (void)argv;
  enum { n = 8192 };
  static float x[n], y[n];
  for (int i = 0; i < n; i++) x[i] = -20.0f * (float)i / n;
  enum { F = 4 };
  fn fs[F] = {libmvec, intrin, clone, inlined};
  const char *names[F] = {"libmvec", "intrin", "clone", "inlined"};
  for (int rep = 0; rep < 3; rep++) {
    double best[F] = {1, 1, 1, 1};
    for (int k = 0; k < 300; k++)
      for (int j = 0; j < F; j++) {
        const double t0 = now();
        fs[j](x, y, n);
        const double t = now() - t0;
        if (t < best[j]) best[j] = t;
      }
    for (int j = 0; j < F; j++) printf("%s %.3f ns a float%s", names[j], best[j] / n * 1e9, j < F - 1 ? ", " : "\n");
  }
  if (argc < 2) return 0;  /* ./exp_own ulps: the errors too (about four minutes) */
  for (int j = 0; j < F; j++) printf("%s: worst %.3f ulp\n", names[j], worst_ulps(fs[j]));
  return 0;
}
