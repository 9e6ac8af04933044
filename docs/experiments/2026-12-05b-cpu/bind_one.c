// Under OMP_PROC_BIND, libgomp binds a thread that was not one of its own to the first place as soon
// as it starts a parallel region, even one that runs on one thread (an `if` that is false): a
// helper bound to CPU 1 prints "helper before: 1", then "helper after: 0". So a kernel's share entry
// run on a pool's helper must start no team (pool.patch: CRenderer.parallel).
// Build: gcc -O2 -fopenmp bind_one.c -o bind_one -lpthread
// Run:   OMP_PLACES=cores OMP_PROC_BIND=close ./bind_one
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <omp.h>
static void show(const char *w){cpu_set_t s;pthread_getaffinity_np(pthread_self(),sizeof s,&s);printf("%s:",w);for(int c=0;c<4;c++)if(CPU_ISSET(c,&s))printf(" %d",c);printf("\n");}
static void *th(void *a){cpu_set_t one;CPU_ZERO(&one);CPU_SET(1,&one);pthread_setaffinity_np(pthread_self(),sizeof one,&one);show("helper before");
  int x=0;
  #pragma omp parallel if(x)
  { volatile int y=omp_get_thread_num(); (void)y; }
  show("helper after");return 0;}
int main(){show("main");
  #pragma omp parallel
  { volatile int y=0;(void)y; }
  pthread_t t;pthread_create(&t,0,th,0);pthread_join(t,0);return 0;}
