"""How the runtime chooses among the verified variants of a LayerNorm backward's three kernels at
4096x1024 (`contenders.choose_variants` after the gate, fresh cache): every interleaved timing it
makes, with its rounds and each variant's median per call of the whole backward program. The first
look (1 round) of the first kernel runs the others at their first variants (a column reduction's
row schedule); the rounds that choose run each kernel beside the others' likely choices.

    python choose.py > choose.out
"""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import bench, contenders, runtime

real_interleaved, real_choose = bench.time_interleaved, contenders.choose_variants


def interleaved(timed, warmup, rounds, seed, burst=1):
    start = time.perf_counter()
    samples = real_interleaved(timed, warmup, rounds, seed, burst)
    medians = ", ".join(f"{v} {np.median(s) * 1e3:.2f}" for v, s in samples.items())
    print(f"  {len(timed)} variants, {rounds} round(s), {time.perf_counter() - start:.2f} s; medians (ms): {medians}")
    return samples


def choose(*args, **kwargs):
    start = time.perf_counter()
    choice = real_choose(*args, **kwargs)
    print(f"choose_variants: {time.perf_counter() - start:.2f} s; chosen "
          f"{ {k: c['chosen'] for k, c in choice.items()} }")
    return choice


bench.time_interleaved = interleaved
runtime.contenders.choose_variants = choose


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


rng = np.random.default_rng(0)
args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in [(4096, 1024), (1024,), (1024,)]]
c = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
jitted = autoperfect.jit(layer_norm, cache_dir=tempfile.mkdtemp())
grad = mx.value_and_grad(lambda *a: mx.sum(jitted(*a) * c), argnums=(0, 1, 2))
mx.eval(grad(*args))
