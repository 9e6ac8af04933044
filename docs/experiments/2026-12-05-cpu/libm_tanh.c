/* glibc's tanhf, scalar and libmvec's AVX-512 form, over every float32 (`./libm_tanh STRIDE`): the
   worst error of each in ulps against tanh in double, and how many results of the vector form differ
   in their bits from the scalar's (NaN equal to NaN), the figures vmath.c compares ap_tanhf with.
     gcc -O2 -march=native -fno-math-errno libm_tanh.c -o libm_tanh -lmvec -lm && ./libm_tanh 1 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__m512 _ZGVeN16v_tanhf(__m512);
static float (*volatile scalar)(float) = tanhf;

static double ulps(float f, double ref) {
  const float rf = (float)ref;
  const double ulp = fabsf(rf) < 0x1p-126f ? 0x1p-149 : ldexp(1.0, ilogb(rf) - 23);
  return fabs(f - ref) / ulp;
}

int main(int argc, char **argv) {
  const uint64_t stride = argc > 1 ? strtoull(argv[1], 0, 10) : 1;
  double ws = 0, wv = 0; float as = 0, av = 0; uint64_t differ = 0, seen = 0;
  float x[16], v[16];
  int n = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += stride) {
    uint32_t w = (uint32_t)u;
    memcpy(x + n, &w, 4);
    if (++n < 16) continue;
    n = 0;
    _mm512_storeu_ps(v, _ZGVeN16v_tanhf(_mm512_loadu_ps(x)));
    for (int l = 0; l < 16; l++) {
      if (x[l] != x[l]) continue;
      const float s = scalar(x[l]);
      const double ref = tanh((double)x[l]);
      seen++;
      differ += memcmp(&s, v + l, 4) != 0;
      double e = ulps(s, ref); if (e > ws) { ws = e; as = x[l]; }
      e = ulps(v[l], ref); if (e > wv) { wv = e; av = x[l]; }
    }
  }
  printf("%llu inputs: scalar tanhf worst %.3f ulp at %a; libmvec's worst %.3f ulp at %a; %llu differ in bits\n",
         (unsigned long long)seen, ws, as, wv, av, (unsigned long long)differ);
}
