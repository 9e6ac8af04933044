/* An empty OpenMP parallel region on both cores, back to back and after a sleep of 0.1, 2 and 20 ms:
   its mean and best time and how late the second thread starts (libgomp's threads spin a while,
   then sleep; waking a sleeping vCPU is the cost). gcc -O2 -fopenmp wake.c -o wake */
#include <omp.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  volatile int x=0; double arr[2];
  for(int gap=0; gap<4; gap++){
    int us = gap==0?0: gap==1?100: gap==2?2000: 20000;
    double tot=0, tmin=1; double late=0;
    for(int r=0;r<50;r++){
      if(us) usleep(us);
      double t0=now();
      #pragma omp parallel
      { arr[omp_get_thread_num()] = now(); }
      double t=now()-t0; tot+=t; if(t<tmin)tmin=t; late += arr[1]-arr[0];
    }
    printf("gap %6d us: parallel region mean %.1f us min %.1f us; thread1 starts %.1f us after thread0\n", us, tot/50*1e6, tmin*1e6, late/50*1e6);
  }
}
