/* ap_expf (autoperfect/backends/vmath.c) against libmvec's expf in the loop a kernel renders
   (`omp simd simdlen(16)`, the vector entry point called per 16 floats): 8192 floats in [-20, 0]
   (softmax's range), one thread, best of 300, three times.
     gcc -O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math \
         exp_rate.c ../../../autoperfect/backends/vmath.c -o exp_rate -lmvec -lm && ./exp_rate
   2026-12-04, AMD EPYC: own 0.222-0.225 ns, libmvec 0.323-0.345 ns a float. */
#include <math.h>
#include <stdio.h>
#include <time.h>
#pragma omp declare simd notinbranch
float ap_expf(float);
#pragma omp declare simd notinbranch
float expf(float);
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
__attribute__((noinline)) void own(const float *restrict x, float *restrict y, int n){
  #pragma omp simd simdlen(16)
  for (int i=0;i<n;i++) y[i]=ap_expf(x[i]);}
__attribute__((noinline)) void mvec(const float *restrict x, float *restrict y, int n){
  #pragma omp simd simdlen(16)
  for (int i=0;i<n;i++) y[i]=expf(x[i]);}
int main(){enum{n=8192};static float x[n],y[n];for(int i=0;i<n;i++)x[i]=-20.0f*i/n;
 for(int rep=0;rep<3;rep++){double b0=1,b1=1;for(int k=0;k<300;k++){double t=now();own(x,y,n);t=now()-t;if(t<b0)b0=t;t=now();mvec(x,y,n);t=now()-t;if(t<b1)b1=t;}
 printf("own %.3f ns, libmvec %.3f ns a float\n",b0/n*1e9,b1/n*1e9);}}
