/* As gelu_arith.c: the exp's rounding by a magic number (magic_round), its 2^n by an integer exponent add
   (int_exp), both. Run: gcc -O3 -march=native -o gelu_exp_forms gelu_exp_forms.c && ./gelu_exp_forms */
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

static inline __m512 exp_b(__m512 x) {  /* magic-number rounding, scalef kept */
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 sh = _mm512_set1_ps(0x1.8p23f);
  __m512 n = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), sh); n = n - sh;
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-0x1.05c61p-29f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e43p-1f), x));
  __m512 p = _mm512_set1_ps(0x1.687c22p-10f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.123b8ep-7f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555b58p-5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.55548ep-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffff8p-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}
static inline __m512 exp_c(__m512 x) {  /* roundscale kept, integer exponent */
  __m512 n;
  const __m512 r = ap_reduce_v16(_mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x)), &n);
  __m512 p = _mm512_set1_ps(0x1.687c22p-10f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.123b8ep-7f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555b58p-5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.55548ep-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffff8p-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  __m512i e = _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23);
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), e));
}
static inline __m512 exp_d(__m512 x) {  /* both */
  x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
  const __m512 sh = _mm512_set1_ps(0x1.8p23f);
  __m512 nb = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), sh); __m512 n = nb - sh;
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-0x1.05c61p-29f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e43p-1f), x));
  __m512 p = _mm512_set1_ps(0x1.687c22p-10f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.123b8ep-7f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555b58p-5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.55548ep-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffff8p-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  __m512i e = _mm512_slli_epi32(_mm512_castps_si512(nb), 23);
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), e));
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
__attribute__((noinline)) void fb(void){
  const float r3 = 0x1.6e4e26p-5f, r6 = 0x1.988454p-1f, r8=-2.0f, r10=1.0f;
  for (int j=0;j<N;j+=16){ __m512 v0=_mm512_load_ps(in+j); __m512 v1=v0*v0, v2=v1*v0, v4=r3*v2, v5=v0+v4, v7=r6*v5, v9=r8*v7;
   __m512 v11=exp_b(v9); __m512 v12=r10+v11; _mm512_store_ps(out+j, v0/v12);} }
__attribute__((noinline)) void fc(void){
  const float r3 = 0x1.6e4e26p-5f, r6 = 0x1.988454p-1f, r8=-2.0f, r10=1.0f;
  for (int j=0;j<N;j+=16){ __m512 v0=_mm512_load_ps(in+j); __m512 v1=v0*v0, v2=v1*v0, v4=r3*v2, v5=v0+v4, v7=r6*v5, v9=r8*v7;
   __m512 v11=exp_c(v9); __m512 v12=r10+v11; _mm512_store_ps(out+j, v0/v12);} }
__attribute__((noinline)) void fd(void){
  const float r3 = 0x1.6e4e26p-5f, r6 = 0x1.988454p-1f, r8=-2.0f, r10=1.0f;
  for (int j=0;j<N;j+=16){ __m512 v0=_mm512_load_ps(in+j); __m512 v1=v0*v0, v2=v1*v0, v4=r3*v2, v5=v0+v4, v7=r6*v5, v9=r8*v7;
   __m512 v11=exp_d(v9); __m512 v12=r10+v11; _mm512_store_ps(out+j, v0/v12);} }
typedef void (*fn)(void);
int main(){ for(int i=0;i<N;i++) in[i]=(i%200-100)*0.05f;
 fn f[]={full,fb,fc,fd,noexp}; const char*nm[]={"full","magic_round","int_exp","both","noexp"};
 for(int rep=0;rep<3;rep++) for(int k=0;k<5;k++){ double best=1e9; for(int t=0;t<20;t++){double t0=now(); for(int i=0;i<2000;i++) f[k](); double dt=now()-t0; if(dt<best)best=dt;}
   printf("%s %.3f ns/vector\n", nm[k], best/2000/(N/16)*1e9);} }
