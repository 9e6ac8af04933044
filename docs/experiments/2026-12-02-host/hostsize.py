"""Host cost of a bound launch (Kernel.bind) against MLX's softmax and exp by size, and by how many calls
are queued before one eval (10, 100, 1000), best and median of 5 rounds, us a call:

    PYTHONPATH=. python docs/experiments/2026-12-02-host/hostsize.py
"""
import mlx.core as mx
import numpy as np

from autoperfect import backends, bench
from autoperfect.generate import provider
from autoperfect.runtime import front_of
from autoperfect.trace import trace


def softmax(x):
    return mx.softmax(x, axis=-1)


name = backends.for_default_device()
be = backends.get(name)
for shape in [(1, 4096), (64, 4096), (4096, 4096)]:
    x = mx.random.normal(shape)
    mx.eval(x)
    (k,) = [k for k in front_of(trace(softmax, [("x", shape, "float32")])).kernels if k is not None]
    bound = be.Kernel(k, be.build(provider("compiler").generate(k, name)[0].source).library).bind(k.launch)
    mx.eval(bound([x]))
    for n in (10, 100, 1000):
        for label, call in (("bound", lambda: bound([x])[0]), ("mlx", lambda: softmax(x)), ("exp", lambda: mx.exp(x))):
            ts = [bench.host_seconds(call, n) * 1e6 for _ in range(5)]
            print(shape, n, label, round(min(ts), 2), round(float(np.median(ts)), 2), flush=True)
