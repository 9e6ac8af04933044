#include <stdint.h>
#include <math.h>
#include <immintrin.h>
#pragma omp declare simd notinbranch
float expf(float);

static inline float ap_bf16_load(uint16_t b) { union { uint32_t u; float f; } x; x.u = (uint32_t)b << 16; return x.f; }
static inline uint16_t ap_bf16_store(float f) {
  union { uint32_t u; float f; } x; x.f = f;
  if (f != f) return (uint16_t)((x.u >> 16) | 0x40);
  return (uint16_t)((x.u + 0x7FFFu + ((x.u >> 16) & 1u)) >> 16);
}
static inline float ap_round_bf16(float f) { return ap_bf16_load(ap_bf16_store(f)); }
static inline float ap_round_f16(float f) { return (float)(_Float16)f; }

void k_81ce194d1b274a87(void **bufs, const int64_t *dims, const int64_t *strides) {
  const float *restrict in0 = (const float *)bufs[0];
  float *restrict out1 = (float *)bufs[1];
  const int64_t N = dims[1];
  int64_t R = 1;
  for (int d = 0; d < 1; d++) R *= dims[d];
  #pragma omp parallel if(R * N >= 32768)
  {
  #pragma omp for schedule(static)
  for (int64_t r = 0; r < R; r++) {
    int64_t rem = r;
    const int64_t c0 = rem;
    const int64_t b0 = c0 * strides[0];
    (void)rem;
    float ap_buf[8192] __attribute__((aligned(64)));
    float *restrict ap_row = N <= 8192 ? ap_buf : out1 + r * N;
    float a1 = -INFINITY;
    int n1 = 0;
    {
      int64_t jm = 0;
      float p1[32]; int m1[32];
      for (int l = 0; l < 32; l++) { p1[l] = -INFINITY; m1[l] = 0; }
      for (; jm + 32 <= N; jm += 32) {
        #pragma omp simd simdlen(16)
        for (int64_t l = 0; l < 32; l++) {
          const int64_t j = jm + l;
          const float v0 = in0[b0 + j];
          p1[l] = p1[l] > v0 ? p1[l] : v0; m1[l] |= (v0 != v0);
        }
      }
      for (int l = 0; l < 32; l++) { a1 = a1 > p1[l] ? a1 : p1[l]; n1 |= (p1[l] != p1[l]); n1 |= m1[l]; }
      #pragma omp simd simdlen(16) reduction(max:a1) reduction(|:n1)
      for (int64_t j = jm; j < N; j++) {
        const float v0 = in0[b0 + j];
        a1 = a1 > v0 ? a1 : v0; n1 |= (v0 != v0);
      }
    }
    const float r1 = (n1 ? NAN : a1);
    float a4 = 0.0f;
    {
      const int64_t B = N >= 4096 ? 512 : N + (N == 0);
      float k4 = 0.0f, t4 = a4;
      for (int64_t jb = 0; jb < N; jb += B) {
        const int64_t je = jb + B < N ? jb + B : N;
        a4 = 0.0f;
        {
          int64_t jm = jb;
          float p4[32]; int m4[32];
          for (int l = 0; l < 32; l++) { p4[l] = 0.0f; m4[l] = 0; }
          for (; jm + 32 <= je; jm += 32) {
            __builtin_prefetch(in0 + b0 + strides[0] + jm + 0);
            __builtin_prefetch(in0 + b0 + strides[0] + jm + 16);
            #pragma omp simd simdlen(16)
            for (int64_t l = 0; l < 32; l++) {
              const int64_t j = jm + l;
              const float v0 = in0[b0 + j];
              const float v2 = (v0 - r1);
              const float v3 = expf(v2);
              ap_row[j] = v3;
              p4[l] += v3;
            }
          }
          for (int l = 0; l < 32; l++) { a4 += p4[l]; }
          #pragma omp simd simdlen(16) reduction(+:a4)
          for (int64_t j = jm; j < je; j++) {
            const float v0 = in0[b0 + j];
            const float v2 = (v0 - r1);
            const float v3 = expf(v2);
            ap_row[j] = v3;
            a4 += v3;
          }
        }
        const float s4 = t4 + a4;
        k4 += fabsf(t4) >= fabsf(a4) ? (t4 - s4) + a4 : (a4 - s4) + t4;
        t4 = s4;
      }
      a4 = fabsf(k4) < INFINITY ? t4 + k4 : t4;
    }
    const float r4 = a4; const float q4 = 1.0f / r4;
    float *restrict o = out1 + r * N;
    int64_t jc = N <= 8192 ? (((64 - ((uintptr_t)o & 63)) & 63) >> 2) : N;
    if (jc > N) jc = N;
    for (int64_t j = 0; j < jc; j++) o[j] = ap_row[j] * q4;
    for (; jc + 16 <= N; jc += 16) {
      _mm512_stream_ps(o + jc, _mm512_mul_ps(_mm512_loadu_ps(ap_row + jc), _mm512_set1_ps(q4)));
    }
    for (int64_t j = jc; j < N; j++) o[j] = ap_row[j] * q4;
  }
  _mm_sfence();
  }
}
