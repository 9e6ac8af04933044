/* Auto-Perfect's own vector math, linked into the generated CPU kernels that call it (cpu.build).

   A kernel only declares these functions (`#pragma omp declare simd notinbranch`); GCC's vectorizer
   then calls the entry points of the x86-64 vector function ABI, _ZGV<isa>N<lanes>v_<name>, from a
   loop's SIMD body and the scalar function from its remainder. glibc's libmvec offers the same for
   libm's functions, but its vector expf and the scalar one differ in the last bit now and then, so
   an element's bits depend on whether it fell in a loop's body or its tail, that is on the row's
   length and the buffer's address. Here every form runs the same operations on each lane in the
   same order, each rounded once as IEEE says: the same bits from every form.

   ap_expf(x), e^x:
   - x clamped to [-104, 89] (NaN passes): below, e^x rounds to 0; above, to infinity;
   - n = rint(x log2 e); r = x - n ln 2 in two fused multiply-adds (ln 2 split in a high part with
     trailing zeros and the rest: Cody and Waite), |r| <= 0.35;
   - e^r by a degree-6 polynomial in Horner's form (c0 = c1 = 1; the others a least-squares fit on
     Chebyshev nodes), each step one fused multiply-add;
   - times 2^n as two exact powers of two, 2^h then 2^(n-h) with h = n >> 1: the first product is
     exact (a normal number), so the only rounding is the second, as with one correctly rounded
     scaling, subnormal results included.
   Worst error over every float32: 0.90 ulp (libmvec's expf: 2.64; the judge's bound for exp is 4).
   Measured by tests/test_vmath.py, which also checks every form's bits against the scalar one.

   ap_tanhf(x), tanh x, odd by construction: with y = 2|x| clamped to 20 (tanh rounds to 1 from
   |x| = 9.01 on; NaN passes), E = e^y - 1 and tanh|x| = E / (E + 2), the sign of x put back:
   - y reduced as ap_expf reduces x: n = rint(y log2 e), r = y - n ln 2 (the same two steps);
   - e^r - 1 = r + r^2 q(r), q of degree 4 (a least-squares fit of the relative error on Chebyshev
     nodes: docs/experiments/2026-12-05-cpu/fit_expm1.py); then E = 2^n (e^r - 1) + (2^n - 1) in one
     fused multiply-add: 2^n - 1 is exact for n <= 24 and both products are exact, so E is rounded
     once and never loses digits to cancellation near 0 (where e^y - 1 formed plainly would);
   - one division, rounded once.
   Worst error over every float32: 2.57 ulp, near |x| = 0.06 (libmvec's AVX-512 tanhf 1.37, glibc's
   scalar tanhf 2.19, and those two differ in their bits on 3.4% of all inputs; the judge's bound is
   4). No select, no table: GELU 4096x1024 read from memory took 0.97-1.00 ms against 1.14 with
   libmvec's tanhf (docs/experiments/2026-12-05-cpu). An earlier tanh here (a polynomial below 0.625
   and 1 - 2/(1 + e^2|x|) above, both computed and one selected) was slower than libmvec's: commit
   97a26fe.

   Needs AVX2 and FMA (cpu.vmath_object says whether this machine's compiler built it); the AVX-512
   forms where the compiler targets AVX-512. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "Auto-Perfect's vector math needs AVX2 and FMA (-march=native on a machine with both)"
#endif

#define AP_LO -104.0f
#define AP_HI 89.0f
#define AP_LOG2E 0x1.715476p+0f
#define AP_LN2_HI 0x1.62e43p-1f
#define AP_LN2_LO -0x1.05c61p-29f
#define AP_C6 0x1.687c22p-10f
#define AP_C5 0x1.123b8ep-7f
#define AP_C4 0x1.555b58p-5f
#define AP_C3 0x1.55548ep-3f
#define AP_C2 0x1.fffff8p-2f
#define AP_TANH_TOP 20.0f
#define AP_T2 0x1.fffffep-2f
#define AP_T3 0x1.5554aep-3f
#define AP_T4 0x1.555748p-5f
#define AP_T5 0x1.1228bep-7f
#define AP_T6 0x1.6b488ap-10f

static inline float ap_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* x = n ln 2 + r: returns r, n in *n (Cody and Waite: ln 2 in two parts, two fused multiply-adds) */
static inline float ap_reduce(float x, float *n) {
  *n = rintf(x * AP_LOG2E);
  return fmaf(-*n, AP_LN2_LO, fmaf(-*n, AP_LN2_HI, x));
}

/* n as an integer for the exponent's bits (0 where n is NaN: the result is NaN anyway) */
static inline int32_t ap_integer(float n) { return n == n ? (int32_t)n : 0; }

/* 2^k from its exponent's bits, k a normal number's exponent */
static inline float ap_pow2(int32_t k) { return ap_bits((uint32_t)(k + 127) << 23); }

float ap_expf(float x) {
  float n;
  const float r = ap_reduce(x < AP_LO ? AP_LO : (x > AP_HI ? AP_HI : x), &n);
  float p = AP_C6;
  p = fmaf(p, r, AP_C5);
  p = fmaf(p, r, AP_C4);
  p = fmaf(p, r, AP_C3);
  p = fmaf(p, r, AP_C2);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const int32_t k = ap_integer(n), h = k >> 1;
  return p * ap_pow2(h) * ap_pow2(k - h);
}

