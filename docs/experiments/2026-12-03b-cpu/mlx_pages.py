"""The roofline's streaming copy and read kernels over 9 slices of 34 MB (bursts of 9, 21 rounds,
interleaved) on numpy's arrays (madvised onto huge pages) and on MLX's own buffers (mx.full, viewed
through numpy without a copy): how much of the in-round ceiling is the pages' and not the kernels'."""
import numpy as np
import mlx.core as mx
from autoperfect import bench, roofline
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n, spans = (34 << 20) // 8, 9
calls = {}
for where in ("numpy", "mlx"):
    if where == "numpy":
        a, b = (np.full(n * spans, 1.0, np.float32) for _ in range(2))
    else:
        xs = [mx.full((n * spans,), 1.0) for _ in range(2)]
        mx.eval(*xs)
        a, b = (np.asarray(x) for x in xs)
        assert not np.shares_memory(a, b) and a.ctypes.data == np.asarray(xs[0]).ctypes.data
    calls[f"copy_nt@{where}"] = roofline.cycling([roofline._stream_call(k, "copy_nt", a[i * n:(i + 1) * n], b[i * n:(i + 1) * n]) for i in range(spans)])
    calls[f"read@{where}"] = roofline.cycling([roofline._stream_call(k, "read", a[i * 2 * n:(i + 1) * 2 * n]) for i in range(spans // 2)])
    calls[f"keep@{where}"] = (a, b) if where == "numpy" else xs
keep = {n_: calls.pop(n_) for n_ in [c for c in calls if c.startswith("keep")]}
s = bench.time_interleaved(calls, 9, 21, 1, burst=9)
for name, v in s.items():
    moved = 8 * n if name.startswith("copy") else 8 * n
    print(f"{name:14s} {moved / np.median(v) / 1e9:.1f} GB/s")
