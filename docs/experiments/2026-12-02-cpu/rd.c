#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <omp.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
float sum(const float* x, int64_t n){
  float total=0;
  #pragma omp parallel for reduction(+:total) schedule(static)
  for(int64_t b=0;b<n;b+=1<<14){
    __m512 a0=_mm512_setzero_ps(),a1=a0,a2=a0,a3=a0;
    int64_t e=b+(1<<14)<n?b+(1<<14):n;
    for(int64_t i=b;i<e;i+=64){a0=_mm512_add_ps(a0,_mm512_loadu_ps(x+i));a1=_mm512_add_ps(a1,_mm512_loadu_ps(x+i+16));a2=_mm512_add_ps(a2,_mm512_loadu_ps(x+i+32));a3=_mm512_add_ps(a3,_mm512_loadu_ps(x+i+48));}
    total+=_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0,a1),_mm512_add_ps(a2,a3)));
  }
  return total;
}
void copy(const float*x,float*y,int64_t n){
  #pragma omp parallel for schedule(static)
  for(int64_t i=0;i<n;i+=16) _mm512_stream_ps(y+i,_mm512_loadu_ps(x+i));
}
int main(int argc,char**argv){
  int64_t sizes[]={4<<20,64<<20}; /* floats: 16 MB, 256 MB */
  float* big=aligned_alloc(64,(size_t)(128<<20)*4); for(int64_t i=0;i<(128<<20);i++)big[i]=1;
  for(int s=0;s<2;s++){int64_t n=sizes[s];
    float*x=aligned_alloc(64,n*4),*y=aligned_alloc(64,n*4); for(int64_t i=0;i<n;i++){x[i]=1;y[i]=0;}
    for(int sweep=0;sweep<2;sweep++){
      double tr[31],tc[31]; volatile float sink=0;
      for(int k=0;k<31;k++){ if(sweep) sink+=sum(big,128<<20); double t=now(); sink+=sum(x,n); tr[k]=now()-t;
        if(sweep) sink+=sum(big,128<<20); t=now(); copy(x,y,n); tc[k]=now()-t;}
      qsort(tr,31,8,cmp);qsort(tc,31,8,cmp);
      printf("%4lld MB %s: read-only %.1f GB/s (best %.1f), NT copy %.1f GB/s (best %.1f)\n",(long long)(n*4>>20),sweep?"after a sweep":"back to back",
        n*4/tr[15]/1e9,n*4/tr[0]/1e9,2*n*4/tc[15]/1e9,2*n*4/tc[0]/1e9);
    }
  }
}
