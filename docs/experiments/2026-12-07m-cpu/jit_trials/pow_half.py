# mx.power(x, 0.5) under autoperfect.jit: -inf gives NaN (MLX: +inf); -0.0 sign checked too
import numpy as np, mlx.core as mx, autoperfect
def f(x):
    return mx.power(x, 0.5)
j = autoperfect.jit(f, race=False)
j(mx.array(np.linspace(0.1, 2, 64, dtype=np.float32)))          # first call: compiled, checked, agrees
x = mx.array(np.array([-np.inf, -0.0, 0.0, 4.0, -1.0, np.inf] + [1.0] * 58, np.float32))
got, want = j(x), f(x)
print("jit :", np.asarray(got)[:6].tolist(), "signbit", np.signbit(np.asarray(got)[:3]).tolist())
print("mlx :", np.asarray(want)[:6].tolist(), "signbit", np.signbit(np.asarray(want)[:3]).tolist())
print("numpy:", np.power(np.array([-np.inf, -0.0, 0.0, 4.0, -1.0, np.inf], np.float32), np.float32(0.5)).tolist())
print(j.last_trace.describe())
