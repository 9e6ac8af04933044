/* ap_expf's and ap_tanhf's AVX-512 forms (backends/vmath.c says how they work), as inline functions
   of a vector, and the sigmoid over ap_expf: vmath.c's entry points (_ZGVeN16v_ap_expf,
   _ZGVeN16v_ap_tanhf) return the first two, and a
   kernel whose schedule writes its split loops in vectors (Schedule.vectors) gets this text pasted
   in and calls them, so GCC inlines the function into the loop instead of calling the entry point
   from it (a call lets no value stay in a vector register across it). Include <immintrin.h> first.
   The constants are vmath.c's AP_ ones, spelled out so that the text stands alone in a kernel;
   tests/test_vmath.py checks every form's bits against the scalar's. */
static inline __m512 ap_reduce_v16(__m512 x, __m512 *n) { /* vmath.c's ap_reduce */
  *n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(0x1.715476p+0f)),
                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_fnmadd_ps(*n, _mm512_set1_ps(-0x1.05c61p-29f), _mm512_fnmadd_ps(*n, _mm512_set1_ps(0x1.62e43p-1f), x));
}
static inline __m512 ap_expf_v16(__m512 x) {
  __m512 n;
  const __m512 r = ap_reduce_v16(_mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x)), &n);
  __m512 p = _mm512_set1_ps(0x1.687c22p-10f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.123b8ep-7f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555b58p-5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.55548ep-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffff8p-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n); /* p 2^n rounded once: the two products' bits, in one step */
}
static inline __m512 ap_tanhf_v16(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f), a = _mm512_andnot_ps(sign, x);
  __m512 n;
  const __m512 r = ap_reduce_v16(_mm512_min_ps(_mm512_set1_ps(20.0f), _mm512_add_ps(a, a)), &n);
  __m512 q = _mm512_set1_ps(0x1.6b488ap-10f);
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.1228bep-7f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.555748p-5f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.5554aep-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.fffffep-2f));
  const __m512 m = _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r);
  const __m512 s = _mm512_scalef_ps(_mm512_set1_ps(1.0f), n); /* 2^n: n in [0, 29], or NaN */
  const __m512 e = _mm512_fmadd_ps(m, s, _mm512_sub_ps(s, _mm512_set1_ps(1.0f)));
  return _mm512_or_ps(_mm512_div_ps(e, _mm512_add_ps(e, _mm512_set1_ps(2.0f))), _mm512_and_ps(x, sign));
}
static inline __m512 ap_sigmoidf_v16(__m512 x) { /* cfamily.UNARY's sigmoid over ap_expf, lane by lane */
  const __m512 e = ap_expf_v16(_mm512_or_ps(x, _mm512_set1_ps(-0.0f)));
  const __m512 t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(0.0f), _CMP_GE_OQ), e, _mm512_set1_ps(1.0f));
  return _mm512_div_ps(t, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}
