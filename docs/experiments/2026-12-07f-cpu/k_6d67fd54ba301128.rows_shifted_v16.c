#include <stdint.h>
#include <math.h>
#include <immintrin.h>

// 16-bit floats are held as their bits and computed in float. Rounding to one keeps the result in a
// float's 32-bit lanes (ap_*_bits): a rounding written as a store then a load narrowed and widened
// each vector again, which cost a bfloat16 RMSNorm half its time.
static inline float ap_bf16_load(uint16_t b) { union { uint32_t u; float f; } x; x.u = (uint32_t)b << 16; return x.f; }
static inline uint32_t ap_bf16_bits(float f) {
  union { uint32_t u; float f; } x; x.f = f;
  if (f != f) return (x.u | 0x00400000u) & 0xFFFF0000u;
  return (x.u + 0x7FFFu + ((x.u >> 16) & 1u)) & 0xFFFF0000u;
}
static inline uint16_t ap_bf16_store(float f) { return (uint16_t)(ap_bf16_bits(f) >> 16); }
static inline float ap_round_bf16(float f) { union { uint32_t u; float f; } x; x.u = ap_bf16_bits(f); return x.f; }
// float16: GCC 12 leaves a loop over _Float16 scalar (one conversion instruction an element), while
// these integer forms vectorize. Rounding to nearest even, subnormals, infinities and NaN as IEEE and
// as x86's F16C conversions (vcvtph2ps, vcvtps2ph) do: a signaling NaN becomes one that does not
// signal, its payload's top bits kept, so a staged kernel's vector body and its scalar tail agree
// (tests/test_cpu_schedules.py checks every float16 value, docs/experiments/2026-12-06f-cpu/round_f16.c
// every float32).
static inline float ap_f16_value(uint32_t h) {
  union { uint32_t u; float f; } o, m;
  m.u = 113u << 23;
  o.u = (h & 0x7FFFu) << 13;
  const uint32_t e = o.u & 0x0F800000u;
  o.u += (127u - 15u) << 23;
  if (e == 0x0F800000u) o.u = (o.u + ((128u - 16u) << 23)) | ((h & 0x03FFu) ? 0x00400000u : 0u);
  else if (e == 0) { o.u += 1u << 23; o.f -= m.f; }
  o.u |= (h & 0x8000u) << 16;
  return o.f;
}
static inline uint32_t ap_f16_bits(float f) {
  union { uint32_t u; float f; } x, d;
  x.f = f;
  d.u = 126u << 23;
  const uint32_t sign = x.u & 0x80000000u;
  x.u ^= sign;
  uint32_t o;
  if (x.u >= 143u << 23) o = x.u > 255u << 23 ? 0x7E00u | ((x.u >> 13) & 0x03FFu) : 0x7C00u;
  else if (x.u < 113u << 23) { x.f += d.f; o = x.u - d.u; }
  else { const uint32_t odd = (x.u >> 13) & 1u; o = (x.u + 0xC8000FFFu + odd) >> 13; }
  return o | (sign >> 16);
}
static inline float ap_f16_load(uint16_t h) { return ap_f16_value(h); }
static inline uint16_t ap_f16_store(float f) { return (uint16_t)ap_f16_bits(f); }
// float16 precision kept in a float without the float16 bits between: a float16 normal rounded in the
// float's own bits (the 13 bits below a float16's last cleared, to nearest even), past 65504 to
// infinity, below 2^-14 to a multiple of 2^-24 by adding and taking away 0.5 (whose ulp that is),
// NaN as ap_f16_bits has it: ap_f16_value(ap_f16_bits(f)) bit for bit in fewer operations.
static inline float ap_round_f16(float f) {
  union { uint32_t u; float f; } x, s;
  x.f = f;
  const uint32_t sign = x.u & 0x80000000u;
  x.u ^= sign;
  s.f = (x.f + 0.5f) - 0.5f;
  uint32_t o = (x.u + 0x0FFFu + ((x.u >> 13) & 1u)) & 0xFFFFE000u;
  o = o >= 0x47800000u ? 0x7F800000u : o;
  o = x.u < 0x38800000u ? s.u : o;
  o = x.u > 0x7F800000u ? (x.u & 0xFFFFE000u) | 0x00400000u : o;
  x.u = o | sign;
  return x.f;
}

