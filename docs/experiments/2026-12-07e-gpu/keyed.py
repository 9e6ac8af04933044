"""Whether our CUDA launches as plain kernel nodes share MLX's cached CUDA graphs with MLX's own
kernels (MLX keys a graph's executable by its nodes' types and dependencies, not their functions),
so that a call of ours after one of MLX's updates or rebuilds the executable: a LayerNorm forward
and mx.value_and_grad through autoperfect.jit against MLX's own, interleaved warm rounds in
blocks of 10 (CYCLES a mode), the extension's launches keyed by instance (native/cuda/kernel_op.cpp's default) and
plain (set_keyed_nodes(False)), and with their outputs' managed pages prefetched to the device or
not (set_prefetch_outputs), block by block; then 30 back-to-back calls each way. Run on the device:
python keyed.py (PYTHONPATH=/tmp/site:<checkout>; WARMUP=N: N rounds of every call before the
blocks; CYCLES=N: N blocks a mode, 3 unless set; AUTOPERFECT_NATIVE=0: the same without the
extension, through mx.fast.precompiled_cuda_kernel, the modes then changing nothing)."""
import os
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import native


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


ext = native.load(ext=native.CUDA)
print(mx.default_device(), "extension:", ext is not None and hasattr(ext, "set_keyed_nodes"))
rng = np.random.default_rng(0)
args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in [(4096, 1024), (1024,), (1024,)]]
c = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
jitted = autoperfect.jit(layer_norm, cache_dir=tempfile.mkdtemp())


def training(f):
    return mx.value_and_grad(lambda *a: mx.sum(f(*a) * c), argnums=(0, 1, 2))


calls = {"forward jit": jitted, "forward mlx": layer_norm, "vg jit": training(jitted), "vg mlx": training(layer_norm)}
for label, call in calls.items():
    t = time.perf_counter()
    mx.eval(call(*args))
    print(f"{label}: first call {time.perf_counter() - t:.2f} s", flush=True)
got, want = calls["vg jit"](*args), calls["vg mlx"](*args)
print("largest difference from MLX's value_and_grad:",
      max(float(mx.max(mx.abs(a - b) / (1 + mx.abs(b)))) for a, b in zip([got[0], *got[1]], [want[0], *want[1]])))
print("trace:", jitted.last_trace.describe().splitlines()[:2])
MODES = [(keyed, prefetch) for prefetch in (False, True) for keyed in (False, True)]


def mode(m) -> str:
    return f"{'keyed' if m[0] else 'plain'}{' + prefetch' if m[1] else ''}"


def set_mode(m) -> None:
    if ext is not None:
        ext.set_keyed_nodes(m[0])
        ext.set_prefetch_outputs(m[1])


for _ in range(int(os.environ.get("WARMUP", 0))):  # rounds left out, every call as in a block
    for call in calls.values():
        mx.eval(call(*args))
times = {(m, k): [] for m in MODES for k in calls}
for block in range(int(os.environ.get("CYCLES", 3)) * len(MODES)):
    m = MODES[block % len(MODES)]
    set_mode(m)
    for _ in range(10):
        for label, call in calls.items():
            t = time.perf_counter()
            mx.eval(call(*args))
            times[m, label].append(time.perf_counter() - t)
for m in MODES:
    print(f"interleaved, {mode(m)} (ms): medians", {k: round(float(np.median(times[m, k])) * 1e3, 3) for k in calls},
          "calls over 0.5 ms above the label's fastest:",
          {k: int(np.sum(np.array(times[m, k]) > min(min(times[n, k]) for n in MODES) + 5e-4)) for k in calls})
    for k in ("forward jit", "vg jit"):
        print(f"  {k}, {mode(m)}, every call (ms):", " ".join(f"{t * 1e3:.2f}" for t in times[m, k]))
for m in MODES:
    set_mode(m)
    for label in ("forward jit", "vg jit"):
        back = []
        for _ in range(30):
            t = time.perf_counter()
            mx.eval(calls[label](*args))
            back.append(time.perf_counter() - t)
        print(f"  {label}, {mode(m)}, 30 back to back (ms): median {np.median(back) * 1e3:.3f}:",
              " ".join(f"{t * 1e3:.2f}" for t in back), flush=True)
