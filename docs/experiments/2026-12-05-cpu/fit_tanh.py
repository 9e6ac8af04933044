"""A rational tanh for float32: tanh(x) ~ x P(x^2) / Q(x^2) on |x| <= HI (beyond, +-1), P of degree
NP and Q of degree NQ in x^2, P(0) = Q(0) = 1 (so tiny x give x). The coefficients minimize the
largest relative error on a grid by Lawson's iteration over weighted linear least squares (the
rational's error linearized around the last Q), in float64, on x^2 scaled to [0, 1]; then rounded to
float32. Prints the worst relative error in units of 2^-24 before rounding, and the coefficients
(lowest degree first) as C hex floats.

    python docs/experiments/2026-12-05-cpu/fit_tanh.py [NP NQ]
"""
import sys

import numpy as np

NP, NQ = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (6, 3)
HI = 9.02  # tanh(x) rounds to 1.0f from 9.01 on
x = np.concatenate([np.linspace(1e-4, HI, 60001), HI * np.sin(np.linspace(0, np.pi / 2, 20001))[1:]])
y = np.tanh(x)
s = (x / HI) ** 2  # x^2 scaled
# Unknowns: P's p1..pNP and Q's q1..qNQ (in s). Residual x P(s) - y Q(s) = (y - x) + x sum p_k s^k - y sum q_k s^k.
A = np.concatenate([x[:, None] * s[:, None] ** np.arange(1, NP + 1), -y[:, None] * s[:, None] ** np.arange(1, NQ + 1)], axis=1)
b = y - x
q_prev = np.ones_like(x)
w = np.ones_like(x) / len(x)
for it in range(60):
    scale = np.sqrt(w) / (y * q_prev)
    coef, *_ = np.linalg.lstsq(A * scale[:, None], b * scale, rcond=None)
    p = np.concatenate([[1.0], coef[:NP]])
    q = np.concatenate([[1.0], coef[NP:]])
    P = np.polyval(p[::-1], s)
    Q = np.polyval(q[::-1], s)
    err = x * P / Q / y - 1
    q_prev = Q
    w = w * np.abs(err)
    w /= w.sum()
worst = np.max(np.abs(err))
print(f"P degree {NP}, Q degree {NQ} (in x^2): worst relative error {worst / 2.0 ** -24:.3f} units of 2^-24")
pc = p / HI ** (2 * np.arange(NP + 1))
qc = q / HI ** (2 * np.arange(NQ + 1))
print("P:", " ".join(float(np.float32(c)).hex() for c in pc))
print("Q:", " ".join(float(np.float32(c)).hex() for c in qc))