#if defined(__AVX512F__)
#define AP_NT_WIDTH 16
#define AP_NT_STORE(p, v) _mm512_stream_ps((p), _mm512_load_ps(v))
#elif defined(__AVX__)
#define AP_NT_WIDTH 8
#define AP_NT_STORE(p, v) _mm256_stream_ps((p), _mm256_load_ps(v))
#else
#define AP_NT_WIDTH 4
#define AP_NT_STORE(p, v) _mm_stream_ps((p), _mm_load_ps(v))
#endif

void k_6d67fd54ba301128(void **bufs, const int64_t *dims, const int64_t *strides) {
  const float *restrict in0 = (const float *)bufs[0];
  const float *restrict in1 = (const float *)bufs[1];
  const float *restrict in2 = (const float *)bufs[2];
  float *restrict out3 = (float *)bufs[3];
  const int64_t N = dims[1];
  int64_t R = 1;
  for (int d = 0; d < 1; d++) R *= dims[d];
  const int ap_stream = R * N * 4 >= 16777216;
  const int64_t ap_row_bytes = N * ((strides[0] != 0) * 4);
  const int64_t ap_ahead = ap_row_bytes >= 8192 ? 1 : 8192 / (ap_row_bytes + (ap_row_bytes == 0));
  #pragma omp parallel if(R * N >= 32768)
  {
  #pragma omp for schedule(static)
  for (int64_t r = 0; r < R; r++) {
    int64_t rem = r;
    const int64_t c0 = rem;
    const int64_t b0 = c0 * strides[0];
    const int64_t b1 = c0 * strides[2];
    const int64_t b2 = c0 * strides[4];
    (void)rem;
    if (ap_stream && ((uintptr_t)(out3 + (r + 1) * N) & 63)) __builtin_prefetch(out3 + (r + 1) * N, 1, 3);
    const float r2 = (float)(N - 0);
    const float r8 = 0x1.4f8b580000000p-17f;
    float a1 = 0.0f;
    float ap_k = 0.0f, ap_e = 0.0f, ap_s1 = 0.0f, ap_s2 = 0.0f;
    const int64_t ap_jk = N < 16 ? N : 16;
    for (int64_t j = 0; j < ap_jk; j++) {
      const float v0 = in0[b0 + j];
      ap_k += v0;
      ap_e += v0 * v0;
    }
    if (ap_jk > 0) ap_k = ap_k / (float)ap_jk;
    if (5.0f * (float)ap_jk * ap_k * ap_k <= ap_e) {
      {
        const int64_t B = N >= 4096 ? 512 : N + (N == 0);
        float k1 = 0.0f, t1 = a1;
        float ap_s2k = 0.0f, ap_s2t = ap_s2;
        for (int64_t jb = 0; jb < N; jb += B) {
          const int64_t je = jb + B < N ? jb + B : N;
          a1 = 0.0f;
          ap_s2 = 0.0f;
          {
            int64_t jm = jb;
            float p1[32];
            for (int l = 0; l < 32; l++) { p1[l] = 0.0f; }
            float ap_s2p[32]; for (int l = 0; l < 32; l++) ap_s2p[l] = 0.0f;
            for (; jm + 32 <= je; jm += 32) {
              #pragma omp simd simdlen(16)
              for (int64_t l = 0; l < 32; l++) {
                const int64_t j = jm + l;
                const float v0 = in0[b0 + j];
                const float ap_dd = v0 * v0;
                p1[l] += v0;
                ap_s2p[l] += ap_dd;
              }
            }
#if defined(__AVX512F__)
            p1[0] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(p1), _mm512_loadu_ps(p1 + 16)));
            ap_s2p[0] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(ap_s2p), _mm512_loadu_ps(ap_s2p + 16)));
#else
            for (int l = 0; l < 16; l++) { p1[l] += p1[l + 16]; ap_s2p[l] += ap_s2p[l + 16]; }
            for (int l = 0; l < 8; l++) { p1[l] += p1[l + 8]; ap_s2p[l] += ap_s2p[l + 8]; }
            for (int l = 0; l < 4; l++) { p1[l] += p1[l + 4]; ap_s2p[l] += ap_s2p[l + 4]; }
            for (int l = 0; l < 2; l++) { p1[l] += p1[l + 2]; ap_s2p[l] += ap_s2p[l + 2]; }
            for (int l = 0; l < 1; l++) { p1[l] += p1[l + 1]; ap_s2p[l] += ap_s2p[l + 1]; }
#endif
            a1 += p1[0]; ap_s2 += ap_s2p[0];
            if (jm < je) {
              #pragma omp simd simdlen(16) reduction(+:ap_s2) reduction(+:a1)
              for (int64_t j = jm; j < je; j++) {
                const float v0 = in0[b0 + j];
                const float ap_dd = v0 * v0;
                a1 += v0;
                ap_s2 += ap_dd;
              }
            }
          }
          const float s1 = t1 + a1;
          k1 += fabsf(t1) >= fabsf(a1) ? (t1 - s1) + a1 : (a1 - s1) + t1;
          t1 = s1;
          const float ap_s2s = ap_s2t + ap_s2;
          ap_s2k += fabsf(ap_s2t) >= fabsf(ap_s2) ? (ap_s2t - ap_s2s) + ap_s2 : (ap_s2 - ap_s2s) + ap_s2t;
          ap_s2t = ap_s2s;
        }
        a1 = fabsf(k1) < INFINITY ? t1 + k1 : t1;
        ap_s2 = fabsf(ap_s2k) < INFINITY ? ap_s2t + ap_s2k : ap_s2t;
      }
      ap_s1 = a1;
    } else {
      {
        const int64_t B = N >= 4096 ? 512 : N + (N == 0);
        float k1 = 0.0f, t1 = a1;
        float ap_s1k = 0.0f, ap_s1t = ap_s1;
        float ap_s2k = 0.0f, ap_s2t = ap_s2;
        for (int64_t jb = 0; jb < N; jb += B) {
          const int64_t je = jb + B < N ? jb + B : N;
          a1 = 0.0f;
          ap_s1 = 0.0f;
          ap_s2 = 0.0f;
          {
            int64_t jm = jb;
            float p1[32];
            for (int l = 0; l < 32; l++) { p1[l] = 0.0f; }
            float ap_s1p[32]; for (int l = 0; l < 32; l++) ap_s1p[l] = 0.0f;
            float ap_s2p[32]; for (int l = 0; l < 32; l++) ap_s2p[l] = 0.0f;
            for (; jm + 32 <= je; jm += 32) {
              #pragma omp simd simdlen(16)
              for (int64_t l = 0; l < 32; l++) {
                const int64_t j = jm + l;
                const float v0 = in0[b0 + j];
                const float ap_d = v0 - ap_k;
                const float ap_dd = ap_d * ap_d;
                p1[l] += v0;
                ap_s1p[l] += ap_d;
                ap_s2p[l] += ap_dd;
              }
            }
#if defined(__AVX512F__)
            p1[0] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(p1), _mm512_loadu_ps(p1 + 16)));
            ap_s1p[0] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(ap_s1p), _mm512_loadu_ps(ap_s1p + 16)));
            ap_s2p[0] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(ap_s2p), _mm512_loadu_ps(ap_s2p + 16)));
