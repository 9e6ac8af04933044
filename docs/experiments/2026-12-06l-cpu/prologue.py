"""A prologue feeding two passes of a permuted loop: `mx.softmax(x * w, axis=0)` (x * w feeds the max
and the exp), and `a * mx.sum(a, axis=0)` with a = mx.exp(x). fuse.py pulled only a single-consumer
prologue into a permuted loop, so these were two kernels (the prologue materialized); now the
prologue joins once all its users are in the loop (computed again in each pass). Through
autoperfect.jit (race off: the kernels run whatever MLX does), the first call's plan printed, then
41 interleaved warm calls of jit and MLX eager (mx.eval each), medians.
Run: python prologue.py (PYTHONPATH at the checkout to measure; at the commit before, two kernels)."""
import tempfile

import mlx.core as mx
import numpy as np

import autoperfect
from overhead import whole_us

CASES = {
    "softmax(x * w, axis=0)": (lambda x, w: mx.softmax(x * w, axis=0), (4096, 512)),
    "exp(x) * sum(exp(x), axis=0)": (lambda x, w: mx.exp(x) * mx.sum(mx.exp(x), axis=0) * w, (4096, 512)),
    "softmax(x * w, axis=1) of 16x256x1024": (lambda x, w: mx.softmax(x * w, axis=1), (16, 256, 1024)),
}
cache = tempfile.mkdtemp()
rng = np.random.default_rng(2)
for name, (fn, shape) in CASES.items():
    x = mx.array(rng.standard_normal(shape).astype(np.float32))
    w = mx.array(rng.uniform(0.5, 1.5, shape[-1:]).astype(np.float32))
    mx.eval(x, w)
    j = autoperfect.jit(fn, cache_dir=cache, race=False)
    ok = np.allclose(np.array(j(x, w)), np.array(fn(x, w)), rtol=1e-5, atol=1e-6)
    print(f"{name}: matches MLX: {ok}")
    print("  " + "\n  ".join(line for line in j.last_trace.describe().splitlines()[1:] if "region" in line))
    us = whole_us({"jit": j, "mlx eager": fn}, (x, w))
    print(f"  warm: jit {us['jit']:.0f} us, MLX eager {us['mlx eager']:.0f} us ({us['mlx eager'] / us['jit']:.2f}x)")
