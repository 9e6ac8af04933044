/* One thread, rows of 2048 16-bit values (128 of them: 512 KB in, 512 KB out, in L2) through a softmax
   kernel KERN many times, best of 7: ns a row. Built and run by softmax16_cache.sh. -DBF16 reads the
   inputs as bfloat16 bits instead of float16. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <immintrin.h>
void KERN(void **bufs, const int64_t *dims, const int64_t *strides);
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  int R=argc>1?atoi(argv[1]):128, N=2048, reps=argc>2?atoi(argv[2]):400;
  uint16_t *x=aligned_alloc(64,(size_t)R*N*2), *y=aligned_alloc(64,(size_t)R*N*2);
  srand(5); for(long i=0;i<(long)R*N;i++){ float f=((rand()/(float)RAND_MAX)-0.5f)*8; 
#ifdef BF16
    {union{float f;uint32_t u;}c;c.f=f;x[i]=c.u>>16;}
#else
    x[i]=_cvtss_sh(f,0);
#endif
}
  void*b[2]={x,y}; int64_t d[2]={R,N}, s[2]={N,1};
  double best=1e9; for(int k=0;k<7;k++){double t=now(); for(int i=0;i<reps;i++) KERN(b,d,s); t=(now()-t)/reps; if(t<best)best=t;}
  unsigned long h=0; for(long i=0;i<(long)R*N;i++) h=h*31+y[i];
  printf("%s %.1f ns/row  %.3f ns/elt hash %lx\n", argv[0], best/R*1e9, best/R/N*1e9, h);
}
