"""A batch norm and a variance over axis 0 (float32) through autoperfect.jit, fused, against the same
computed by separate jitted pieces (a mean, a variance, the normalization: the three kernels the
batch norm took before its loop was permuted) and MLX eager: 40 interleaved warm calls (mx.eval
each) after the first calls, medians and each contender's chosen variants. Run: python split.py
(PYTHONPATH at a checkout; the kernel cache goes to a fresh temp dir). AP_NO_SHIFTED=1 drops the
`_shifted` column twins (the variants before them) for a before/after in one checkout."""
import os
import tempfile
import time
from dataclasses import replace

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect.backends import cpu

if os.environ.get("AP_NO_SHIFTED"):
    twins = cpu.column_twins
    cpu.column_twins = lambda k, base: tuple(s for s in twins(k, base) if not s.onepass)


def batch_norm(x, w):
    return (x - mx.mean(x, axis=0)) * mx.rsqrt(mx.var(x, axis=0) + 1e-5) * w


def chosen(j) -> str:
    return ", ".join(line.strip().split(": ", 1)[1] for line in j.last_trace.describe().splitlines()
                     if line.strip().startswith("region"))


cache = tempfile.mkdtemp()
jit = lambda f: autoperfect.jit(f, cache_dir=cache)
mean0, var0 = jit(lambda x: mx.mean(x, axis=0)), jit(lambda x: mx.var(x, axis=0))
norm = jit(lambda x, m, v, w: (x - m) * mx.rsqrt(v + 1e-5) * w)
for shape in ((8192, 256), (2048, 1024), (4096, 512)):
    rng = np.random.default_rng(0)
    x, w = (mx.array(rng.standard_normal(s).astype(np.float32)) for s in (shape, shape[1:]))
    fused = jit(batch_norm)
    split = lambda x, w: norm(x, mean0(x), var0(x), w)
    got, want = fused(x, w), batch_norm(x, w)
    mx.eval(split(x, w))
    print(f"batch norm {shape}: matches MLX: {np.allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-5)}")
    print(f"  fused: {chosen(fused)}")
    print(f"  split: mean {chosen(mean0)}; var {chosen(var0)}; normalize {chosen(norm)}")
    cases = {"fused": (fused, (x, w)), "split": (split, (x, w)), "mlx_eager": (batch_norm, (x, w)),
             "var0_jit": (var0, (x,)), "var0_eager": (lambda x: mx.var(x, axis=0), (x,))}
    times = {k: [] for k in cases}
    for _ in range(40):
        for label, (f, args) in cases.items():
            t = time.perf_counter()
            mx.eval(f(*args))
            times[label].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) * 1e6 for k, v in times.items()}
    print("  warm: " + ", ".join(f"{k} {v:.1f} us" for k, v in med.items())
          + f" (fused {med['split'] / med['fused']:.2f}x over split, {med['mlx_eager'] / med['fused']:.2f}x over eager)")
