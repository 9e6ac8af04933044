"""One answer key of a LayerNorm's backward at 4096x1024 (the gate's costliest step on the CPU), in a
fresh process: its time and how much its peak resident memory grew, with the float64 evaluators
dropping each value after its last reader (as now) or keeping every node's (`keep`: as before).

    for i in 1 2 3; do python key_memory.py keep; python key_memory.py; done > key_memory.out
"""
import resource
import sys
import time

import mlx.core as mx
import numpy as np

from autoperfect import autodiff, judge, runtime
from autoperfect.canon import canonicalize
from autoperfect.graph import Graph
from autoperfect.trace import trace


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


forward = trace(layer_norm, [("x", (4096, 1024), "float32"), ("w", (1024,), "float32"), ("b", (1024,), "float32")])
front = runtime.front_of(autodiff.vjp(canonicalize(forward)))
d = runtime._draws(next(k for k in front.kernels if k is not None).name, front, 0)
keep = sys.argv[1:] == ["keep"]
if keep:
    Graph.dead_after = lambda self: {}  # every node's value kept, as before
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
judge.answer_key(d.f, d.spec, "normal", np.random.default_rng(1), d.exact)
took = time.perf_counter() - start
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 2**20
c = front.canonical
print(f"{'every value kept' if keep else 'dead values dropped'}: key {took:.2f} s, peak resident memory "
      f"+{grew:.2f} GB; canonical graph {len(c.nodes)} nodes, {sum(np.prod(n.shape) for n in c.nodes) / 1e6:.0f} M "
      f"elements in all, {c.peak_elements() / 1e6:.0f} M live at most")
