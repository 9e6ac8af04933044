/* The worst error in ulps over every positive float32 below 9.03 of x P(x^2)/Q(x^2) evaluated in
   float32 with fused multiply-adds (Horner), for the coefficients given as arguments (lowest degree
   first, P's then Q's, P0 = Q0 = 1 omitted): `gcc -O2 -march=native tanh_ulp.c -lm -o tanh_ulp &&
   ./tanh_ulp NP p1..pNP q1..qNQ` (hex floats, as fit_tanh.py prints them). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

int main(int argc, char **argv) {
  int np = atoi(argv[1]), nq = argc - 2 - np;
  float p[16], q[16];
  for (int k = 0; k < np; k++) p[k] = strtof(argv[2 + k], 0);
  for (int k = 0; k < nq; k++) q[k] = strtof(argv[2 + np + k], 0);
  double worst = 0; float at = 0;
  for (uint32_t u = 1; ; u++) {
    float x = bits(u);
    if (x > 9.03f) break;
    float t = x * x, P = p[np - 1], Q = q[nq - 1];
    for (int k = np - 2; k >= 0; k--) P = fmaf(P, t, p[k]);
    P = fmaf(P, t, 1.0f);
    for (int k = nq - 2; k >= 0; k--) Q = fmaf(Q, t, q[k]);
    Q = fmaf(Q, t, 1.0f);
    float r = (x * P) / Q;
    if (r > 1.0f) r = 1.0f;
    double e = tanh((double)x);
    int ex; frexp(e, &ex);
    double ulp = ldexp(1.0, ex - 24);
    if (ulp < ldexp(1.0, -149)) ulp = ldexp(1.0, -149);
    double err = fabs(r - e) / ulp;
    if (err > worst) { worst = err; at = x; }
  }
  printf("worst %.3f ulp at %a\n", worst, at);
  return 0;
}
