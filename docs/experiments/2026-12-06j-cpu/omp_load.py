"""A LayerNorm after a residual add (256x768 float32) through autoperfect.jit against MLX eager, warm
calls (200 a sample, two samples), race off so the kernels always run: how OpenMP kernels fare when
another process keeps a core busy. Run by omp_load.sh (the cache dir is its first argument)."""
import sys
import time

import mlx.core as mx
import numpy as np

import autoperfect

rng = np.random.default_rng(2)


def add_layernorm(x, r, w, b):
    h = x + r
    mu = mx.mean(h, axis=-1, keepdims=True)
    var = mx.var(h, axis=-1, keepdims=True)
    return (h - mu) * mx.rsqrt(var + 1e-5) * w + b


args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in ((256, 768), (256, 768), (768,), (768,))]
jitted = autoperfect.jit(add_layernorm, cache_dir=sys.argv[1], race=False)
mx.eval(jitted(*args))
assert jitted.last_trace.kernels, jitted.last_trace.describe()


def per_call_us(f, n=200):
    mx.eval(f(*args))
    start = time.perf_counter()
    for _ in range(n):
        mx.eval(f(*args))
    return (time.perf_counter() - start) / n * 1e6


print(" ".join(f"jit {per_call_us(jitted):.1f} us, mlx {per_call_us(add_layernorm):.1f} us;" for _ in range(2)))
