// Build: gcc -O2 -o drive drive.c -ldl; run: OMP_PLACES=cores OMP_PROC_BIND=close ./drive ./k.so SYMBOL 3 1000
// (k.so built as in ../2026-12-04-cpu/hb.c, with -g for perf annotate). Not interleaved: one source a run.
// drive LIB SYMBOL NIN: LayerNorm-shaped 4096x1024 from memory over 9 sets, 200 calls, 2 threads.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
typedef void (*kfn)(void **, const int64_t *, const int64_t *);
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  void*h=dlopen(argv[1],RTLD_NOW); if(!h){puts(dlerror());return 1;}
  kfn f=(kfn)dlsym(h,argv[2]); int nin=atoi(argv[3]); int calls=argc>4?atoi(argv[4]):200;
  const int64_t R=4096,N=1024; enum{S=9};
  void*bufs[S][8]; int64_t st[16]={0};
  for(int s=0;s<S;s++){ int k=0;
    for(int i=0;i<nin;i++){ int64_t n=i==0?R*N:N; float*p=malloc(n*4+64); p=(float*)((char*)p+8);
      for(int64_t j=0;j<n;j++) p[j]=(float)rand()/RAND_MAX*2-1; bufs[s][k]=p; st[2*k]=i==0?N:0; st[2*k+1]=1; k++; }
    float*o=malloc(R*N*4+64); o=(float*)((char*)o+8); for(int64_t j=0;j<R*N;j++) o[j]=0; bufs[s][k]=o; st[2*k]=N; st[2*k+1]=1; }
  int64_t dims[2]={R,N};
  double t0=now(); for(int c=0;c<calls;c++) f(bufs[c%S],dims,st); double t=(now()-t0)/calls;
  printf("%s %.3f ms\n", argv[1], t*1e3);
}
