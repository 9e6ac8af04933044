#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
#include "../../../autoperfect/backends/vmath_avx512.h"
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define N (4096*1024)
static inline __m512 gelu(__m512 v1){ __m512 v2=_mm512_mul_ps(_mm512_set1_ps(0.5f),v1);
 __m512 v4=_mm512_mul_ps(_mm512_mul_ps(v1,v1),v1); __m512 v7=_mm512_fmadd_ps(_mm512_set1_ps(0x1.6e4e26p-5f),v4,v1);
 __m512 v9=_mm512_mul_ps(_mm512_set1_ps(0x1.988454p-1f),v7); __m512 t=ap_tanhf_v16(v9);
 return _mm512_mul_ps(v2,_mm512_add_ps(_mm512_set1_ps(1.0f),t)); }
#define CH 16384
static int D=1024;
static void blk(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long jb=c*CH;jb<(c+1)*CH;jb+=256){
   for(int p=0;p<256;p+=16) _mm_prefetch((const char*)(in+jb+D+p),_MM_HINT_T0);
   for(long j=jb;j<jb+256;j+=16) _mm512_stream_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}}
static void vec(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long j=c*CH;j<(c+1)*CH;j+=16){ _mm_prefetch((const char*)(in+j+D),_MM_HINT_T0); _mm512_stream_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}}
static void vect2(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long j=c*CH;j<(c+1)*CH;j+=16){ _mm_prefetch((const char*)(in+j+D),_MM_HINT_T2); _mm512_stream_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}}
static void blk64(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long jb=c*CH;jb<(c+1)*CH;jb+=64){
   for(int p=0;p<64;p+=16) _mm_prefetch((const char*)(in+jb+D+p),_MM_HINT_T0);
   for(long j=jb;j<jb+64;j+=16) _mm512_stream_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}}
/* per chunk: prefetch the chunk's first D floats up front, then ahead */
static void vecpre(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++){ for(long j=c*CH;j<c*CH+D;j+=16) _mm_prefetch((const char*)(in+j),_MM_HINT_T0);
   for(long j=c*CH;j<(c+1)*CH;j+=16){ _mm_prefetch((const char*)(in+j+D),_MM_HINT_T0); _mm512_stream_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}}}
static void none(const float*in,float*out){
 #pragma omp parallel for schedule(static)
 for(long c=0;c<N/CH;c++) for(long j=c*CH;j<(c+1)*CH;j+=16){ _mm512_stream_ps(out+j,gelu(_mm512_loadu_ps(in+j)));}}
typedef void (*K)(const float*,float*);
int main(int argc,char**argv){
 if(argc>1)D=atoi(argv[1]);
 int S=24; float*in[24],*out[24];
 for(int s=0;s<S;s++){in[s]=aligned_alloc(64,N*4);out[s]=aligned_alloc(64,N*4);for(long i=0;i<N;i++){in[s][i]=((float)rand()/RAND_MAX*8-4);out[s][i]=0;}}
 K ks[]={none,blk,blk64,vec,vect2,vecpre}; const char*nm[]={"none","blk256","blk64","vec","vec-t2","vec+pre"}; int nk=6;
 static double t[8][80]; int turn=0, R=60;
 for(int r=0;r<R;r++) for(int k=0;k<nk;k++){ int s=turn++%S; double t0=now(); ks[k](in[s],out[s]); t[k][r]=now()-t0;}
 for(int k=0;k<nk;k++){ double*a=t[k]; for(int i=0;i<R;i++)for(int j=i+1;j<R;j++)if(a[j]<a[i]){double x=a[i];a[i]=a[j];a[j]=x;}
  printf("%-8s D=%5d  %.3f ms  %.1f GB/s\n",nm[k],D,a[R/2]*1e3,2.0*N*4/a[R/2]/1e9);}
}
