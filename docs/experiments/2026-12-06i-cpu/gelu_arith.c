/* GELU's arithmetic (the sigmoid form's vector body, our exp inlined) on one core from L1, 64 vectors a call,
   best of 20 x 2000 calls: as rendered (full), without the division (nodiv), the division by rcp14 and a
   Newton step (rcp), without the exp (noexp), a copy. Run: gcc -O3 -march=native -o gelu_arith gelu_arith.c && ./gelu_arith */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
#include <stdint.h>
static inline __m512 ap_reduce_v16(__m512 x, __m512 *n) {
  *n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(0x1.715476p+0f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
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
  return _mm512_scalef_ps(p, n);
}
#define N 1024
float in[N] __attribute__((aligned(64))), out[N] __attribute__((aligned(64)));
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#pragma GCC optimize ("fp-contract=fast")
__attribute__((noinline)) void full(void){
  const float r3 = 0x1.6e4e26p-5f, r6 = 0x1.988454p-1f, r8=-2.0f, r10=1.0f;
  for (int j=0;j<N;j+=16){ __m512 v0=_mm512_load_ps(in+j); __m512 v1=v0*v0, v2=v1*v0, v4=r3*v2, v5=v0+v4, v7=r6*v5, v9=r8*v7;
   __m512 v11=ap_expf_v16(v9); __m512 v12=r10+v11; _mm512_store_ps(out+j, v0/v12);} }
__attribute__((noinline)) void nodiv(void){
  const float r3 = 0x1.6e4e26p-5f, r6 = 0x1.988454p-1f, r8=-2.0f, r10=1.0f;
  for (int j=0;j<N;j+=16){ __m512 v0=_mm512_load_ps(in+j); __m512 v1=v0*v0, v2=v1*v0, v4=r3*v2, v5=v0+v4, v7=r6*v5, v9=r8*v7;
   __m512 v11=ap_expf_v16(v9); __m512 v12=r10+v11; _mm512_store_ps(out+j, v0*v12);} }
__attribute__((noinline)) void rcp(void){
  const float r3 = 0x1.6e4e26p-5f, r6 = 0x1.988454p-1f, r8=-2.0f, r10=1.0f;
  for (int j=0;j<N;j+=16){ __m512 v0=_mm512_load_ps(in+j); __m512 v1=v0*v0, v2=v1*v0, v4=r3*v2, v5=v0+v4, v7=r6*v5, v9=r8*v7;
   __m512 v11=ap_expf_v16(v9); __m512 d=r10+v11; __m512 r=_mm512_rcp14_ps(d); r = r*(2.0f - d*r); _mm512_store_ps(out+j, v0*r);} }
__attribute__((noinline)) void noexp(void){
  const float r3 = 0x1.6e4e26p-5f, r6 = 0x1.988454p-1f, r8=-2.0f, r10=1.0f;
  for (int j=0;j<N;j+=16){ __m512 v0=_mm512_load_ps(in+j); __m512 v1=v0*v0, v2=v1*v0, v4=r3*v2, v5=v0+v4, v7=r6*v5, v9=r8*v7;
   __m512 v12=r10+v9; _mm512_store_ps(out+j, v0/v12);} }
__attribute__((noinline)) void copy(void){
  for (int j=0;j<N;j+=16){ __m512 v0=_mm512_load_ps(in+j); _mm512_store_ps(out+j, v0);} }
typedef void (*fn)(void);
int main(){ for(int i=0;i<N;i++) in[i]=(i%200-100)*0.05f;
 fn f[]={full,nodiv,rcp,noexp,copy}; const char*nm[]={"full","nodiv","rcp","noexp","copy"};
 for(int rep=0;rep<3;rep++) for(int k=0;k<5;k++){ double best=1e9; for(int t=0;t<20;t++){double t0=now(); for(int i=0;i<2000;i++) f[k](); double dt=now()-t0; if(dt<best)best=dt;}
   printf("%s %.3f ns/vector\n", nm[k], best/2000/(N/16)*1e9);} }
