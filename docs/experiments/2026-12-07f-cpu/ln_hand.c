#include <stdint.h>
#include <math.h>
#include <immintrin.h>
static inline float hsum(__m256 v){__m128 a=_mm_add_ps(_mm256_castps256_ps128(v),_mm256_extractf128_ps(v,1));a=_mm_add_ps(a,_mm_movehl_ps(a,a));a=_mm_add_ss(a,_mm_movehdup_ps(a));return _mm_cvtss_f32(a);}
void k_hand(void **bufs, const int64_t *dims, const int64_t *strides){
  const float *x=bufs[0],*w=bufs[1],*b=bufs[2]; float *o=bufs[3];
  const int64_t R=dims[0],N=dims[1];
  #pragma omp parallel for schedule(static) if(R*N>=32768)
  for(int64_t r=0;r<R;r++){
    const float *xr=x+r*N; float *orow=o+r*N;
    __m256 s0=_mm256_setzero_ps(),s1=s0,s2=s0,s3=s0;
    for(int64_t j=0;j<N;j+=32){s0=_mm256_add_ps(s0,_mm256_loadu_ps(xr+j));s1=_mm256_add_ps(s1,_mm256_loadu_ps(xr+j+8));s2=_mm256_add_ps(s2,_mm256_loadu_ps(xr+j+16));s3=_mm256_add_ps(s3,_mm256_loadu_ps(xr+j+24));}
    float mean=hsum(_mm256_add_ps(_mm256_add_ps(s0,s1),_mm256_add_ps(s2,s3)))/N;
    __m256 m=_mm256_set1_ps(mean); s0=_mm256_setzero_ps();s1=s0;s2=s0;s3=s0;
    for(int64_t j=0;j<N;j+=32){__m256 d0=_mm256_sub_ps(_mm256_loadu_ps(xr+j),m),d1=_mm256_sub_ps(_mm256_loadu_ps(xr+j+8),m),d2=_mm256_sub_ps(_mm256_loadu_ps(xr+j+16),m),d3=_mm256_sub_ps(_mm256_loadu_ps(xr+j+24),m);
      s0=_mm256_add_ps(s0,_mm256_mul_ps(d0,d0));s1=_mm256_add_ps(s1,_mm256_mul_ps(d1,d1));s2=_mm256_add_ps(s2,_mm256_mul_ps(d2,d2));s3=_mm256_add_ps(s3,_mm256_mul_ps(d3,d3));}
    float var=hsum(_mm256_add_ps(_mm256_add_ps(s0,s1),_mm256_add_ps(s2,s3)))/N;
    __m256 rs=_mm256_set1_ps(1.0f/sqrtf(var+1e-5f));
    for(int64_t j=0;j<N;j+=8){__m256 v=_mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr+j),m),rs),_mm256_loadu_ps(w+j));
      _mm256_storeu_ps(orow+j,_mm256_add_ps(v,_mm256_loadu_ps(b+j)));}
  }
}
