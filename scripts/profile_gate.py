"""Where autoperfect.jit's gate spends its time: RMSNorm's first call at the shape given (rows x
cols) on MLX's default device, with the gate run in this process (not in its child) under cProfile;
prints the gate's wall time, its top functions by own time (or cumulative time), what the
kernel runs on the judge's buffers spend their time in, then the call's trace.

    python scripts/profile_gate.py 4096x4096 [tottime|cumulative]
"""
import cProfile
import io
import pstats
import sys
import tempfile
import time

import mlx.core as mx

import autoperfect
from autoperfect import runtime


def rmsnorm(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def in_process(module, request, settings, backend):
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    verdicts = runtime.gate(request)
    profile.disable()
    print(f"gate in-process {time.perf_counter() - start:.1f} s, variants {len(request['libraries'])}")
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(sys.argv[2] if len(sys.argv) > 2 else "tottime").print_stats(30)
    print(text.getvalue()[:6000])
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text).sort_stats("cumulative")
    stats.print_callees("run_numpy|check_shape|function_accuracy|answer_key|probe|gate_one")
    print(text.getvalue()[:14000])
    return verdicts


runtime.judge.run_child = in_process
rows, cols = (int(n) for n in sys.argv[1].split("x"))
args = [mx.random.normal((rows, cols)), mx.random.normal((cols,))]
f = autoperfect.jit(rmsnorm, cache_dir=tempfile.mkdtemp())
mx.eval(f(*args))
print(f.last_trace.describe())
