// Every float32 bit pattern through three roundings to float16 precision, compared bit for bit:
// the prelude's two-step form (ap_f16_value(ap_f16_bits(f))), its direct form (ap_round_f16 as
// cfamily renders it since 2026-12-06) and the hardware's (vcvtps2ph then vcvtph2ps, round to
// nearest even). Then both prelude forms timed over a buffer in L1, one thread.
// Run: python round_f16.py, which writes the prelude to a temporary prelude.h and builds this with
// the backend's flags and -march=native.
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <immintrin.h>
#include "prelude.h"  // written by round_f16.py from autoperfect.backends.cfamily.PRELUDE

static inline float two_step(float f) { return ap_f16_value(ap_f16_bits(f)); }

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

#define B 4096
float buf[B], out[B];

int main(void) {
  uint64_t differ_direct = 0, differ_hw = 0, nan = 0;
  for (uint64_t i = 0; i < (1ull << 32); i += 16) {
    union { uint32_t u[16]; float f[16]; __m512 v; } x, hw;
    for (int l = 0; l < 16; l++) x.u[l] = (uint32_t)(i + l);
    hw.v = _mm512_cvtph_ps(_mm512_cvtps_ph(x.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (int l = 0; l < 16; l++) {
      union { uint32_t u; float f; } a, b;
      a.f = two_step(x.f[l]);
      b.f = ap_round_f16(x.f[l]);
      differ_direct += a.u != b.u;
      differ_hw += a.u != hw.u[l];
      nan += x.f[l] != x.f[l];
    }
  }
  printf("all 2^32 floats (%llu NaN): direct form differs from the two-step form in %llu, the hardware in %llu\n",
         (unsigned long long)nan, (unsigned long long)differ_direct, (unsigned long long)differ_hw);
  for (int i = 0; i < B; i++) buf[i] = (float)(i - B / 2) * 0.37f;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    for (int k = 0; k < 100000; k++) {
      #pragma omp simd
      for (int i = 0; i < B; i++) out[i] = two_step(buf[i]) * 1.0001f;
      __asm__ volatile("" ::: "memory");
    }
    double t1 = now();
    for (int k = 0; k < 100000; k++) {
      #pragma omp simd
      for (int i = 0; i < B; i++) out[i] = ap_round_f16(buf[i]) * 1.0001f;
      __asm__ volatile("" ::: "memory");
    }
    double t2 = now();
    printf("ns per element, in L1: two-step %.4f, direct %.4f\n", (t1 - t0) / (1e5 * B) * 1e9, (t2 - t1) / (1e5 * B) * 1e9);
  }
  return 0;
}
