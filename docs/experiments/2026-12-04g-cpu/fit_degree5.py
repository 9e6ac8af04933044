"""How close a degree-5 polynomial gets to e^r over ap_expf's reduced range |r| <= ln2/2, with c0 = c1 = 1
fixed and c2..c5 fitted by least squares of the relative error on 2000 Chebyshev nodes (as vmath.c's
degree-6 fit was made): the worst relative error on a fine grid, in units of 2^-24, before any
rounding. `python docs/experiments/2026-12-04g-cpu/fit_degree5.py` prints 1.96."""
import numpy as np

half = np.log(2) / 2
nodes = half * np.cos(np.pi * (np.arange(2000) + 0.5) / 2000)
weight = np.exp(-nodes)  # relative error: divide each row by e^r
terms = np.stack([nodes ** k for k in range(2, 6)], axis=1)
coef, *_ = np.linalg.lstsq(terms * weight[:, None], (np.exp(nodes) - 1 - nodes) * weight, rcond=None)
r = np.linspace(-half, half, 200001)
p = 1 + r + sum(c * r ** (k + 2) for k, c in enumerate(coef))
print(f"{np.max(np.abs(p / np.exp(r) - 1)) / 2.0 ** -24:.2f}")
