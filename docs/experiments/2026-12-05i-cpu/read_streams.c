#include <time.h>
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdint.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static float *alloc(size_t n,int huge){void*p=aligned_alloc(1<<21,n*4); if(huge)madvise(p,n*4,MADV_HUGEPAGE); else madvise(p,n*4,MADV_NOHUGEPAGE); memset(p,1,n*4); return p;}
volatile float sink;
// read: each thread reads its half as K interleaved sub-streams, G lines per visit
static double readk(const float*a,size_t n,int K,int G){
  double t0=now(); float tot=0;
  #pragma omp parallel reduction(+:tot)
  { int t=omp_get_thread_num(),T=omp_get_num_threads(); size_t per=n/T, base=t*per, sub=per/K;
    __m512 s[8]; for(int i=0;i<8;i++)s[i]=_mm512_setzero_ps();
    for(size_t j=0;j<sub;j+=16*G){ for(int k=0;k<K;k++){ const float*p=a+base+k*sub+j; for(int g=0;g<G;g++){ s[g&7]=_mm512_add_ps(s[g&7],_mm512_load_ps(p+16*g)); }}}
    for(int i=1;i<8;i++)s[0]=_mm512_add_ps(s[0],s[i]); tot+=_mm512_reduce_add_ps(s[0]); }
  sink=tot; return now()-t0;}
static double copyk(float*b,const float*a,size_t n,int K,int G){
  double t0=now();
  #pragma omp parallel
  { int t=omp_get_thread_num(),T=omp_get_num_threads(); size_t per=n/T, base=t*per, sub=per/K;
    for(size_t j=0;j<sub;j+=16*G){ for(int k=0;k<K;k++){ size_t o=base+k*sub+j; for(int g=0;g<G;g++) _mm512_stream_ps(b+o+16*g,_mm512_load_ps(a+o+16*g)); }}}
  _mm_sfence(); return now()-t0;}
int main(int argc,char**argv){
  size_t n=(size_t)atoll(argv[1]); int huge=atoi(argv[2]); int reps=atoi(argv[3]);
  float*a=alloc(n,huge),*b=alloc(n,huge);
  int Ks[]={1,2,4,8}; int Gs[]={1,4,16,64};
  for(int r=0;r<2;r++){readk(a,n,1,4);copyk(b,a,n,1,4);}
  for(int ki=0;ki<4;ki++)for(int gi=0;gi<4;gi++){int K=Ks[ki],G=Gs[gi];
    double br=1e9,bc=1e9; for(int r=0;r<reps;r++){double x=readk(a,n,K,G); if(x<br)br=x; x=copyk(b,a,n,K,G); if(x<bc)bc=x;}
    printf("K=%d G=%2d read %.1f GB/s  copy_nt %.1f GB/s\n",K,G,n*4/br/1e9,n*8/bc/1e9);}
}
