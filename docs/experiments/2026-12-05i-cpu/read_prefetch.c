#include <time.h>
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
volatile float sink;
static double readpf(const float*a,size_t n,int D,int hint){
  double t0=now(); float tot=0;
  #pragma omp parallel reduction(+:tot)
  { int t=omp_get_thread_num(),T=omp_get_num_threads(); size_t per=n/T, base=t*per;
    __m512 s[8]; for(int i=0;i<8;i++)s[i]=_mm512_setzero_ps();
    const float*p=a+base;
    for(size_t j=0;j<per;j+=128){ if(D){ if(hint==0){_mm_prefetch((const char*)(p+j)+D,_MM_HINT_T0);_mm_prefetch((const char*)(p+j)+D+64,_MM_HINT_T0);_mm_prefetch((const char*)(p+j)+D+128,_MM_HINT_T0);_mm_prefetch((const char*)(p+j)+D+192,_MM_HINT_T0);_mm_prefetch((const char*)(p+j)+D+256,_MM_HINT_T0);_mm_prefetch((const char*)(p+j)+D+320,_MM_HINT_T0);_mm_prefetch((const char*)(p+j)+D+384,_MM_HINT_T0);_mm_prefetch((const char*)(p+j)+D+448,_MM_HINT_T0);} else {for(int q=0;q<8;q++)_mm_prefetch((const char*)(p+j)+D+64*q,_MM_HINT_T2);} }
      for(int g=0;g<8;g++) s[g]=_mm512_add_ps(s[g],_mm512_load_ps(p+j+16*g)); }
    for(int i=1;i<8;i++)s[0]=_mm512_add_ps(s[0],s[i]); tot+=_mm512_reduce_add_ps(s[0]); }
  sink=tot; return now()-t0;}
int main(int argc,char**argv){
  size_t n=(size_t)atoll(argv[1]); int reps=atoi(argv[2]);
  float*a=aligned_alloc(1<<21,n*4); madvise(a,n*4,MADV_HUGEPAGE); memset(a,1,n*4);
  int Ds[]={0,512,1024,2048,4096,8192,16384};
  for(int r=0;r<2;r++)readpf(a,n,0,0);
  for(int h=0;h<2;h++)for(int di=0;di<7;di++){double b=1e9;for(int r=0;r<reps;r++){double x=readpf(a,n,Ds[di],h);if(x<b)b=x;} printf("hint %s D=%5d read %.1f GB/s\n",h?"T2":"T0",Ds[di],n*4/b/1e9);}
}
