// A vector exp of our own (Cody-Waite reduction, degree-6 polynomial, 2^n in two factors) against
// libmvec's expf in the same omp simd loop, and its ULP error over every 7th float (with an argument).
// gcc -O3 -march=native -fopenmp -ffp-contract=fast -fno-math-errno -fno-trapping-math -o exp exp.c -lmvec -lm
// ./exp (speed, three times) ; ./exp acc (accuracy)
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#pragma omp declare simd notinbranch
float expf(float);

// exp(x) = 2^n * e^r, n = round(x * log2e), r = x - n*ln2 (two-constant Cody-Waite), e^r by a
// degree-6 polynomial on |r| <= ln2/2; 2^n by adding n to the exponent bits in two halves so that
// n down to -150 and up to 128 scale right.
static inline float ap_expf(float x) {
  const float t = x * 0x1.715476p+0f + 0x1.8p23f;
  const float n = t - 0x1.8p23f;          // round(x / ln2), ties to even, for |x / ln2| < 2^22
  float r = x - n * 0x1.62e4p-1f;
  r = r - n * 0x1.7f7d1cp-20f;
  float p = 0x1.6850e4p-10f;
  p = p * r + 0x1.123bccp-7f;
  p = p * r + 0x1.555b98p-5f;
  p = p * r + 0x1.55548ep-3f;
  p = p * r + 0x1.fffff8p-2f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float nc = n < -252.0f ? -252.0f : (n > 254.0f ? 254.0f : n);
  const int32_t ni = (int32_t)nc;
  const int32_t h = ni >> 1;
  float s1, s2; int32_t b1 = (h + 127) << 23, b2 = (ni - h + 127) << 23;
  __builtin_memcpy(&s1, &b1, 4); __builtin_memcpy(&s2, &b2, 4);
  float y = p * s1 * s2;
  y = x > 0x1.62e43p+6f ? INFINITY : y;
  y = x < -0x1.9fe368p+6f ? 0.0f : y;
  return x != x ? x : y;
}
#define N (1<<12)
float in[N], out[N];
double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
__attribute__((noinline)) void run_lib(void){
  #pragma omp simd simdlen(16)
  for (int i=0;i<N;i++) out[i]=expf(in[i]);
}
__attribute__((noinline)) void run_own(void){
  #pragma omp simd simdlen(16)
  for (int i=0;i<N;i++) out[i]=ap_expf(in[i]);
}
int main(int argc,char**argv){
  if (argc>1) { // accuracy: every float in [lo, hi) stepping
    double maxulp=0; float worst=0; long bad=0;
    for (uint32_t u=0; u< 0xFFFFFFFFu; u+=7) { float x; memcpy(&x,&u,4); if (x!=x) continue;
      float y = ap_expf(x); double ref = exp((double)x);
      if (ref > 3.4028234663852886e38) { if (!(y==INFINITY)) bad++; continue; }
      double ulp; { float rf=(float)ref; if (rf==0) { ulp = fabs(y) / 1.4e-45; }
        else { int e; frexp(rf,&e); double ul = ldexp(1.0, e-24); if (ul < 1.4e-45) ul = 1.4012984643e-45; ulp = fabs((double)y-ref)/ul; } }
      if (ulp>maxulp){maxulp=ulp; worst=x;} }
    printf("max ulp %.3f at %a, bad %ld\n", maxulp, worst, bad); return 0; }
  for (int i=0;i<N;i++) in[i] = -10.0f * i / N;
  for (int k=0;k<3;k++){
  double t=now(); for(int r=0;r<20000;r++) run_lib(); double a=now()-t;
  t=now(); for(int r=0;r<20000;r++) run_own(); double b=now()-t;
  printf("libmvec %.3f ns/elem, own %.3f ns/elem\n", a/20000/N*1e9, b/20000/N*1e9); }
}
