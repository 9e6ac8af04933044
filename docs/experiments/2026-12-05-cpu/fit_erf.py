"""Whether an erf of ours (for GELU on erf, configs/unseen.yaml's linear_gelu) would pay: erf(a) = a P(a^2)
below T and 1 - e^(-a^2) R(a) from T to 4 (erf rounds to 1 beyond), P and R fitted by least squares
(relative error below T, erfc's absolute error above, which is what erf's ulp near 1 sees). Prints
both fits' worst errors in units of 2^-24 before rounding and the coefficients as C hex floats.

    python docs/experiments/2026-12-05-cpu/fit_erf.py [T NS NL]     (default 0.9 6 10)
"""
import sys, math
import numpy as np
from math import erf, erfc
T = float(sys.argv[1]) if len(sys.argv) > 1 else 0.9
NS, NL = (int(a) for a in sys.argv[2:4]) if len(sys.argv) > 3 else (6, 10)
HI = 4.0
verf = np.vectorize(erf); verfc = np.vectorize(erfc)
# small: erf(a) = a * P(a^2), P degree NS, relative error
nodes = T / 2 * (1 + np.cos(np.pi * (np.arange(3000) + 0.5) / 3000))
nodes = nodes[nodes > 1e-6]
y = verf(nodes) / nodes
A = np.stack([nodes ** (2 * k) for k in range(NS + 1)], axis=1)
w = 1 / y
ps, *_ = np.linalg.lstsq(A * w[:, None], y * w, rcond=None)
g = np.linspace(1e-6, T, 200001)
e_small = np.max(np.abs(g * np.polyval(ps[::-1], g * g) / verf(g) - 1)) / 2 ** -24
# large: erfc(a) = exp(-a^2) R(a), error measured in erf's units: |erfc error| / ulp(erf) ~ / 2^-24
nodes = T + (HI - T) / 2 * (1 + np.cos(np.pi * (np.arange(3000) + 0.5) / 3000))
R = verfc(nodes) * np.exp(nodes ** 2)
A = np.stack([(nodes - T) ** k for k in range(NL + 1)], axis=1)  # centred at T for conditioning
w = np.exp(-nodes ** 2)  # absolute error of erfc
pl, *_ = np.linalg.lstsq(A * w[:, None], R * w, rcond=None)
g = np.linspace(T, HI, 200001)
approx = np.exp(-g * g) * np.polyval(pl[::-1], g - T)
e_large = np.max(np.abs(approx - verfc(g))) / 2 ** -24
print(f"T={T} small degree {NS}: {e_small:.3f} units of 2^-24 (relative); large degree {NL}: {e_large:.3f} units of 2^-24 (absolute)")
print("P:", " ".join(float(np.float32(c)).hex() for c in ps))
print("R:", " ".join(float(np.float32(c)).hex() for c in pl))