#else
            for (int l = 0; l < 16; l++) { p1[l] += p1[l + 16]; ap_s1p[l] += ap_s1p[l + 16]; ap_s2p[l] += ap_s2p[l + 16]; }
            for (int l = 0; l < 8; l++) { p1[l] += p1[l + 8]; ap_s1p[l] += ap_s1p[l + 8]; ap_s2p[l] += ap_s2p[l + 8]; }
            for (int l = 0; l < 4; l++) { p1[l] += p1[l + 4]; ap_s1p[l] += ap_s1p[l + 4]; ap_s2p[l] += ap_s2p[l + 4]; }
            for (int l = 0; l < 2; l++) { p1[l] += p1[l + 2]; ap_s1p[l] += ap_s1p[l + 2]; ap_s2p[l] += ap_s2p[l + 2]; }
            for (int l = 0; l < 1; l++) { p1[l] += p1[l + 1]; ap_s1p[l] += ap_s1p[l + 1]; ap_s2p[l] += ap_s2p[l + 1]; }
#endif
            a1 += p1[0]; ap_s1 += ap_s1p[0]; ap_s2 += ap_s2p[0];
            if (jm < je) {
              #pragma omp simd simdlen(16) reduction(+:ap_s1) reduction(+:ap_s2) reduction(+:a1)
              for (int64_t j = jm; j < je; j++) {
                const float v0 = in0[b0 + j];
                const float ap_d = v0 - ap_k;
                const float ap_dd = ap_d * ap_d;
                a1 += v0;
                ap_s1 += ap_d;
                ap_s2 += ap_dd;
              }
            }
          }
          const float s1 = t1 + a1;
          k1 += fabsf(t1) >= fabsf(a1) ? (t1 - s1) + a1 : (a1 - s1) + t1;
          t1 = s1;
          const float ap_s1s = ap_s1t + ap_s1;
          ap_s1k += fabsf(ap_s1t) >= fabsf(ap_s1) ? (ap_s1t - ap_s1s) + ap_s1 : (ap_s1 - ap_s1s) + ap_s1t;
          ap_s1t = ap_s1s;
          const float ap_s2s = ap_s2t + ap_s2;
          ap_s2k += fabsf(ap_s2t) >= fabsf(ap_s2) ? (ap_s2t - ap_s2s) + ap_s2 : (ap_s2 - ap_s2s) + ap_s2t;
          ap_s2t = ap_s2s;
        }
        a1 = fabsf(k1) < INFINITY ? t1 + k1 : t1;
        ap_s1 = fabsf(ap_s1k) < INFINITY ? ap_s1t + ap_s1k : ap_s1t;
        ap_s2 = fabsf(ap_s2k) < INFINITY ? ap_s2t + ap_s2k : ap_s2t;
      }
    }
    const float r1 = a1;
    const float r3 = (r1 / r2);
    float a6 = 0.0f;
    {
      const float ap_q = ap_s1 / (float)N;
      const float ap_v = ap_s2 - ap_s1 * ap_q;
      if (N >= 494 && ap_s2 <= 2.0f * ap_v && ap_s2 < INFINITY) {
        a6 = ap_v;
      } else {
      {
        const int64_t B = N >= 4096 ? 512 : N + (N == 0);
        float k6 = 0.0f, t6 = a6;
        for (int64_t jb = 0; jb < N; jb += B) {
          const int64_t je = jb + B < N ? jb + B : N;
          a6 = 0.0f;
          {
            int64_t jm = jb;
            float p6[32];
            for (int l = 0; l < 32; l++) { p6[l] = 0.0f; }
            for (; jm + 32 <= je; jm += 32) {
              #pragma omp simd simdlen(16)
              for (int64_t l = 0; l < 32; l++) {
                const int64_t j = jm + l;
                const float v0 = in0[b0 + j];
                const float v4 = (v0 - r3);
                const float v5 = (v4 * v4);
                p6[l] += v5;
              }
            }
#if defined(__AVX512F__)
            p6[0] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(p6), _mm512_loadu_ps(p6 + 16)));
#else
            for (int l = 0; l < 16; l++) { p6[l] += p6[l + 16]; }
            for (int l = 0; l < 8; l++) { p6[l] += p6[l + 8]; }
            for (int l = 0; l < 4; l++) { p6[l] += p6[l + 4]; }
            for (int l = 0; l < 2; l++) { p6[l] += p6[l + 2]; }
            for (int l = 0; l < 1; l++) { p6[l] += p6[l + 1]; }
#endif
            a6 += p6[0];
            if (jm < je) {
              #pragma omp simd simdlen(16) reduction(+:a6)
              for (int64_t j = jm; j < je; j++) {
                const float v0 = in0[b0 + j];
                const float v4 = (v0 - r3);
                const float v5 = (v4 * v4);
                a6 += v5;
              }
            }
          }
          const float s6 = t6 + a6;
          k6 += fabsf(t6) >= fabsf(a6) ? (t6 - s6) + a6 : (a6 - s6) + t6;
          t6 = s6;
        }
        a6 = fabsf(k6) < INFINITY ? t6 + k6 : t6;
      }
      }
    }
    const float r6 = a6;
    const float r7 = (r6 / r2);
    const float r9 = (r7 + r8);
    const float r10 = (1.0f / sqrtf(r9));
    int64_t jc = N;
    if (ap_stream) {
      jc = 0 + (((64 - ((uintptr_t)(out3 + r * N + 0) & 63)) & 63) >> 2);
      if (jc > N) jc = N;
    }
    #pragma omp simd simdlen(16)
    for (int64_t j = 0; j < jc; j++) {
      const float v0 = in0[b0 + j];
      const float v4 = (v0 - r3);
      const float v11 = (v4 * r10);
      const float v12 = in1[b1 + j];
      const float v13 = (v11 * v12);
      const float v14 = in2[b2 + j];
      const float v15 = (v13 + v14);
      out3[r * N + j] = v15;
    }
    for (; jc + 64 <= N; jc += 64) {
      if (N <= 8192) {
        __builtin_prefetch(in0 + b0 + ap_ahead * strides[0] + jc + 0);
        __builtin_prefetch(in0 + b0 + ap_ahead * strides[0] + jc + 16);
        __builtin_prefetch(in0 + b0 + ap_ahead * strides[0] + jc + 32);
        __builtin_prefetch(in0 + b0 + ap_ahead * strides[0] + jc + 48);
      }
      float t3[64] __attribute__((aligned(64)));
      #pragma omp simd simdlen(16)
      for (int64_t j = jc; j < jc + 64; j++) {
        const float v0 = in0[b0 + j];
        const float v4 = (v0 - r3);
        const float v11 = (v4 * r10);
        const float v12 = in1[b1 + j];
        const float v13 = (v11 * v12);
        const float v14 = in2[b2 + j];
        const float v15 = (v13 + v14);
        t3[j - jc] = v15;
      }
      for (int q = 0; q < 64; q += AP_NT_WIDTH) AP_NT_STORE(out3 + r * N + jc + q, t3 + q);
    }
    for (; jc + 16 <= N; jc += 16) {
      float t3[16] __attribute__((aligned(64)));
      #pragma omp simd simdlen(16)
      for (int64_t j = jc; j < jc + 16; j++) {
        const float v0 = in0[b0 + j];
        const float v4 = (v0 - r3);
        const float v11 = (v4 * r10);
        const float v12 = in1[b1 + j];
        const float v13 = (v11 * v12);
        const float v14 = in2[b2 + j];
        const float v15 = (v13 + v14);
        t3[j - jc] = v15;
      }
      for (int q = 0; q < 16; q += AP_NT_WIDTH) AP_NT_STORE(out3 + r * N + jc + q, t3 + q);
    }
    #pragma omp simd simdlen(16)
    for (int64_t j = jc; j < N; j++) {
      const float v0 = in0[b0 + j];
      const float v4 = (v0 - r3);
      const float v11 = (v4 * r10);
      const float v12 = in1[b1 + j];
      const float v13 = (v11 * v12);
      const float v14 = in2[b2 + j];
      const float v15 = (v13 + v14);
      out3[r * N + j] = v15;
    }
  }
  if (ap_stream) _mm_sfence();
  }
}
