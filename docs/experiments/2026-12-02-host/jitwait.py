"""One call per wait at one row (softmax over 1x4096, 41 interleaved rounds, with and without
Python's GC, then each in a loop of 200 waits): MLX, the jit running MLX (its plan forced eager), the
jit running its kernel, the kernel's program; medians, us a call:

    PYTHONPATH=. python docs/experiments/2026-12-02-host/jitwait.py
"""
import time, sys, gc
import mlx.core as mx, numpy as np
from _softmax import softmax, warm_jit
from autoperfect import bench
x = mx.random.normal((1, 4096)); mx.eval(x)
jk, prog = warm_jit(x)
je, _ = warm_jit(x)
next(iter(je._plans.values())).to_mlx("forced")
jq, _ = warm_jit(x)
next(iter(jq._plans.values())).to_mlx("forced")
jq._note = lambda *a, **k: None  # the eager jit without its records


def busy(us):
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def late():  # MLX's op, 3 us of host work between building it and waiting for it
    y = softmax(x)
    busy(3)
    mx.eval(y)


calls = {"mlx": lambda: mx.eval(softmax(x)), "jit_eager": lambda: mx.eval(je(x)),
         "jit_eager_no_records": lambda: mx.eval(jq(x)), "mlx_after_3us": lambda: (busy(3), mx.eval(softmax(x))),
         "mlx_3us_before_eval": late,
         "jit_kernel": lambda: mx.eval(jk(x)), "program": lambda: mx.eval(prog(x)),
         "mlx_then_pc": lambda: (mx.eval(softmax(x)), time.perf_counter())}
for gcmode in ("on", "off"):
    if gcmode == "off": gc.disable()
    s = bench.time_interleaved(calls, 5, int(sys.argv[1]) if len(sys.argv) > 1 else 41, 1)
    print("gc", gcmode, {k: round(float(np.median(v)) * 1e6, 1) for k, v in s.items()}, flush=True)
gc.enable()
# the same, each timed in a tight loop of 200 waits
for name, c in calls.items():
    for _ in range(20): c()
    t = time.perf_counter()
    for _ in range(200): c()
    print("loop", name, round((time.perf_counter() - t) / 200 * 1e6, 1), flush=True)
print(je.last_trace.describe())
