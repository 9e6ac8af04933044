"""Whether the slow warm calls of a jitted LayerNorm forward on MLX's CUDA build follow MLX's buffer
cache: 30 back-to-back calls, each call's time beside MLX's cache and active memory before it.
Run on the device: python alloc.py (PYTHONPATH=/tmp/site:<checkout>)."""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


rng = np.random.default_rng(0)
args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in [(4096, 1024), (1024,), (1024,)]]
for label, f in (("jit", autoperfect.jit(layer_norm, cache_dir=tempfile.mkdtemp())), ("mlx", layer_norm)):
    mx.eval(f(*args))
    rows = []
    for _ in range(30):
        cache, active = mx.get_cache_memory(), mx.get_active_memory()
        t = time.perf_counter()
        out = f(*args)
        queued = time.perf_counter() - t
        mx.eval(out)
        rows.append((time.perf_counter() - t, queued, cache, active))
        del out
    print(label)
    for t, q, c, a in rows:
        print(f"  {t * 1e3:6.2f} ms (queued in {q * 1e3:5.2f}), cache {c / 2**20:7.1f} MiB, active {a / 2**20:7.1f} MiB")
