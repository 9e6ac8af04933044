"""Host cost of one warm softmax call over 1x4096 on the default device, graph building only: MLX's
op, the program (pipeline.program) and autoperfect.jit, in 40 interleaved rounds of 500 calls each
(each round's calls evaluated after its clock stops); best round and median, us a call. Run it from
a checkout's root to measure that checkout (e.g. an older commit in a git worktree):

    PYTHONPATH=. python docs/experiments/2026-12-02-host/host_cost.py
"""
import mlx.core as mx
import numpy as np

from _softmax import softmax, warm_jit
from autoperfect import bench

x = mx.random.normal((1, 4096))
mx.eval(x)
jitted, prog = warm_jit(x)
calls = {"mlx": lambda: softmax(x), "program": lambda: prog(x), "jit": lambda: jitted(x)}
times = {name: [] for name in calls}
for _ in range(40):
    for name, call in calls.items():
        times[name].append(bench.host_seconds(call, 500) * 1e6)
print({name: (round(min(t), 2), round(float(np.median(t)), 2)) for name, t in times.items()})
