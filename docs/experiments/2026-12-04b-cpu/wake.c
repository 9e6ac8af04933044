// How late an OpenMP team's second thread starts after the process idled: 51 empty parallel
// regions, each after `us` microseconds of sleep; the median region and the median start of the
// last thread. libgomp's threads spin GOMP_SPINCOUNT times (300000 by default) before they sleep
// in the kernel, and waking one costs tens of microseconds on this VM.
// Build: gcc -O2 -fopenmp wake.c -o wake; run: OMP_PLACES=cores OMP_PROC_BIND=close ./wake 10000
// (also with GOMP_SPINCOUNT=10000 or OMP_WAIT_POLICY=passive in the environment).
#include <stdio.h>
#include <omp.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc, char**argv){
  int us = atoi(argv[1]); double t[51], first[51]; volatile double sink=0;
  for(int r=0;r<51;r++){ if(us) usleep(us); double s=now(); double f[2]={0,0};
    #pragma omp parallel
    { f[omp_get_thread_num()] = now(); }
    t[r]=now()-s; first[r]= (f[1]>f[0]?f[1]:f[0]) - s; }
  qsort(t,51,sizeof(double),cmp); qsort(first,51,sizeof(double),cmp);
  printf("after %d us idle: empty region %.1f us (p90 %.1f); last thread starts %.1f us\n", us, t[25]*1e6, t[45]*1e6, first[25]*1e6);
}
