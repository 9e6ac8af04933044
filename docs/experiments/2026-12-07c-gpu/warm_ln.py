"""Where a warm LayerNorm mx.value_and_grad through autoperfect.jit spends its time on MLX's CUDA
build: the forward alone, the value_and_grad with the fused backward (default) and with MLX's
derivative (fused_vjp=False), against MLX's own, 30 interleaved warm calls each; then the fused
backward's trace of a warm call and the jit's stats. Run on the device: python warm_ln.py
(PYTHONPATH=/tmp/site:<checkout>; GC=freeze or GC=off: the garbage collector frozen after the first
calls, or off)."""
import gc
import os
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


print(mx.default_device())
cache = tempfile.mkdtemp()
rng = np.random.default_rng(0)
args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in [(4096, 1024), (1024,), (1024,)]]
c = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
fused, mlx_vjp = autoperfect.jit(layer_norm, cache_dir=cache), autoperfect.jit(layer_norm, cache_dir=cache, fused_vjp=False)


def training(f):
    return mx.value_and_grad(lambda *a: mx.sum(f(*a) * c), argnums=(0, 1, 2))


calls = {"forward jit": fused, "forward mlx": layer_norm, "vg jit": training(fused),
         "vg jit_mlx_vjp": training(mlx_vjp), "vg mlx": training(layer_norm)}
for label, call in calls.items():
    t = time.perf_counter()
    mx.eval(call(*args))
    print(f"{label}: first call {time.perf_counter() - t:.2f} s", flush=True)
if os.environ.get("GC") == "freeze":  # what the first calls made moved out of the collector's way
    gc.freeze()
elif os.environ.get("GC") == "off":
    gc.disable()
print("gc:", os.environ.get("GC", "default"), gc.get_threshold(), gc.get_count(), "frozen", gc.get_freeze_count())
times = {k: [] for k in calls}
for _ in range(30):
    for label, call in calls.items():
        t = time.perf_counter()
        mx.eval(call(*args))
        times[label].append(time.perf_counter() - t)
print("warm medians (ms):", {k: round(float(np.median(v)) * 1e3, 3) for k, v in times.items()})
print("warm minima (ms):", {k: round(float(np.min(v)) * 1e3, 3) for k, v in times.items()})
for k, v in times.items():
    print(f"  {k}, every call in order (ms):", " ".join(f"{t * 1e3:.2f}" for t in v))
for label in ("forward jit", "forward mlx", "vg jit", "vg mlx"):  # back to back, nothing between
    back = []
    for _ in range(30):
        t = time.perf_counter()
        mx.eval(calls[label](*args))
        back.append(time.perf_counter() - t)
    print(f"  {label}, 30 back to back (ms): median {np.median(back) * 1e3:.3f}:", " ".join(f"{t * 1e3:.2f}" for t in back))
(plan,) = fused._plans.values()
mx.eval(calls["vg jit"](*args))
print("backward, a warm call:", plan.backward.last_trace.describe() if plan.backward.last_trace else None)
print("stats:", fused.stats())
print("backward stats:", plan.backward.stats())
