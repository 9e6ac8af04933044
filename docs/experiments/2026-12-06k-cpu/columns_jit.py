"""autoperfect.jit on reductions over a leading or middle axis (float32), each function's first call
racing its kernels against MLX's own ops (interleaved, bootstrap interval: Jit._race), then 30
interleaved warm calls of jit and of MLX eager (mx.eval each), medians. Run: python columns_jit.py
(PYTHONPATH at a checkout; the kernel cache goes to a fresh temp dir)."""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect

CASES = {
    "max0": (lambda x: mx.max(x, axis=0), (4096, 512)),
    "var0": (lambda x: mx.var(x, axis=0), (4096, 512)),
    "logsumexp0": (lambda x: mx.logsumexp(x, axis=0), (4096, 512)),
    "middle_sum": (lambda x: mx.sum(x, axis=1), (64, 256, 256)),
    "batch_mean_var": (lambda x: (mx.mean(x, axis=0), mx.var(x, axis=0)), (8192, 256)),
}
cache = tempfile.mkdtemp()
for name, (fn, shape) in CASES.items():
    x = mx.array(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    j = autoperfect.jit(fn, cache_dir=cache)
    got, want = j(x), fn(x)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    ok = all(np.allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6) for a, b in zip(got, want))
    print(f"{name} {shape}: matches MLX: {ok}")
    print("  " + j.last_trace.describe().replace("\n", "\n  "))
    t_j, t_m = [], []
    for _ in range(30):
        for f, ts in ((j, t_j), (fn, t_m)):
            t = time.perf_counter()
            mx.eval(f(x))
            ts.append(time.perf_counter() - t)
    print(f"  warm: jit {np.median(t_j) * 1e6:.1f} us, MLX eager {np.median(t_m) * 1e6:.1f} us "
          f"({np.median(t_m) / np.median(t_j):.2f}x)")
