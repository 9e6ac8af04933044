// A 256 MB read-only sum on 2 threads with software prefetch (T0/T1/T2, 1024-8192 floats ahead) or
// none, best of 7 each, three passes: gcc -O3 -march=native -fopenmp -o rd read_prefetch.c &&
// OMP_NUM_THREADS=2 OMP_PLACES=cores OMP_PROC_BIND=close ./rd
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <immintrin.h>
#include <omp.h>
double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
float sum_pf(const float *x, int64_t n, int64_t dist, int hint) {
  float total = 0;
  #pragma omp parallel reduction(+:total)
  {
    __m512 a0=_mm512_setzero_ps(),a1=a0,a2=a0,a3=a0;
    #pragma omp for schedule(static)
    for (int64_t i = 0; i < n; i += 64) {
      if (dist) { if (hint==0) _mm_prefetch((const char*)(x+i+dist), _MM_HINT_T0); else if (hint==1) _mm_prefetch((const char*)(x+i+dist), _MM_HINT_T1); else _mm_prefetch((const char*)(x+i+dist), _MM_HINT_T2);
                  if (hint==0) _mm_prefetch((const char*)(x+i+dist+16), _MM_HINT_T0); else if (hint==1) _mm_prefetch((const char*)(x+i+dist+16), _MM_HINT_T1); else _mm_prefetch((const char*)(x+i+dist+16), _MM_HINT_T2);
                  if (hint==0) _mm_prefetch((const char*)(x+i+dist+32), _MM_HINT_T0); else if (hint==1) _mm_prefetch((const char*)(x+i+dist+32), _MM_HINT_T1); else _mm_prefetch((const char*)(x+i+dist+32), _MM_HINT_T2);
                  if (hint==0) _mm_prefetch((const char*)(x+i+dist+48), _MM_HINT_T0); else if (hint==1) _mm_prefetch((const char*)(x+i+dist+48), _MM_HINT_T1); else _mm_prefetch((const char*)(x+i+dist+48), _MM_HINT_T2); }
      a0=_mm512_add_ps(a0,_mm512_loadu_ps(x+i)); a1=_mm512_add_ps(a1,_mm512_loadu_ps(x+i+16));
      a2=_mm512_add_ps(a2,_mm512_loadu_ps(x+i+32)); a3=_mm512_add_ps(a3,_mm512_loadu_ps(x+i+48));
    }
    total += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0,a1),_mm512_add_ps(a2,a3)));
  }
  return total;
}
int main(){
  int64_t n = 1<<26; float *x = aligned_alloc(64, n*4); for (int64_t i=0;i<n;i++) x[i]=1;
  int64_t dists[] = {0, 1024, 2048, 4096, 8192};
  volatile float s;
  for (int rep=0; rep<3; rep++)
  for (int h=0; h<3; h++) for (int d=0; d<5; d++) { if (d==0 && h>0) continue;
    double best=1e9; for (int k=0;k<7;k++){ double t=now(); s=sum_pf(x,n,dists[d],h); t=now()-t; if(t<best)best=t; }
    printf("hint T%d dist %5ld floats: %.1f GB/s\n", h, dists[d], n*4/best/1e9); }
}
