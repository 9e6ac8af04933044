"""A whole training step through autoperfect.jit (mx.value_and_grad inside the jitted function: the
tracer writes the derivative into its graph): a LayerNorm layer's loss against a target, its
gradients in the weight and bias, and the SGD update, at 4096x1024; against MLX eager and
mx.compile of the same step, 30 interleaved warm calls (mx.eval each) after the first, medians.
Run: python train_step.py (PYTHONPATH at a checkout; the kernel cache in a fresh temp dir)."""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect


def step(x, w, b, t):
    def layer(x, w, b):
        m = mx.mean(x, axis=-1, keepdims=True)
        return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b

    loss, (gw, gb) = mx.value_and_grad(lambda w, b: mx.mean((layer(x, w, b) - t) ** 2), argnums=(0, 1))(w, b)
    return loss, w - 0.1 * gw, b - 0.1 * gb


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in ((4096, 1024), (1024,), (1024,), (4096, 1024))]
    calls = {"jit": autoperfect.jit(step, cache_dir=tempfile.mkdtemp()), "mlx_eager": step, "mlx_compile": mx.compile(step)}
    for label, call in calls.items():
        t = time.perf_counter()
        mx.eval(call(*args))
        print(f"{label}: first call {(time.perf_counter() - t) * 1e3:.0f} ms")
    got, want = calls["jit"](*args), step(*args)
    print("largest difference from MLX eager (relative to 1 + |MLX's|):",
          max(float(mx.max(mx.abs(a - b) / (1 + mx.abs(b)))) for a, b in zip(got, want)))
    print(calls["jit"].last_trace.describe())
    times = {k: [] for k in calls}
    for _ in range(30):
        for label, call in calls.items():
            t = time.perf_counter()
            mx.eval(call(*args))
            times[label].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    print("warm: " + ", ".join(f"{k} {v:.2f} ms" for k, v in med.items())
          + f" (jit {med['mlx_eager'] / med['jit']:.2f}x over eager, {med['mlx_compile'] / med['jit']:.2f}x over compile)")
