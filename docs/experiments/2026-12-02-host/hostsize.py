"""Host cost of a bound launch (Kernel.bind) against MLX's softmax and exp by size, and by how many calls
are queued before one eval (10, 100, 1000), best and median of 5 rounds, us a call:

    PYTHONPATH=. python docs/experiments/2026-12-02-host/hostsize.py
"""
import time, mlx.core as mx, numpy as np
from autoperfect import backends
from autoperfect.generate import provider
from autoperfect.runtime import front_of
from autoperfect.trace import trace
def softmax(x): return mx.softmax(x, axis=-1)
be = backends.get(backends.for_default_device())
for shape in [(1, 4096), (64, 4096), (4096, 4096)]:
    x = mx.random.normal(shape); mx.eval(x)
    f = front_of(trace(softmax, [("x", shape, "float32")])); (k,) = [k for k in f.kernels if k is not None]
    built = be.build(provider("compiler").generate(k, be.NAME if hasattr(be, "NAME") else "cuda")[0].source)
    kern = be.Kernel(k, built.library); b = kern.bind(k.launch); mx.eval(b([x]))
    for n in (10, 100, 1000):
        for name, c in (("bound", lambda: b([x])[0]), ("mlx", lambda: softmax(x)), ("exp", lambda: mx.exp(x))):
            ts = []
            for _ in range(5):
                outs = []; s = time.perf_counter()
                for _ in range(n): outs.append(c())
                ts.append((time.perf_counter() - s) / n * 1e6); mx.eval(outs); del outs
            print(shape, n, name, round(min(ts), 2), round(float(np.median(ts)), 2), flush=True)
