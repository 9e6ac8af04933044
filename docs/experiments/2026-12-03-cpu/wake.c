#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  double gaps[]={0,1e-4,1e-3,1e-2}; volatile int s=0;
  for(int g=0;g<4;g++){ double t[51];
    for(int k=0;k<51;k++){ struct timespec ts={0,(long)(gaps[g]*1e9)}; if(gaps[g]>0) nanosleep(&ts,0);
      double a=now();
      #pragma omp parallel
      { s+=omp_get_thread_num(); }
      t[k]=now()-a; }
    qsort(t,51,8,cmp); printf("gap %.0e s: empty parallel region median %.1f us, p90 %.1f us\n",gaps[g],t[25]*1e6,t[45]*1e6);}
}
