/* Softmax's three passes over one 1024-float row held in L1, one thread, 200000 times each:
   cycles per 16-float vector at an assumed 3.7 GHz (max, exp with our AVX-512 exp inlined, scale).
   `gcc -O3 -march=native exp_pass.c -lm && ./a.out`; -DSHIFTER and -DDEGREE5 change the exp (README).
   The max pass's figure is not meaningful: GCC hoists it out of the repeat loop. */
#include <stdio.h>
#include <stdint.h>
#include <math.h>
#include <time.h>
#include <immintrin.h>
static inline __m512 ex16(__m512 x) {
  const __m512 c = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
#ifdef SHIFTER  /* n rounded by adding and subtracting 1.5 2^23 instead of vrndscaleps */
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(c, _mm512_set1_ps(0x1.715476p+0f), _mm512_set1_ps(0x1.8p23f)), _mm512_set1_ps(0x1.8p23f));
#else
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(0x1.715476p+0f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#endif
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e43p-1f), c);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-0x1.05c61p-29f), r);
#ifdef DEGREE5  /* the degree-6 polynomial's top term dropped: the cost of one FMA, not an accurate exp */
  __m512 p = _mm512_set1_ps(0x1.123b8ep-7f);
#else
  __m512 p = _mm512_set1_ps(0x1.687c22p-10f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.123b8ep-7f));
#endif
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555b58p-5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.55548ep-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffff8p-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}
#define N 1024
float x[N] __attribute__((aligned(64))), e[N] __attribute__((aligned(64))), o[N] __attribute__((aligned(64)));
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
volatile float sink;
int main(){
  for(int i=0;i<N;i++) x[i]=sinf(i)*3;
  int reps=200000;
  for (int pass=0; pass<3; pass++) {
  double t=now();
  for(int r=0;r<reps;r++){ __m512 m0=_mm512_set1_ps(-INFINITY),m1=m0,m2=m0,m3=m0;
    for(int j=0;j<N;j+=64){m0=_mm512_max_ps(m0,_mm512_loadu_ps(x+j));m1=_mm512_max_ps(m1,_mm512_loadu_ps(x+j+16));m2=_mm512_max_ps(m2,_mm512_loadu_ps(x+j+32));m3=_mm512_max_ps(m3,_mm512_loadu_ps(x+j+48));}
    sink=_mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0,m1),_mm512_max_ps(m2,m3)));}
  double tm=now()-t; t=now();
  for(int r=0;r<reps;r++){ __m512 mv=_mm512_set1_ps(sink), s0=_mm512_setzero_ps(), s1=s0;
    for(int j=0;j<N;j+=32){__m512 e0=ex16(_mm512_sub_ps(_mm512_loadu_ps(x+j),mv)),e1=ex16(_mm512_sub_ps(_mm512_loadu_ps(x+j+16),mv));
      _mm512_store_ps(e+j,e0);_mm512_store_ps(e+j+16,e1);s0=_mm512_add_ps(s0,e0);s1=_mm512_add_ps(s1,e1);}
    sink=_mm512_reduce_add_ps(_mm512_add_ps(s0,s1));}
  double te=now()-t; t=now();
  for(int r=0;r<reps;r++){ __m512 q=_mm512_set1_ps(1.0f/sink);
    for(int j=0;j<N;j+=16)_mm512_store_ps(o+j,_mm512_mul_ps(_mm512_load_ps(e+j),q)); sink=o[r&1023];}
  double ts=now()-t;
  double v=reps*(N/16.0)/3.7;  /* ns -> cycles at 3.7 GHz */
  printf("cycles/vector @3.7GHz: max %.2f exp %.2f scale %.2f\n", tm*1e9/v, te*1e9/v, ts*1e9/v);
  }
}
