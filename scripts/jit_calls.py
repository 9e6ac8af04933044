"""autoperfect.jit's first and warm calls on MLX's default device, for RMSNorm and softmax at the
shapes given (rows x cols), each first call's setup split as the trace records it:

    python scripts/jit_calls.py 4096x4096 32768x4096 [rmsnorm] [softmax]

(naming a function times it alone).
"""
import sys
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import bench


def softmax(x):
    return mx.softmax(x, axis=-1)


def rmsnorm(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


sizes = [a for a in sys.argv[1:] if "x" in a]
names = [a for a in sys.argv[1:] if "x" not in a] or ["rmsnorm", "softmax"]
for size in sizes:
    rows, cols = (int(n) for n in size.split("x"))
    for fn, shapes in ((rmsnorm, [(rows, cols), (cols,)]), (softmax, [(rows, cols)])):
        if fn.__name__ not in names:
            continue
        args = [mx.random.normal(s) for s in shapes]
        mx.eval(*args)
        f = autoperfect.jit(fn, cache_dir=tempfile.mkdtemp())
        start = time.perf_counter()
        mx.eval(f(*args))
        first = time.perf_counter() - start
        print(fn.__name__, size, f"first call {first:.1f} s, setup {f.last_trace.setup}", f.last_trace.describe(),
              flush=True)
        c = mx.compile(fn)
        s = bench.time_interleaved({"jit": lambda: mx.eval(f(*args)), "eager": lambda: mx.eval(fn(*args)),
                                    "compile": lambda: mx.eval(c(*args))}, 5, 31, 1)
        print("  warm medians (us)", {k: round(float(np.median(v)) * 1e6, 1) for k, v in s.items()},
              "jit over mx.compile", bench.speedup(s["jit"], s["compile"], 1), flush=True)
