#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "../../../autoperfect/backends/vmath_avx512.h"
__m512 _ZGVeN16v_ap_tanhf(__m512 x);
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static inline __m512 tanh_rcp(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f), a = _mm512_andnot_ps(sign, x);
  __m512 n;
  const __m512 r = ap_reduce_v16(_mm512_min_ps(_mm512_set1_ps(20.0f), _mm512_add_ps(a, a)), &n);
  __m512 q = _mm512_set1_ps(0x1.6b488ap-10f);
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.1228bep-7f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.555748p-5f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.5554aep-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.fffffep-2f));
  const __m512 m = _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r);
  const __m512 s = _mm512_scalef_ps(_mm512_set1_ps(1.0f), n);
  const __m512 e = _mm512_fmadd_ps(m, s, _mm512_sub_ps(s, _mm512_set1_ps(1.0f)));
  const __m512 d = _mm512_add_ps(e, _mm512_set1_ps(2.0f));
  __m512 y = _mm512_rcp14_ps(d);
  y = _mm512_fmadd_ps(_mm512_fnmadd_ps(d, y, _mm512_set1_ps(1.0f)), y, y);
  __m512 q0 = _mm512_mul_ps(e, y);
  __m512 rr = _mm512_fnmadd_ps(q0, d, e);
  q0 = _mm512_fmadd_ps(rr, y, q0);
  return _mm512_or_ps(q0, _mm512_and_ps(x, sign));
}
#define GELU(T) { __m512 v1=_mm512_loadu_ps(in+j); __m512 v2=_mm512_mul_ps(_mm512_set1_ps(0.5f),v1); \
 __m512 v4=_mm512_mul_ps(_mm512_mul_ps(v1,v1),v1); __m512 v7=_mm512_fmadd_ps(_mm512_set1_ps(0x1.6e4e26p-5f),v4,v1); \
 __m512 v9=_mm512_mul_ps(_mm512_set1_ps(0x1.988454p-1f),v7); __m512 t=T(v9); \
 _mm512_storeu_ps(out+j,_mm512_mul_ps(v2,_mm512_add_ps(_mm512_set1_ps(1.0f),t))); }
int main(int argc,char**argv){
  int N=65536; float*in=aligned_alloc(64,N*4),*out=aligned_alloc(64,N*4);
  for(int i=0;i<N;i++) in[i]=(float)rand()/RAND_MAX*8-4;
  for(int rep=0;rep<3;rep++){
   double b[3]={1e9,1e9,1e9};
   for(int it=0;it<200;it++){
    double t0=now(); for(int j=0;j<N;j+=16) GELU(ap_tanhf_v16) double t1=now();
    for(int j=0;j<N;j+=16) GELU(tanh_rcp) double t2=now();
    for(int j=0;j<N;j+=16) GELU(_ZGVeN16v_ap_tanhf) double t3=now();
    if(t1-t0<b[0])b[0]=t1-t0; if(t2-t1<b[1])b[1]=t2-t1; if(t3-t2<b[2])b[2]=t3-t2;
   }
   printf("ns/elem: div-inline %.3f rcp-inline %.3f abi-call %.3f ; x4M elems ms: %.3f %.3f %.3f\n",b[0]/N*1e9,b[1]/N*1e9,b[2]/N*1e9,b[0]/N*4194304e3,b[1]/N*4194304e3,b[2]/N*4194304e3);
  }
  // bit compare
  int diff=0; for(int j=0;j<N;j+=16){__m512 x=_mm512_loadu_ps(in+j);__m512 a=ap_tanhf_v16(x),c=tanh_rcp(x);
   diff+=__builtin_popcount(_mm512_cmp_ps_mask(a,c,_CMP_NEQ_UQ));} printf("tanh diffs %d/%d\n",diff,N);
}
