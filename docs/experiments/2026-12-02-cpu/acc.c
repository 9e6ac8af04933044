#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "apexp.h"
#pragma omp declare simd notinbranch
float expf(float);
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double ulp_of(double v) { /* float32 ulp at v */
  if (v == 0) return ldexp(1.0, -149);
  int e; frexp(v, &e); double u = ldexp(1.0, e - 24); return u < ldexp(1.0, -149) ? ldexp(1.0, -149) : u; }
void run_ap(const float*restrict x, float*restrict y, int n){
  #pragma omp simd simdlen(16)
  for (int i = 0; i < n; i++) y[i] = ap_expf(x[i]); }
void run_mvec(const float*restrict x, float*restrict y, int n){
  #pragma omp simd simdlen(16)
  for (int i = 0; i < n; i++) y[i] = expf(x[i]); }
int main(){
  int n = 1 << 16; float *x = malloc(n*4), *y = malloc(n*4), *z = malloc(n*4);
  /* half the points spaced in value, half in bits, over [-104, 89] plus specials */
  for (int i = 0; i < n/2; i++) x[i] = -104.0f + (193.0f * i) / (n/2);
  for (int i = n/2; i < n; i++) { float lo = (i & 1) ? -104.0f : 89.0f; uint32_t b; memcpy(&b, &lo, 4);
    uint32_t bb = (uint32_t)(((uint64_t)(i - n/2) * (b & 0x7fffffff)) / (n/2)) | (b & 0x80000000); memcpy(&x[i], &bb, 4); }
  x[0] = NAN; x[1] = INFINITY; x[2] = -INFINITY; x[3] = 0.0f; x[4] = -0.0f; x[5] = 88.72283f; x[6] = 88.7228394f; x[7] = -87.33655f; x[8]=-103.9f; x[9]=-103.97208f;
  run_ap(x, y, n); run_mvec(x, z, n);
  double worst = 0, worstm = 0; float at = 0;
  for (int i = 0; i < n; i++) { double ref = exp((double)x[i]);
    if (isnan(x[i])) { if (!isnan(y[i])) printf("nan bad\n"); continue; }
    if (ref > 3.4028234663852886e38) { if (!isinf(y[i])) printf("overflow bad at %g: %g\n", x[i], y[i]); continue; }
    double e = fabs(y[i] - ref) / ulp_of(ref), em = fabs(z[i] - ref) / ulp_of(ref);
    if (e > worst) { worst = e; at = x[i]; } if (em > worstm) worstm = em; }
  printf("ap worst %.3f ulp at %.9g; libmvec worst %.3f ulp\n", worst, at, worstm);
  for (int i = 0; i < n; i++) x[i] = -10.0f * (float)i / n;
  double t[2] = {1e9, 1e9};
  for (int r = 0; r < 30; r++) { double s = now(); run_ap(x, y, n); double a = now() - s; s = now(); run_mvec(x, z, n); double b = now() - s;
    if (a < t[0]) t[0] = a; if (b < t[1]) t[1] = b; }
  printf("one thread: ap %.2f G/s, libmvec %.2f G/s\n", n / t[0] / 1e9, n / t[1] / 1e9);
}
