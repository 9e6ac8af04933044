"""e^r - 1 on ap_tanhf's reduced range |r| <= ln2/2 as r + r^2 q(r), q of degree DEG (default 5)
fitted by least squares of the relative error on 2000 Chebyshev nodes (vmath.c's exp was fitted the
same way): the worst relative error on a fine grid in units of 2^-24 before rounding, and q's
coefficients (lowest degree first) rounded to float32 as C hex floats.

    python docs/experiments/2026-12-05-cpu/fit_expm1.py [DEG]
"""
import sys

import numpy as np

DEG = int(sys.argv[1]) if len(sys.argv) > 1 else 5
half = np.log(2) / 2
nodes = half * np.cos(np.pi * (np.arange(2000) + 0.5) / 2000)
weight = 1 / np.expm1(nodes)
terms = np.stack([nodes ** (k + 2) for k in range(DEG + 1)], axis=1)
coef, *_ = np.linalg.lstsq(terms * weight[:, None], (np.expm1(nodes) - nodes) * weight, rcond=None)
r = np.linspace(-half, half, 400001)
r = r[r != 0]
m = r + sum(c * r ** (k + 2) for k, c in enumerate(coef))
print(f"degree {DEG}: worst relative error {np.max(np.abs(m / np.expm1(r) - 1)) / 2.0 ** -24:.3f} units of 2^-24")
print("q:", " ".join(float(np.float32(c)).hex() for c in coef))
