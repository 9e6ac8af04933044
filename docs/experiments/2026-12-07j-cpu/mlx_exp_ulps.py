"""How far MLX's CPU functions are from float64, in float32 ulps, over |x| <= R (400001 points
evenly in [-64, 64]): why the jit's gate leaves the judge's ramp class out (runtime.GATE_SKIPS).

    python docs/experiments/2026-12-07j-cpu/mlx_exp_ulps.py
"""
import mlx.core as mx
import numpy as np

x = np.linspace(-64, 64, 400001).astype(np.float32)
xd = x.astype(np.float64)
for name, ours, ref in (("exp", mx.exp, np.exp), ("sigmoid", mx.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
                        ("tanh", mx.tanh, np.tanh), ("expm1", mx.expm1, np.expm1)):
    got, want = np.array(ours(mx.array(x))).astype(np.float64), ref(xd)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    err = np.where(np.isfinite(want) & (np.abs(want) > 1e-37), np.abs(got - want) / ulp, 0.0)
    print(name, " ".join(f"|x|<={r}: {err[np.abs(x) <= r].max():.1f}" for r in (4, 8, 16, 64)))