float ap_tanhf(float x) {
  const float a = fabsf(x), d = a + a;
  float n;
  const float r = ap_reduce(AP_TANH_TOP < d ? AP_TANH_TOP : d, &n);
  float q = AP_T6;
  q = fmaf(q, r, AP_T5);
  q = fmaf(q, r, AP_T4);
  q = fmaf(q, r, AP_T3);
  q = fmaf(q, r, AP_T2);
  const float m = fmaf(r * r, q, r);
  const float s = ap_pow2(ap_integer(n));
  const float e = fmaf(m, s, s - 1.0f);
  return copysignf(e / (e + 2.0f), x);
}

/* The SSE, AVX and AVX2 entry points (4 and 8 lanes) as macro bodies of the scalar steps: V is the
   vector type, P the intrinsics' prefix, I the integer vector type, W its width in bits. */
#define AP_REDUCE(V, P, x)                                                               \
  const V n = P##_round_ps(P##_mul_ps(x, P##_set1_ps(AP_LOG2E)),                         \
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);               \
  V r = P##_fnmadd_ps(n, P##_set1_ps(AP_LN2_HI), x);                                     \
  r = P##_fnmadd_ps(n, P##_set1_ps(AP_LN2_LO), r);
#define AP_INTEGER(P, I, W) \
  const I k = P##_and_si##W(P##_cvtps_epi32(n), P##_castps_si##W(P##_cmp_ps(n, n, _CMP_ORD_Q)));
#define AP_POW2(P, W, k) P##_castsi##W##_ps(P##_slli_epi32(P##_add_epi32(k, P##_set1_epi32(127)), 23))
/* max(LO, x) and min(HI, c) return their second operand where it is NaN, as the scalar comparisons do */
#define AP_EXP_BODY(V, P, I, W)                                                          \
  const V c = P##_min_ps(P##_set1_ps(AP_HI), P##_max_ps(P##_set1_ps(AP_LO), x));        \
  AP_REDUCE(V, P, c)                                                                     \
  V p = P##_set1_ps(AP_C6);                                                              \
  p = P##_fmadd_ps(p, r, P##_set1_ps(AP_C5));                                            \
  p = P##_fmadd_ps(p, r, P##_set1_ps(AP_C4));                                            \
  p = P##_fmadd_ps(p, r, P##_set1_ps(AP_C3));                                            \
  p = P##_fmadd_ps(p, r, P##_set1_ps(AP_C2));                                            \
  p = P##_fmadd_ps(p, r, P##_set1_ps(1.0f));                                             \
  p = P##_fmadd_ps(p, r, P##_set1_ps(1.0f));                                             \
  AP_INTEGER(P, I, W)                                                                    \
  const I h = P##_srai_epi32(k, 1);                                                      \
  return P##_mul_ps(P##_mul_ps(p, AP_POW2(P, W, h)), AP_POW2(P, W, P##_sub_epi32(k, h)));

/* 2^n from n's bits, as the scalar form builds it */
#define AP_TANH_BODY(V, P, I, W)                                                         \
  const V sign = P##_set1_ps(-0.0f), a = P##_andnot_ps(sign, x);                         \
  const V y = P##_min_ps(P##_set1_ps(AP_TANH_TOP), P##_add_ps(a, a));                    \
  AP_REDUCE(V, P, y)                                                                     \
  V q = P##_set1_ps(AP_T6);                                                              \
  q = P##_fmadd_ps(q, r, P##_set1_ps(AP_T5));                                            \
  q = P##_fmadd_ps(q, r, P##_set1_ps(AP_T4));                                            \
  q = P##_fmadd_ps(q, r, P##_set1_ps(AP_T3));                                            \
  q = P##_fmadd_ps(q, r, P##_set1_ps(AP_T2));                                            \
  const V m = P##_fmadd_ps(P##_mul_ps(r, r), q, r);                                      \
  AP_INTEGER(P, I, W)                                                                    \
  const V s = AP_POW2(P, W, k);                                                          \
  const V e = P##_fmadd_ps(m, s, P##_sub_ps(s, P##_set1_ps(1.0f)));                      \
  return P##_or_ps(P##_div_ps(e, P##_add_ps(e, P##_set1_ps(2.0f))), P##_and_ps(x, sign));

__m128 _ZGVbN4v_ap_expf(__m128 x) { AP_EXP_BODY(__m128, _mm, __m128i, 128) }
__m256 _ZGVcN8v_ap_expf(__m256 x) { AP_EXP_BODY(__m256, _mm256, __m256i, 256) }
__m256 _ZGVdN8v_ap_expf(__m256 x) { AP_EXP_BODY(__m256, _mm256, __m256i, 256) }
__m128 _ZGVbN4v_ap_tanhf(__m128 x) { AP_TANH_BODY(__m128, _mm, __m128i, 128) }
__m256 _ZGVcN8v_ap_tanhf(__m256 x) { AP_TANH_BODY(__m256, _mm256, __m256i, 256) }
__m256 _ZGVdN8v_ap_tanhf(__m256 x) { AP_TANH_BODY(__m256, _mm256, __m256i, 256) }

#if defined(__AVX512F__)
#include "vmath_avx512.h"
__m512 _ZGVeN16v_ap_expf(__m512 x) { return ap_expf_v16(x); }
__m512 _ZGVeN16v_ap_tanhf(__m512 x) { return ap_tanhf_v16(x); }
#endif
