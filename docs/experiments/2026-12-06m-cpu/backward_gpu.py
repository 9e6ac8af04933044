"""The fused derivative on MLX's CUDA build (the lent H200): mx.value_and_grad of sum(f(x) * c)
through autoperfect.jit (backend auto: cuda) against MLX, the backward's regions, 30 interleaved
warm calls. Run on the device: python backward_gpu.py (PYTHONPATH=/tmp/site:<checkout>)."""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


def softmax(x):
    return mx.softmax(x, axis=-1)


print(mx.default_device())
cache = tempfile.mkdtemp()
for fn, shapes in ((layer_norm, [(4096, 1024), (1024,), (1024,)]), (softmax, [(4096, 1024)])):
    rng = np.random.default_rng(0)
    args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    c = mx.array(rng.standard_normal(shapes[0]).astype(np.float32))
    argnums = tuple(range(len(args)))
    jitted = autoperfect.jit(fn, cache_dir=cache)
    calls = {k: mx.value_and_grad(lambda *a, f=f: mx.sum(f(*a) * c), argnums=argnums)
             for k, f in (("jit", jitted), ("mlx", fn))}
    t = time.perf_counter()
    got = calls["jit"](*args)
    mx.eval(got)
    print(f"{fn.__name__}: first call {time.perf_counter() - t:.1f} s")
    want = calls["mlx"](*args)
    print("  largest difference:", max(float(mx.max(mx.abs(a - b) / (1 + mx.abs(b)))) for a, b in
                                        zip([got[0], *got[1]], [want[0], *want[1]])))
    (plan,) = jitted._plans.values()
    print("  forward:", jitted.last_trace.describe().splitlines()[:4])
    print("  backward:", plan.backward.last_trace.describe().splitlines() if plan.backward.last_trace else None)
    times = {k: [] for k in calls}
    for _ in range(30):
        for k, f in calls.items():
            t = time.perf_counter()
            mx.eval(f(*args))
            times[k].append(time.perf_counter() - t)
    print("  warm medians (ms):", {k: round(float(np.median(v)) * 1e3, 3) for k, v in times.items()})
