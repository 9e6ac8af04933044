// libgomp's throttled waiting: an empty parallel region on the main thread, 51 times after `us`
// microseconds of sleep, with (second argument 1) or without a second thread that has run a team
// of its own first (as MLX's stream thread running our native op does beside torch's intra-op
// pool, or beside a ctypes call on the main thread). Once libgomp manages more threads than
// there are CPUs it spins 100 turns instead of 300000 before sleeping, so every region wakes a
// sleeping thread: 0.5 us alone, 40-50 us with the second team, on this 2-vCPU VM.
// Build: gcc -O2 -fopenmp wake_teams.c -o wake_teams -lpthread
// Run:   OMP_NUM_THREADS=2 OMP_PLACES=cores OMP_PROC_BIND=close ./wake_teams 0 1
#include <stdio.h>
#include <omp.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <pthread.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static void *other(void *p){ 
  #pragma omp parallel
  { volatile int x = omp_get_thread_num(); (void)x; }
  sleep(100); return 0; }
int main(int argc, char**argv){
  int us = atoi(argv[1]), two = atoi(argv[2]); double t[51];
  #pragma omp parallel
  { volatile int x = 0; (void)x; }
  if (two) { pthread_t th; pthread_create(&th, 0, other, 0); usleep(100000); }
  for(int r=0;r<51;r++){ if(us) usleep(us); double s=now();
    #pragma omp parallel
    { volatile int x = 0; (void)x; }
    t[r]=now()-s; }
  qsort(t,51,sizeof(double),cmp);
  printf("second team %d, after %d us idle: empty region %.1f us (p90 %.1f)\n", two, us, t[25]*1e6, t[45]*1e6);
}
