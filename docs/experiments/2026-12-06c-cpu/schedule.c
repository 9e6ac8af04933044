/* The streaming copy over 16 MB a side, 12 sets in turn, with the loop split statically (as every
   kernel and the roofline do) or handed out dynamically in chunks of 64 KB, 256 KB and 1 MB, so a
   thread that wakes late takes less: median and best ms, after no gap and after a 20 ms sleep
   (argument: the gap in microseconds). gcc -O3 -march=native -fopenmp schedule.c -o schedule */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define N (4L<<20)
#define S 12
static void copy_static(const float*a,float*b){
  #pragma omp parallel
  { 
    #pragma omp for schedule(static)
    for(long i=0;i<N;i+=16) _mm512_stream_ps(b+i,_mm512_loadu_ps(a+i));
    _mm_sfence(); }
}
static void copy_dyn(const float*a,float*b, long chunk){
  #pragma omp parallel
  { 
    #pragma omp for schedule(dynamic, 1)
    for(long c=0;c<N/chunk;c++) for(long i=c*chunk;i<(c+1)*chunk;i+=16) _mm512_stream_ps(b+i,_mm512_loadu_ps(a+i));
    _mm_sfence(); }
}
static int cmp(const void*x,const void*y){double a=*(double*)x,b=*(double*)y;return a<b?-1:a>b;}
int main(int argc,char**argv){
  int gap_us=atoi(argv[1]);
  float *a[S],*b[S];
  for(int s=0;s<S;s++){a[s]=aligned_alloc(64,N*4);b[s]=aligned_alloc(64,N*4);for(long i=0;i<N;i++){a[s][i]=1;b[s][i]=0;}}
  const char*names[]={"static","dyn64K","dyn256K","dyn1M"}; long chunks[]={0,65536/4*1,262144/4,1048576/4};
  double t[4][60];
  for(int r=0;r<60;r++) for(int v=0;v<4;v++){
    int s=(r*4+v)%S; if(gap_us) usleep(gap_us);
    double t0=now(); if(v==0) copy_static(a[s],b[s]); else copy_dyn(a[s],b[s],chunks[v]); t[v][r]=now()-t0;
  }
  for(int v=0;v<4;v++){qsort(t[v],60,sizeof(double),cmp);printf("gap %5d us %-8s median %.3f ms (%.1f GB/s) min %.3f\n",gap_us,names[v],t[v][30]*1e3,8.0*N/t[v][30]/1e9,t[v][0]*1e3);}
}
