/* Softmax 4096x1024's kernel by hand (the candidates' ABI), in AVX-512 intrinsics: four max
   accumulators, two sum accumulators, the exps kept in a row buffer on the stack, the final pass
   streamed. AP_EXP16 is the exp of 16 floats: our exp's AVX-512 form inlined (ap_expf_v16, from
   autoperfect/backends/vmath_avx512.h) or vmath.c's entry point called (_ZGVeN16v_ap_expf).
   Plain: the next rows' lines prefetched two rows on from the exp pass. AP_PIPELINED: each row's
   final pass moved into the next row's exp pass (its streamed stores spread over the exps instead
   of a burst at the end of the row), the next row prefetched; rows of a multiple of 32 floats.
   `python docs/experiments/2026-12-04g-cpu/variants.py DIR` writes the three sources timed in the
   README (DIR/hand_inline.c, DIR/hand_call.c, DIR/pipelined.c). */
#if !defined(AP_PIPELINED)
void k_81ce194d1b274a87(void **bufs, const int64_t *dims, const int64_t *strides) {
  const float *restrict in0 = (const float *)bufs[0];
  float *restrict out1 = (float *)bufs[1];
  const int64_t N = dims[1];
  const int64_t R = dims[0];
  const int ap_stream = R * N * 4 >= 16777216 && N <= 8192;
  #pragma omp parallel if(R * N >= 32768)
  {
  float ap_buf[8192] __attribute__((aligned(64)));
  #pragma omp for schedule(static)
  for (int64_t r = 0; r < R; r++) {
    const float *x = in0 + r * strides[0];
    float *o = out1 + r * N;
    float *e = N <= 8192 ? ap_buf : o;
    int64_t j = 0;
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (; j + 64 <= N; j += 64) {
      m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + j));
      m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + j + 16));
      m2 = _mm512_max_ps(m2, _mm512_loadu_ps(x + j + 32));
      m3 = _mm512_max_ps(m3, _mm512_loadu_ps(x + j + 48));
    }
    for (; j < N; j += 16) {
      const __mmask16 k = N - j >= 16 ? 0xFFFF : (__mmask16)((1u << (N - j)) - 1);
      m0 = _mm512_mask_max_ps(m0, k, m0, _mm512_maskz_loadu_ps(k, x + j));
    }
    const float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
    const __m512 mv = _mm512_set1_ps(m);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    j = 0;
    for (; j + 32 <= N; j += 32) {
      _mm_prefetch((const char *)(x + 2 * strides[0] + j), _MM_HINT_T0); _mm_prefetch((const char *)(x + 2 * strides[0] + j + 16), _MM_HINT_T0);
      const __m512 e0 = AP_EXP16(_mm512_sub_ps(_mm512_loadu_ps(x + j), mv));
      const __m512 e1 = AP_EXP16(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), mv));
      _mm512_store_ps(e + j, e0); _mm512_store_ps(e + j + 16, e1);
      s0 = _mm512_add_ps(s0, e0); s1 = _mm512_add_ps(s1, e1);
    }
    for (; j < N; j += 16) {
      const __mmask16 k = N - j >= 16 ? 0xFFFF : (__mmask16)((1u << (N - j)) - 1);
      const __m512 e0 = AP_EXP16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), mv));
      _mm512_mask_storeu_ps(e + j, k, e0);
      s0 = _mm512_mask_add_ps(s0, k, s0, e0);
    }
    const float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    const __m512 q = _mm512_set1_ps(1.0f / s);
    j = 0;
    if (ap_stream) {
      int64_t a = ((64 - ((uintptr_t)o & 63)) & 63) >> 2;
      if (a > N) a = N;
      if (a) _mm512_mask_storeu_ps(o, (__mmask16)((1u << a) - 1), _mm512_mul_ps(_mm512_loadu_ps(e), q));
      j = a;
      for (; j + 16 <= N; j += 16) _mm512_stream_ps(o + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), q));
    }
    for (; j < N; j += 16) {
      const __mmask16 k = N - j >= 16 ? 0xFFFF : (__mmask16)((1u << (N - j)) - 1);
      _mm512_mask_storeu_ps(o + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, e + j), q));
    }
  }
  if (ap_stream) _mm_sfence();
  }
}
#else
void k_81ce194d1b274a87(void **bufs, const int64_t *dims, const int64_t *strides) {
  const float *restrict in0 = (const float *)bufs[0];
  float *restrict out1 = (float *)bufs[1];
  const int64_t N = dims[1];
  const int64_t R = dims[0];
  const int al = ((uintptr_t)out1 & 63) == 0 && (N & 15) == 0;
  #pragma omp parallel if(R * N >= 32768)
  {
  float buf[2][4096] __attribute__((aligned(64)));
  const int T = omp_get_num_threads(), t = omp_get_thread_num();
  const int64_t r0 = R * t / T, r1 = R * (t + 1) / T;
  __m512 qp = _mm512_setzero_ps();
  for (int64_t r = r0; r < r1; r++) {
    const float *x = in0 + r * strides[0];
    float *e = buf[r & 1];
    const float *ep = buf[(r - 1) & 1];
    float *op = out1 + (r - 1) * N;
    const int prev = r > r0;
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (int64_t j = 0; j < N; j += 64) {
      m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + j));
      m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + j + 16));
      m2 = _mm512_max_ps(m2, _mm512_loadu_ps(x + j + 32));
      m3 = _mm512_max_ps(m3, _mm512_loadu_ps(x + j + 48));
    }
    const __m512 mv = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3))));
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (int64_t j = 0; j < N; j += 32) {
      _mm_prefetch((const char *)(x + 1 * strides[0] + j), _MM_HINT_T0);
      _mm_prefetch((const char *)(x + 1 * strides[0] + j + 16), _MM_HINT_T0);
      const __m512 e0 = AP_EXP16(_mm512_sub_ps(_mm512_loadu_ps(x + j), mv));
      const __m512 e1 = AP_EXP16(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), mv));
      _mm512_store_ps(e + j, e0); _mm512_store_ps(e + j + 16, e1);
      s0 = _mm512_add_ps(s0, e0); s1 = _mm512_add_ps(s1, e1);
      if (prev) {
        if (al) { _mm512_stream_ps(op + j, _mm512_mul_ps(_mm512_load_ps(ep + j), qp));
        _mm512_stream_ps(op + j + 16, _mm512_mul_ps(_mm512_load_ps(ep + j + 16), qp)); } else { _mm512_storeu_ps(op + j, _mm512_mul_ps(_mm512_load_ps(ep + j), qp));
        _mm512_storeu_ps(op + j + 16, _mm512_mul_ps(_mm512_load_ps(ep + j + 16), qp)); }
      }
    }
    qp = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
  }
  if (r1 > r0) {
    const float *ep = buf[(r1 - 1) & 1];
    float *op = out1 + (r1 - 1) * N;
    for (int64_t j = 0; j < N; j += 16) _mm512_storeu_ps(op + j, _mm512_mul_ps(_mm512_load_ps(ep + j), qp));
  }
  _mm_sfence();
  }
}
#endif
