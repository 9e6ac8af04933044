/* The forms of one of our functions (backends/vmath.c: `./forms STRIDE START exp` or `tanh`) on float32
   inputs: every STRIDE-th bit pattern, offset by START, and the edges of their ranges. Prints how
   many results of each vector entry point (SSE, AVX, AVX2, AVX-512 where built, and a `omp simd`
   loop that calls them as a kernel does) differ in their bits from the scalar function's (NaN
   counts as equal to NaN), and the scalar's worst error in ulps against the function in double.
   Built and run by tests/test_vmath.py. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMS_OF(F)                                                                      \
  float ap_##F##f(float);                                                                \
  __m128 _ZGVbN4v_ap_##F##f(__m128);                                                     \
  __m256 _ZGVcN8v_ap_##F##f(__m256);                                                     \
  __m256 _ZGVdN8v_ap_##F##f(__m256);                                                     \
  AVX512_FORM(F)                                                                         \
  _Pragma("omp declare simd notinbranch") float ap_##F##f(float);                       \
  static void loop_##F(const float *restrict x, float *restrict y, int n) {              \
    _Pragma("omp simd simdlen(16)") for (int i = 0; i < n; i++) y[i] = ap_##F##f(x[i]);  \
  }
#if defined(__AVX512F__)
#define AVX512_FORM(F) __m512 _ZGVeN16v_ap_##F##f(__m512);
#define AVX512_CALL(F, x) _ZGVeN16v_ap_##F##f(x)
#else
#define AVX512_FORM(F)
#endif
FORMS_OF(exp)
FORMS_OF(tanh)

typedef struct {
  const char *name;
  float (*scalar)(float);
  __m128 (*b)(__m128);
  __m256 (*c)(__m256), (*d)(__m256);
#if defined(__AVX512F__)
  __m512 (*e)(__m512);
#endif
  void (*loop)(const float *restrict, float *restrict, int);
  double (*ref)(double);
} Function;

#if defined(__AVX512F__)
#define FUNCTION(F) {#F, ap_##F##f, _ZGVbN4v_ap_##F##f, _ZGVcN8v_ap_##F##f, _ZGVdN8v_ap_##F##f, \
                     _ZGVeN16v_ap_##F##f, loop_##F, F}
#else
#define FUNCTION(F) {#F, ap_##F##f, _ZGVbN4v_ap_##F##f, _ZGVcN8v_ap_##F##f, _ZGVdN8v_ap_##F##f, loop_##F, F}
#endif
static const Function FUNCTIONS[] = {FUNCTION(exp), FUNCTION(tanh)};
static const Function *fn;
static float (*volatile scalar)(float);  /* called through a pointer: never vectorized */

enum { B = 1 << 12, FORMS = 5 };
static float xs[B], s[B], v[FORMS][B];
static uint64_t differ[FORMS], seen;
static double worst;
static float worst_at;

static void batch(void) {
  for (int i = 0; i < B; i++) s[i] = scalar(xs[i]);
  for (int i = 0; i < B; i += 4) _mm_storeu_ps(v[0] + i, fn->b(_mm_loadu_ps(xs + i)));
  for (int i = 0; i < B; i += 8) _mm256_storeu_ps(v[1] + i, fn->c(_mm256_loadu_ps(xs + i)));
  for (int i = 0; i < B; i += 8) _mm256_storeu_ps(v[2] + i, fn->d(_mm256_loadu_ps(xs + i)));
#if defined(__AVX512F__)
  for (int i = 0; i < B; i += 16) _mm512_storeu_ps(v[3] + i, fn->e(_mm512_loadu_ps(xs + i)));
#else
  memcpy(v[3], s, sizeof s);
#endif
  fn->loop(xs, v[4], B);
  for (int f = 0; f < FORMS; f++)
    for (int i = 0; i < B; i++) {
      uint32_t a, b;
      memcpy(&a, s + i, 4);
      memcpy(&b, v[f] + i, 4);
      differ[f] += s[i] != s[i] ? v[f][i] == v[f][i] : a != b;
    }
  for (int i = 0; i < B; i++) {
    seen++;
    if (xs[i] != xs[i]) { worst = s[i] == s[i] ? INFINITY : worst; continue; }
    const double ref = fn->ref((double)xs[i]);
    const float rf = (float)ref;
    if (isinf(rf)) { worst = s[i] == rf ? worst : INFINITY; continue; }
    const double ulp = fabsf(rf) < 0x1p-126f ? 0x1p-149 : ldexp(1.0, ilogb(rf) - 23);
    const double e = fabs(s[i] - ref) / ulp;
    if (e > worst) { worst = e; worst_at = xs[i]; }
  }
}

int main(int argc, char **argv) {
  const uint64_t stride = argc > 1 ? strtoull(argv[1], 0, 10) : 1, start = argc > 2 ? strtoull(argv[2], 0, 10) : 0;
  fn = FUNCTIONS;
  for (size_t f = 0; argc > 3 && f < sizeof FUNCTIONS / sizeof *FUNCTIONS; f++)
    if (!strcmp(argv[3], FUNCTIONS[f].name)) fn = FUNCTIONS + f;
  scalar = fn->scalar;
  const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN, -104.0f, 89.0f,
                         -103.97f, 88.72283f, 88.72284f, -87.33654f, -87.33655f, -103.27893f, -103.97208f,
                         0x1p-149f, -0x1p-149f, 0x1p-126f, 3.4028235e38f, -3.4028235e38f, 0.34657359f,
                         -0.34657359f, 0.5f, -0.5f, 1e-8f, -1e-8f, 1e4f, -1e4f, 9.01f, -9.01f, 10.0f,
                         -10.0f, 0.0625f, -0.0625f, 12.0f, 8.66f};
  int n = 0;
  for (uint64_t u = start; u < (1ull << 32); u += stride) {
    uint32_t w = (uint32_t)u;
    memcpy(xs + n, &w, 4);
    if (++n == B) { batch(); n = 0; }
  }
  for (size_t e = 0; e < sizeof edges / sizeof *edges; e++) {
    xs[n] = edges[e];
    if (++n == B) { batch(); n = 0; }
  }
  while (n < B) xs[n++] = 1.0f;  /* pad the last batch */
  batch();
  printf("%s inputs %llu differ %llu %llu %llu %llu %llu worst_ulp %.4f at %a\n", fn->name, (unsigned long long)seen,
         (unsigned long long)differ[0], (unsigned long long)differ[1], (unsigned long long)differ[2],
         (unsigned long long)differ[3], (unsigned long long)differ[4], worst, worst_at);
  return 0;
}
