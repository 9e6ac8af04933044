#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#include "pre.inc"
#define PF 0
#define LOC 3
#define KNAME k_nopf
#include "mv.inc"
#undef PF
#undef KNAME
#define PF 1
#define KNAME k_pf1
#include "mv.inc"
#undef PF
#undef KNAME
#define PF 2
#define KNAME k_pf2
#include "mv.inc"
#undef PF
#undef KNAME
#define PF 4
#define KNAME k_pf4
#include "mv.inc"
#undef PF
#undef KNAME
#define PF 8
#define KNAME k_pf8
#include "mv.inc"
void copy_nt(float*restrict o,const float*restrict a,int64_t n){
 #pragma omp parallel for schedule(static)
 for(int64_t i=0;i<n;i+=16){_mm512_stream_ps(o+i,_mm512_loadu_ps(a+i));}
 _mm_sfence();
}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
typedef void (*kf)(void**,const int64_t*,const int64_t*);
int main(int argc,char**argv){
 int mode=atoi(argv[1]); int64_t R=4096,N=1024;
 float*x=aligned_alloc(64,R*N*4+64); float*xx=x+2; // MLX-like 8 byte offset
 for(int64_t i=0;i<R*N;i++) xx[i]=(float)(i%977)*0.001f;
 float*o1=malloc(R*4),*o2=malloc(R*4);
 float*ca=aligned_alloc(64,R*N*2),*cb=aligned_alloc(64,R*N*2); memset(ca,1,R*N*2); memset(cb,1,R*N*2);
 int64_t sweepn=64<<20; float*sw=malloc(sweepn*4); memset(sw,0,sweepn*4);
 void*bufs[3]={xx,o1,o2}; int64_t dims[2]={R,N}; int64_t strides[2]={N,1};
 kf ks[5]={k_nopf,k_pf1,k_pf2,k_pf4,k_pf8}; const char*nm[6]={"nopf","pf1","pf2","pf4","pf8","copy_nt"};
 double t[6][41]; volatile float sink=0;
 for(int r=0;r<41;r++) for(int k=0;k<6;k++){
   if(mode==1){float s=0; for(int64_t i=0;i<sweepn;i+=16) s+=sw[i]; sink+=s;}
   double s0=now(); if(k<5) ks[k](bufs,dims,strides); else copy_nt(cb,ca,R*N/2); t[k][r]=now()-s0; }
 for(int k=0;k<6;k++){qsort(t[k],41,sizeof(double),cmp); printf("%s mode=%d median %.3f ms %.1f GB/s\n",nm[k],mode,t[k][20]*1e3,R*N*4/t[k][20]/1e9);}
}
