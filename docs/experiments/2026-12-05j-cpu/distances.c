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
static inline __m512 cheap(__m512 a){ return _mm512_sub_ps(_mm512_mul_ps(_mm512_add_ps(_mm512_mul_ps(a,a),a),a),_mm512_set1_ps(1.f)); }
#define CH 16384
#define KER(name, F, ST, PF) static void name(const float*in,float*out,int D){ \
 _Pragma("omp parallel for schedule(static)") \
 for(long c=0;c<N/CH;c++) for(long jb=c*CH;jb<(c+1)*CH;jb+=256){ \
   if(PF) for(int p=0;p<256;p+=16) _mm_prefetch((const char*)(in+jb+D+p),_MM_HINT_T0); \
   for(long j=jb;j<jb+256;j+=16) ST(out+j,F(_mm512_loadu_ps(in+j)));}}
KER(g_st,gelu,_mm512_storeu_ps,0) KER(g_st_pf,gelu,_mm512_storeu_ps,1) KER(g_nt,gelu,_mm512_stream_ps,0) KER(g_nt_pf,gelu,_mm512_stream_ps,1)
KER(c_st,cheap,_mm512_storeu_ps,0) KER(c_st_pf,cheap,_mm512_storeu_ps,1) KER(c_nt,cheap,_mm512_stream_ps,0) KER(c_nt_pf,cheap,_mm512_stream_ps,1)
typedef void (*K)(const float*,float*,int);
int main(int argc,char**argv){
 int S=24; float*in[24],*out[24];
 for(int s=0;s<S;s++){in[s]=aligned_alloc(64,N*4);out[s]=aligned_alloc(64,N*4);for(long i=0;i<N;i++){in[s][i]=((float)rand()/RAND_MAX*8-4);out[s][i]=0;}}
 K ks[64]; const char*nm[64]; int ds[64]; int nk=0;
 #define ADD(k,d) ks[nk]=k;nm[nk]=#k;ds[nk++]=d;
 ADD(g_st,0) ADD(g_nt,0) ADD(c_st,0) ADD(c_nt,0)
 for(int i=1;i<argc;i++){int d=atoi(argv[i]); ADD(g_st_pf,d) ADD(g_nt_pf,d) ADD(c_st_pf,d) ADD(c_nt_pf,d)}
 static double t[64][80]; int turn=0, R=60;
 for(int r=0;r<R;r++) for(int k=0;k<nk;k++){ int s=turn++%S; double t0=now(); ks[k](in[s],out[s],ds[k]); t[k][r]=now()-t0;}
 for(int k=0;k<nk;k++){ double*a=t[k]; for(int i=0;i<R;i++)for(int j=i+1;j<R;j++)if(a[j]<a[i]){double x=a[i];a[i]=a[j];a[j]=x;}
  printf("%-8s D=%5d floats  %.3f ms  %.1f GB/s\n",nm[k],ds[k],a[R/2]*1e3,2.0*N*4/a[R/2]/1e9);}
}
