# Variants of f03: which bf16 functions whose row max is taken over an unrounded product go wrong
import numpy as np, mlx.core as mx, autoperfect
bf = lambda v: mx.array(np.array(v, np.float32)).astype(mx.bfloat16)
cases = {
  "softmax(x*3.0)": (lambda x: mx.softmax(x * 3.0, axis=-1), [[1.0, 2.0, 3.0, 4.0]], [[2550000.0, 1.0, -3.0, 2.0]]),
  "logsumexp(x*y)": (lambda x, y: mx.logsumexp(x * y, axis=-1), ([[1.0, 2.0, 3.0, 4.0]], [[1.0] * 4]), ([[255.0, 1.0, -3.0, 2.0]], [[30000.0, 1.0, 1.0, 1.0]])),
  "softmax(x+y)": (lambda x, y: mx.softmax(x + y, axis=-1), ([[1.0, 2.0, 3.0, 4.0]], [[1.0] * 4]), ([[7634944.0, 1.0, -3.0, 2.0]], [[15000.0, 1.0, 1.0, 1.0]])),
  "softmax(exp(x))": (lambda x: mx.softmax(mx.exp(x), axis=-1), [[1.0, 2.0, 3.0, 4.0]], [[15.8, 1.0, -3.0, 2.0]]),
}
for name, (f, a0, a1) in cases.items():
    two = isinstance(a0, tuple)
    args0 = [bf(v) for v in a0] if two else [bf(a0)]
    args1 = [bf(v) for v in a1] if two else [bf(a1)]
    j = autoperfect.jit(f, race=False)
    j(*args0)
    print(f"{name}: jit {np.asarray(j(*args1).astype(mx.float32)).tolist()}  mlx {np.asarray(f(*args1).astype(mx.float32)).tolist()}  [{j.last_trace.regions[0].runs}]")
