/* ap_expf and ap_tanhf at two commits, over every float32: how many results differ in their bits.
   The older vmath.c's symbols get the prefix old_ (objcopy), so both link into one program:
     git show 59170d4:autoperfect/backends/vmath.c > /tmp/old/vmath.c   (and vmath_avx512.h beside it)
     F="-O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math"
     gcc $F -c -o /tmp/old/old.o /tmp/old/vmath.c && objcopy --prefix-symbols=old_ /tmp/old/old.o /tmp/old/old3.o
     gcc $F -c -o /tmp/new.o autoperfect/backends/vmath.c
     gcc -O2 -o /tmp/same_bits docs/experiments/2026-12-05-cpu/same_bits.c /tmp/new.o /tmp/old/old3.o -lm && /tmp/same_bits
   c9ac56b (the shared reduction written once) against 59170d4: exp 0, tanh 0. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
float ap_expf(float);
float ap_tanhf(float);
float old_ap_expf(float);
float old_ap_tanhf(float);

int main(void) {
  uint64_t de = 0, dt = 0;
  for (uint64_t u = 0; u < (1ull << 32); u++) {
    uint32_t w = (uint32_t)u;
    float x;
    memcpy(&x, &w, 4);
    float a = ap_expf(x), b = old_ap_expf(x), c = ap_tanhf(x), d = old_ap_tanhf(x);
    de += memcmp(&a, &b, 4) != 0;
    dt += memcmp(&c, &d, 4) != 0;
  }
  printf("differing results over every float32: exp %llu, tanh %llu\n", (unsigned long long)de, (unsigned long long)dt);
}
