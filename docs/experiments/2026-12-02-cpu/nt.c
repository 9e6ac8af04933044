#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
void c512(float*restrict o,const float*restrict a,int64_t n){
 #pragma omp parallel for schedule(static)
 for(int64_t i=0;i<n;i+=16){_mm512_stream_ps(o+i,_mm512_loadu_ps(a+i));}
 _mm_sfence();}
void c256(float*restrict o,const float*restrict a,int64_t n){
 #pragma omp parallel for schedule(static)
 for(int64_t i=0;i<n;i+=16){_mm256_stream_ps(o+i,_mm256_loadu_ps(a+i));_mm256_stream_ps(o+i+8,_mm256_loadu_ps(a+i+8));}
 _mm_sfence();}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
 int64_t n=atol(argv[1]);
 float*a=aligned_alloc(1<<21,n*4),*o=aligned_alloc(1<<21,n*4);
 if(argc>2){madvise(a,n*4,MADV_HUGEPAGE);madvise(o,n*4,MADV_HUGEPAGE);} for(int64_t i=0;i<n;i++){a[i]=1.0f+i;o[i]=2.0f;}
 void(*f[2])(float*,const float*,int64_t)={c512,c256}; const char*nm[2]={"nt512","nt256"};
 double t[2][21];
 for(int r=0;r<21;r++) for(int k=0;k<2;k++){ double s=now(); f[k](o,a,n); t[k][r]=now()-s;}
 for(int k=0;k<2;k++){qsort(t[k],21,sizeof(double),cmp); printf("%s n=%ld median %.1f GB/s best %.1f GB/s\n",nm[k],n,n*8/t[k][10]/1e9,n*8/t[k][0]/1e9);}
}
