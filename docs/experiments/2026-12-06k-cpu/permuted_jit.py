"""autoperfect.jit on per-element math after a reduction over a leading or middle axis (float32):
the first call's regions and race against MLX, then 30 interleaved warm calls of jit, MLX eager and
mx.compile (mx.eval each), medians. Run: python permuted_jit.py (PYTHONPATH at a checkout; the
kernel cache goes to a fresh temp dir); run it at 9590d71 too for the kernels before the permuted
loops took per-element math (softmax over axis 0 in four kernels)."""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect


def instance_norm(x):  # configs/unseen.yaml's
    m = mx.mean(x, axis=1, keepdims=True)
    v = mx.var(x, axis=1, keepdims=True)
    return (x - m) * mx.rsqrt(v + 1e-5)


CASES = {
    "softmax0": (lambda x: mx.softmax(x, axis=0), [(4096, 512)]),
    "var0": (lambda x: mx.var(x, axis=0), [(4096, 512)]),
    "instance_norm": (instance_norm, [(16, 256, 1024)]),
    "batch_norm": (lambda x, w: (x - mx.mean(x, axis=0)) * mx.rsqrt(mx.var(x, axis=0) + 1e-5) * w,
                   [(8192, 256), (256,)]),
}
cache = tempfile.mkdtemp()
for name, (fn, shapes) in CASES.items():
    rng = np.random.default_rng(0)
    args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    j, c = autoperfect.jit(fn, cache_dir=cache), mx.compile(fn)
    got, want = j(*args), fn(*args)
    print(f"{name} {shapes}: matches MLX: {np.allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6)}")
    print("  " + "\n  ".join(line for line in j.last_trace.describe().splitlines() if not line.startswith("    ")))
    times = {"jit": [], "mlx_eager": [], "mlx_compile": []}
    for _ in range(30):
        for label, f in (("jit", j), ("mlx_eager", fn), ("mlx_compile", c)):
            t = time.perf_counter()
            mx.eval(f(*args))
            times[label].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) for k, v in times.items()}
    print("  warm: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in med.items())
          + f" (jit {med['mlx_eager'] / med['jit']:.2f}x over eager, {med['mlx_compile'] / med['jit']:.2f}x over compile)")
