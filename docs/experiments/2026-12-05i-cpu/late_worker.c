#include <time.h>
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  size_t n=4u<<20; int S=24; int gap=atoi(argv[1]); int busy=getenv("BUSY")!=0;
  float*in[24]; for(int i=0;i<S;i++){in[i]=aligned_alloc(1<<21,n*4); madvise(in[i],n*4,MADV_HUGEPAGE); memset(in[i],1,n*4);}
  float*out=aligned_alloc(1<<21,n*4); madvise(out,n*4,MADV_HUGEPAGE); memset(out,0,n*4);
  double acc[4]={0};
  for(int r=0;r<50;r++){ if(busy){double e=now()+gap*1e-6; while(now()<e);} else usleep(gap);
    double st[2],en[2]; double t0=now(); const float*a=in[r%S];
    #pragma omp parallel
    { int t=omp_get_thread_num(); st[t]=now(); size_t per=n/2, b=t*per;
      for(size_t j=b;j<b+per;j+=64) for(int g=0;g<4;g++) _mm512_stream_ps(out+j+16*g,_mm512_loadu_ps(a+j+16*g));
      _mm_sfence(); en[t]=now(); }
    double t1=now();
    if(r>=10){acc[0]+=st[1]-t0; acc[1]+=en[0]-st[0]; acc[2]+=en[1]-st[1]; acc[3]+=t1-t0;}
  }
  printf("gap %d busy %d: worker late %.0f us, master half %.0f us, worker half %.0f us, call %.0f us\n",gap,busy,acc[0]/40*1e6,acc[1]/40*1e6,acc[2]/40*1e6,acc[3]/40*1e6);
}
