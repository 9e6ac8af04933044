#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>
#include <omp.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
void copy_static(float*restrict o,const float*restrict a,int64_t n){
 #pragma omp parallel for schedule(static)
 for(int64_t i=0;i<n;i+=16){_mm512_stream_ps(o+i,_mm512_loadu_ps(a+i));}
}
void copy_dyn(float*restrict o,const float*restrict a,int64_t n){
 #pragma omp parallel for schedule(dynamic,4096)
 for(int64_t i=0;i<n;i+=16){_mm512_stream_ps(o+i,_mm512_loadu_ps(a+i));}
}
void copy_one(float*restrict o,const float*restrict a,int64_t n){
 for(int64_t i=0;i<n;i+=16){_mm512_stream_ps(o+i,_mm512_loadu_ps(a+i));}
}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
 int64_t n=atol(argv[2]); int sleep_us=atoi(argv[1]);
 float*a=aligned_alloc(64,n*4),*o=aligned_alloc(64,n*4);
 for(int64_t i=0;i<n;i++){a[i]=i;o[i]=0;}
 void(*f[3])(float*,const float*,int64_t)={copy_static,copy_dyn,copy_one};
 const char*nm[3]={"static","dynamic","one"};
 double t[3][41];
 for(int r=0;r<41;r++) for(int k=0;k<3;k++){ if(sleep_us) usleep(sleep_us); double s=now(); f[k](o,a,n); t[k][r]=now()-s;}
 for(int k=0;k<3;k++){qsort(t[k],41,sizeof(double),cmp); printf("%s sleep=%d median %.3f ms  %.1f GB/s  min %.3f\n",nm[k],sleep_us,t[k][20]*1e3,n*8/t[k][20]/1e9,t[k][0]*1e3);}
}
