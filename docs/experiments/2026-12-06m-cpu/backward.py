"""Training-style calls through autoperfect.jit: mx.value_and_grad of sum(f(x, ...) * c) over every
float argument, with the derivative's own fused kernels (runtime.Backward, the default), with MLX's
derivative of the function (`fused_vjp=False`), and MLX alone (eager, and mx.compile of the same
value_and_grad): 30 interleaved warm calls (mx.eval each) after the first, medians and each jit's
regions. Run: python backward.py (PYTHONPATH at a checkout; the kernel cache goes to a fresh temp
dir)."""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


def rms_norm(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def softmax(x):
    return mx.softmax(x, axis=-1)


def gelu(x):
    return 0.5 * x * (1 + mx.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def silu_gate(x, g):
    return x * mx.sigmoid(x) * g


CASES = [(layer_norm, [(4096, 1024), (1024,), (1024,)]), (rms_norm, [(4096, 1024), (1024,)]),
         (softmax, [(4096, 1024)]), (gelu, [(4096, 1024)]), (silu_gate, [(4096, 1024), (4096, 1024)])]
cache = tempfile.mkdtemp()
for fn, shapes in CASES:
    rng = np.random.default_rng(0)
    args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    c = mx.array(rng.standard_normal(shapes[0]).astype(np.float32))
    argnums = tuple(range(len(args)))

    def training(f):
        return mx.value_and_grad(lambda *a: mx.sum(f(*a) * c), argnums=argnums)

    fused, mlx_vjp = autoperfect.jit(fn, cache_dir=cache), autoperfect.jit(fn, cache_dir=cache, fused_vjp=False)
    calls = {"jit": training(fused), "jit_mlx_vjp": training(mlx_vjp), "mlx_eager": training(fn),
             "mlx_compile": mx.compile(training(fn))}
    want = calls["mlx_eager"](*args)
    for label, call in calls.items():
        t = time.perf_counter()
        got = call(*args)
        mx.eval(got)
        first = time.perf_counter() - t
        diff = max(float(np.max(np.abs(np.array(a) - np.array(b)) / (1 + np.abs(np.array(b)))))
                   for a, b in zip([got[0], *got[1]], [want[0], *want[1]]))
        print(f"{fn.__name__} {label}: first call {first * 1e3:.0f} ms, largest difference from MLX eager {diff:.1e}")
    (plan,) = fused._plans.values()
    print("  forward: " + "; ".join(r.runs + (f" [{r.variant}]" if r.variant else "") for r in fused.last_trace.regions))
    print("  backward: " + (plan.backward.last_trace.eager or "; ".join(
        r.runs + (f" [{r.variant}]" if r.variant else "") for r in plan.backward.last_trace.regions)))
    times = {k: [] for k in calls}
    for _ in range(30):
        for label, call in calls.items():
            t = time.perf_counter()
            mx.eval(call(*args))
            times[label].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    print("  warm: " + ", ".join(f"{k} {v:.2f} ms" for k, v in med.items())
          + f" (jit {med['mlx_eager'] / med['jit']:.2f}x over eager, {med['mlx_compile'] / med['jit']:.2f}x over"
          f" compile, {med['jit_mlx_vjp'] / med['jit']:.2f}x over MLX's derivative)")
