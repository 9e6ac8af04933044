"""How far MLX's CPU functions are from float64, in float32 ulps, over the judge's ramp (400001
points evenly in [-64, 64]; log, log1p, rsqrt and pow where their domain meets it): the measurement
behind bounds.MLX_ULPS, the allowance the jit's gate gives the functions MLX computes (every region
but the gated kernel's). For each: its largest error within |x| <= R, and the least slope c with
error <= ULP_BOUND + c |x| at every point; and the largest absolute error (erf's is absolute: 0 for
erf(4e-16)). On another device (MLX's CUDA build) it measures that device's (the default).

    python docs/experiments/2026-12-07l-cpu/mlx_function_ulps.py
"""
import math

import mlx.core as mx
import numpy as np

from autoperfect.ops import ULP_BOUND, Op

print("device:", mx.default_device())
x = np.linspace(-64, 64, 400001).astype(np.float32)
x = np.concatenate([x, np.float32(10.0) ** np.linspace(-30, 0, 20001).astype(np.float32)])  # and near 0
pos = x[x > 0]
FUNCTIONS = {
    Op.EXP: (x, mx.exp, np.exp), Op.SIGMOID: (x, mx.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    Op.TANH: (x, mx.tanh, np.tanh), Op.EXPM1: (x, mx.expm1, np.expm1),
    Op.ERF: (x, mx.erf, np.vectorize(math.erf)), Op.SIN: (x, mx.sin, np.sin), Op.COS: (x, mx.cos, np.cos),
    Op.LOG: (pos, mx.log, np.log), Op.LOG1P: (pos, mx.log1p, np.log1p), Op.RSQRT: (pos, mx.rsqrt, lambda v: v ** -0.5),
    Op.POW: (pos, lambda v: mx.power(v, mx.array(1.7, mx.float32)), lambda v: v ** np.float64(np.float32(1.7))),
}
for op, (xs, ours, ref) in FUNCTIONS.items():
    xd = xs.astype(np.float64)
    got, want = np.array(ours(mx.array(xs))).astype(np.float64), ref(xd)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    judged = np.isfinite(want) & (np.abs(want) > 2.0 ** -126) & (np.abs(want) < 3e38)
    err = np.where(judged, np.abs(got - want) / ulp, 0.0)
    slope = np.max((err - ULP_BOUND[op]) / np.maximum(np.abs(xd), 1e-30), initial=0.0)
    print(f"{op.value:8s}", " ".join(f"|x|<={r}: {err[np.abs(xs) <= r].max():6.1f}" for r in (4, 8, 16, 64)),
          f"  beyond {ULP_BOUND[op]} ulps: {max(slope, 0.0):.3f} |x|;  absolute error at most {np.max(np.abs(got - want), where=judged, initial=0.0):.3g}"
          f" ({np.max(np.abs(got - want), where=judged & (np.abs(want) < 1), initial=0.0) / 2.0 ** -23:.2f} ulps of 1 where |f| < 1)")
