"""Where the jit's slow warm calls on MLX's CUDA build go (docs/experiments/2026-12-07c-gpu and
-07e-gpu: interleaved with MLX's own calls, the first ~40 rounds of a LayerNorm forward and
value_and_grad through autoperfect.jit take about 1 ms more, whatever the launch's mode). The
kernels come from AP_CACHE (filled by an earlier run, so no compile or gate runs here); AP_PAD
sets the bytes each output of our CUDA primitive asks for beyond its size (set_output_pad: 0 the
exact size, as before this session); then ROUNDS interleaved rounds of the four calls, each call's
time printed (probe.sh runs it with either pad in turn, once under nsys where the device has it)."""
import os
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import native


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


ext = native.load(ext=native.CUDA)
if ext is not None and "AP_PAD" in os.environ:
    ext.set_output_pad(int(os.environ["AP_PAD"]))
print(mx.default_device(), "extension:", ext is not None, "pad:", os.environ.get("AP_PAD", "default"))
rng = np.random.default_rng(0)
args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in [(4096, 1024), (1024,), (1024,)]]
c = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
jitted = autoperfect.jit(layer_norm, cache_dir=os.environ["AP_CACHE"])


def training(f):
    return mx.value_and_grad(lambda *a: mx.sum(f(*a) * c), argnums=(0, 1, 2))


calls = {"forward jit": jitted, "forward mlx": layer_norm, "vg jit": training(jitted), "vg mlx": training(layer_norm)}
for label, call in calls.items():
    t = time.perf_counter()
    mx.eval(call(*args))
    print(f"{label}: first call {time.perf_counter() - t:.2f} s", flush=True)
print("trace:", jitted.last_trace.describe().splitlines()[:2])
times = {k: [] for k in calls}
for _ in range(int(os.environ.get("ROUNDS", 40))):
    for label, call in calls.items():
        t = time.perf_counter()
        mx.eval(call(*args))
        times[label].append(time.perf_counter() - t)
for k, v in times.items():
    print(f"{k} (ms): median {np.median(v) * 1e3:.3f}, over 0.5 ms above the fastest {int(np.sum(np.array(v) > min(v) + 5e-4))}:",
          " ".join(f"{t * 1e3:.2f}" for t in v))
print("memory: active", mx.get_active_memory(), "cache", mx.get_cache_memory(), "peak", mx.get_peak_memory())
