#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include "../../../autoperfect/backends/vmath_avx512.h"
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define N (4096*1024)
static inline __m512 gelu(__m512 v1){ __m512 v2=_mm512_mul_ps(_mm512_set1_ps(0.5f),v1);
 __m512 v4=_mm512_mul_ps(_mm512_mul_ps(v1,v1),v1); __m512 v7=_mm512_fmadd_ps(_mm512_set1_ps(0x1.6e4e26p-5f),v4,v1);
 __m512 v9=_mm512_mul_ps(_mm512_set1_ps(0x1.988454p-1f),v7); __m512 t=ap_tanhf_v16(v9);
 return _mm512_mul_ps(v2,_mm512_add_ps(_mm512_set1_ps(1.0f),t)); }
static inline __m512 gelu_sig(__m512 v1){
 __m512 v4=_mm512_mul_ps(_mm512_mul_ps(v1,v1),v1); __m512 v7=_mm512_fmadd_ps(_mm512_set1_ps(0x1.6e4e26p-5f),v4,v1);
 __m512 v9=_mm512_mul_ps(_mm512_set1_ps(-2*0x1.988454p-1f),v7); __m512 e=ap_expf_v16(v9);
 return _mm512_div_ps(v1,_mm512_add_ps(_mm512_set1_ps(1.0f),e)); }
typedef void (*K)(const float*,float*);
#define CH 16384
static void k_plain(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long j=c*CH;j<(c+1)*CH;j+=16) _mm512_storeu_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}
static void k_nt(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long j=c*CH;j<(c+1)*CH;j+=16) _mm512_stream_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}
static int PD=1024;
static void k_ntpf(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long j=c*CH;j<(c+1)*CH;j+=16){ _mm_prefetch((const char*)(in+j+PD),_MM_HINT_T0); _mm512_stream_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}}
static void k_sig(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long j=c*CH;j<(c+1)*CH;j+=16) _mm512_stream_ps(out+j,gelu_sig(_mm512_loadu_ps(in+j)));}
static void k_copy(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long j=c*CH;j<(c+1)*CH;j+=16) _mm512_stream_ps(out+j,_mm512_loadu_ps(in+j));}
static void k_incache(const float*in,float*out){ /* same compute, on 64K elems repeated 64 times: no memory */
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++){ long b=(c%8)*CH; for(long j=b;j<b+CH;j+=16) _mm512_storeu_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}}
static void k_sigcache(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++){ long b=(c%8)*CH; for(long j=b;j<b+CH;j+=16) _mm512_storeu_ps(out+j,gelu_sig(_mm512_loadu_ps(in+j)));}}
int main(){
 if(getenv("PD"))PD=atoi(getenv("PD"));
 int S=24; float*in[24],*out[24];
 for(int s=0;s<S;s++){in[s]=aligned_alloc(64,N*4);out[s]=aligned_alloc(64,N*4);for(long i=0;i<N;i++){in[s][i]=((float)rand()/RAND_MAX*8-4);out[s][i]=0;}}
 K ks[]={k_plain,k_nt,k_ntpf,k_sig,k_copy,k_incache,k_sigcache}; const char*nm[]={"plain","nt","nt+pf","sigmoid-nt","copy-nt","incache","sig-incache"}; int nk=7;
 double t[7][200]; int turn=0;
 for(int r=0;r<60;r++) for(int k=0;k<nk;k++){ int s=turn++%S; double t0=now(); ks[k](in[s],out[s]); t[k][r]=now()-t0;}
 for(int k=0;k<nk;k++){ /* median */ double*a=t[k]; for(int i=0;i<60;i++)for(int j=i+1;j<60;j++)if(a[j]<a[i]){double x=a[i];a[i]=a[j];a[j]=x;}
  printf("%-12s %.3f ms  %.1f GB/s\n",nm[k],a[30]*1e3,2.0*N*4/a[30]/1e9);}
}
