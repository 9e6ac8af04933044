"""A column sum (mx.sum(x, axis=0), 1024 columns) through autoperfect.jit at 64, 256 and 4096 rows,
fresh kernel caches: the race's choice and 200 interleaved warm calls against MLX eager (medians).
A new user's run had the pipeline's kernel, chosen at 4096x1024, slower than MLX eager at 64 rows in
bench.json's scaling list (0.110 against 0.063 ms); the jit chooses at the call's shape.
From the checkout's root: OMP_PLACES=cores OMP_PROC_BIND=close python docs/experiments/2026-12-07h-cpu/colsum_jit.py"""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect


def colsum(x):
    return mx.sum(x, axis=0)


for rows in (64, 256, 4096):
    x = mx.array(np.random.default_rng(0).standard_normal((rows, 1024)).astype(np.float32))
    jitted = autoperfect.jit(colsum, cache_dir=tempfile.mkdtemp())
    mx.eval(jitted(x))
    print(rows, "rows:", jitted.last_trace.describe().splitlines()[:3])
    times = {"jit": [], "mlx": []}
    for _ in range(200):
        for k, f in (("jit", jitted), ("mlx", colsum)):
            t = time.perf_counter()
            mx.eval(f(x))
            times[k].append(time.perf_counter() - t)
    print("  warm medians (us):", {k: round(float(np.median(v)) * 1e6, 1) for k, v in times.items()})
