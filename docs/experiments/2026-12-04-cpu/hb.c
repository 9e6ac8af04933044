// A row kernel library on a cache-resident R x N float32 input, called directly (no ctypes):
// hb LIB SYMBOL INPUTS ELEM_OUTPUTS ROW_OUTPUTS [R N]; input 0 is R x N, the others N long
// (broadcast rows); 41 rounds of 200 calls, the median per row. Build the library with the
// CPU backend's flags (autoperfect/backends/cpu.py: FLAGS, plus -lmvec -lm for libmvec schedules),
// e.g. gcc -O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math -fPIC
// -shared -o k.so OP.SCHEDULE.c -lmvec -lm; then OMP_NUM_THREADS=1 ./hb ./k.so k_... 1 1 0 64 1024.
// Build: gcc -O2 -o hb hb.c -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
typedef void (*kfn)(void **, const int64_t *, const int64_t *);
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  void*h=dlopen(argv[1],RTLD_NOW); if(!h){puts(dlerror());return 1;}
  kfn f=(kfn)dlsym(h,argv[2]);
  int nin=atoi(argv[3]), noe=atoi(argv[4]), nor=atoi(argv[5]);
  int64_t R=argc>6?atol(argv[6]):128, N=argc>7?atol(argv[7]):1024;
  void*bufs[16]; int64_t st[32]; int k=0;
  srand(1);
  for(int i=0;i<nin;i++){ int64_t n= i==0? R*N : N; float*p=aligned_alloc(64,n*4+64);
    for(int64_t j=0;j<n;j++) p[j]=(float)rand()/RAND_MAX*2-1;
    bufs[k]=p; st[2*k]= i==0? N:0; st[2*k+1]=1; k++; }
  for(int i=0;i<noe;i++){ bufs[k]=aligned_alloc(64,R*N*4+64); st[2*k]=N; st[2*k+1]=1; k++; }
  for(int i=0;i<nor;i++){ bufs[k]=aligned_alloc(64,R*4+64); st[2*k]=1; st[2*k+1]=0; k++; }
  int64_t dims[2]={R,N};
  double t[41];
  for(int rep=0;rep<41;rep++){ double s=now(); for(int c=0;c<200;c++) f(bufs,dims,st); t[rep]=(now()-s)/200; }
  qsort(t,41,sizeof(double),cmp);
  printf("%s %.1f ns/row (min %.1f)\n", argv[1], t[20]/R*1e9, t[0]/R*1e9);
}
