/* exp(x) for float32, branch-free so a SIMD loop inlines it: x = k ln2 + r with |r| <= ln2/2
   (Cody-Waite: ln2 in two parts), exp(r) by a degree-7 Taylor polynomial, 2^k applied in two
   halves so results in the denormal range round once. NaN stays NaN; beyond the range, inf or 0. */
static inline float ap_expf(float x) {
  const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float kf = (xc * 1.44269502163f + 12582912.0f) - 12582912.0f;
  float r = xc - kf * 0.693145751953125f;
  r = r - kf * 1.428606765330187e-06f;
  float p = 1.98412698e-4f;
  p = p * r + 1.38888889e-3f;
  p = p * r + 8.33333333e-3f;
  p = p * r + 4.16666667e-2f;
  p = p * r + 1.66666667e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int k = (int)kf, k1 = k >> 1, k2 = k - k1;
  union { unsigned u; float f; } s1, s2;
  s1.u = (unsigned)(k1 + 127) << 23;
  s2.u = (unsigned)(k2 + 127) << 23;
  const float y = p * s1.f * s2.f;
  return x != x ? x : y;
}
