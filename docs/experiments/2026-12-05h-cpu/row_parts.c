/* Softmax's row pieces by hand, on one 1024-float row in L1, one thread: our exp alone
   (vmath_avx512.h's ap_expf_v16), the exp pass (x - max, exp, stored to a row buffer, summed in two
   partials), the max pass (two partials), the scale pass (through a 64-float buffer, as the
   rendered kernel's streamed chunks), and the whole row. Cycles from a calibration of eight
   independent FMA chains (two FMAs a cycle assumed). Best of 5 x 200000 calls.
   gcc -O3 -march=native -ffp-contract=fast -I ../../../autoperfect/backends -o /tmp/row_parts row_parts.c -lm */
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <math.h>
#include <time.h>
#include "vmath_avx512.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define N 1024
static float in[N] __attribute__((aligned(64))), out[N] __attribute__((aligned(64))), buf[N] __attribute__((aligned(64)));
__attribute__((noinline)) void fmachains(long it, float *o){
  __m512 a0=_mm512_set1_ps(1),a1=a0,a2=a0,a3=a0,a4=a0,a5=a0,a6=a0,a7=a0,m=_mm512_set1_ps(0.999f),c=_mm512_set1_ps(0.001f);
  for(long i=0;i<it;i++){a0=_mm512_fmadd_ps(a0,m,c);a1=_mm512_fmadd_ps(a1,m,c);a2=_mm512_fmadd_ps(a2,m,c);a3=_mm512_fmadd_ps(a3,m,c);
   a4=_mm512_fmadd_ps(a4,m,c);a5=_mm512_fmadd_ps(a5,m,c);a6=_mm512_fmadd_ps(a6,m,c);a7=_mm512_fmadd_ps(a7,m,c);}
  __m512 s=a0+a1+a2+a3+a4+a5+a6+a7; _mm512_storeu_ps(o,s);}
__attribute__((noinline)) void expall(const float *x, float *y){
  for(int j=0;j<N;j+=16) _mm512_store_ps(y+j, ap_expf_v16(_mm512_load_ps(x+j)));}
/* the rendered softmax row: max (2 acc), exp+store+sum (2 acc), scale via t1 + stream-like store (plain here) */
__attribute__((noinline)) void row_cur(const float *x, float *y){
  __m512 m0=_mm512_set1_ps(-INFINITY),m1=m0;
  for(int j=0;j<N;j+=32){m0=_mm512_max_ps(m0,_mm512_loadu_ps(x+j));m1=_mm512_max_ps(m1,_mm512_loadu_ps(x+j+16));}
  float mx=_mm512_reduce_max_ps(_mm512_max_ps(m0,m1)); __m512 r=_mm512_set1_ps(mx);
  __m512 s0=_mm512_setzero_ps(),s1=s0;
  for(int j=0;j<N;j+=32){__m512 e0=ap_expf_v16(_mm512_loadu_ps(x+j)-r),e1=ap_expf_v16(_mm512_loadu_ps(x+j+16)-r);
    _mm512_storeu_ps(buf+j,e0);_mm512_storeu_ps(buf+j+16,e1);s0+=e0;s1+=e1;}
  float q=1.0f/_mm512_reduce_add_ps(s0+s1); __m512 qv=_mm512_set1_ps(q);
  for(int j=0;j<N;j+=64){float t[64] __attribute__((aligned(64)));
    for(int k=0;k<64;k+=16)_mm512_store_ps(t+k,_mm512_loadu_ps(buf+j+k)*qv);
    for(int k=0;k<64;k+=16)_mm512_store_ps(y+j+k,_mm512_load_ps(t+k));}
}
__attribute__((noinline)) void row_max_only(const float *x, float *y){
  __m512 m0=_mm512_set1_ps(-INFINITY),m1=m0;
  for(int j=0;j<N;j+=32){m0=_mm512_max_ps(m0,_mm512_loadu_ps(x+j));m1=_mm512_max_ps(m1,_mm512_loadu_ps(x+j+16));}
  y[0]=_mm512_reduce_max_ps(_mm512_max_ps(m0,m1));}
__attribute__((noinline)) void row_exp_only(const float *x, float *y){
  __m512 r=_mm512_set1_ps(1.0f), s0=_mm512_setzero_ps(),s1=s0;
  for(int j=0;j<N;j+=32){__m512 e0=ap_expf_v16(_mm512_loadu_ps(x+j)-r),e1=ap_expf_v16(_mm512_loadu_ps(x+j+16)-r);
    _mm512_storeu_ps(buf+j,e0);_mm512_storeu_ps(buf+j+16,e1);s0+=e0;s1+=e1;}
  y[0]=_mm512_reduce_add_ps(s0+s1);}
__attribute__((noinline)) void row_scale_only(const float *x, float *y){
  __m512 qv=_mm512_set1_ps(0.5f);
  for(int j=0;j<N;j+=64){float t[64] __attribute__((aligned(64)));
    for(int k=0;k<64;k+=16)_mm512_store_ps(t+k,_mm512_loadu_ps(buf+j+k)*qv);
    for(int k=0;k<64;k+=16)_mm512_store_ps(y+j+k,_mm512_load_ps(t+k));}}
typedef void (*fn)(const float*,float*);
static double timeit(fn f,long reps){double best=1e9;for(int k=0;k<5;k++){double t=now();for(long i=0;i<reps;i++){f(in,out);__asm__ volatile(""::"r"(out):"memory");}t=now()-t;if(t<best)best=t;}return best/reps;}
int main(){for(int i=0;i<N;i++)in[i]=sinf(i*0.37f)*3;
  float o[16]; long it=20000000; fmachains(1000000,o); double t=now(); fmachains(it,o); t=now()-t;
  double ghz = it*8/2.0/t/1e9; printf("freq (2 FMA/cycle assumed): %.2f GHz  (%g)\n", ghz, o[0]);
  long reps=200000;
  struct {const char*n;fn f;} fs[]={{"exp only(v16 in L1)",(fn)expall},{"row exp+sum+store",row_exp_only},{"row max",row_max_only},{"row scale",row_scale_only},{"row current",row_cur}};
  for(int i=0;i<5;i++){double s=timeit(fs[i].f,reps); printf("%-22s %.1f ns/row  %.2f cycles/vector\n",fs[i].n,s*1e9,s*1e9*ghz/(N/16));}
}
