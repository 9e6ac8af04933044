"""Where autoperfect.jit's gate spends its time: RMSNorm's first call at the shape given (rows x
cols) on MLX's default device, with the gate run in this process (not in its child) under cProfile;
prints the gate's wall time, its top functions by own time (or cumulative time), what the
kernel runs on the judge's buffers spend their time in, then the call's trace.

    python scripts/profile_gate.py 4096x4096 [tottime|cumulative]

With `calls` as the second argument it prints, instead of the profile, each kernel run on the
judge's buffers (Kernel.run_numpy): its output elements, whether its kernel and launch ran
before in this gate (a GPU compiles each new instantiation), its time and the time MLX's
eval took in it, then the sums.
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
    print(f"gate in-process {time.perf_counter() - start:.1f} s, variants {sum(map(len, request['libraries'].values()))}")
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(sys.argv[2] if len(sys.argv) > 2 else "tottime").print_stats(30)
    print(text.getvalue()[:6000])
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text).sort_stats("cumulative")
    stats.print_callees("run_numpy|check_shape|function_accuracy|answer_key|probe|gate_one")
    print(text.getvalue()[:14000])
    return verdicts


def calls(module, request, settings, backend):
    kernel = runtime.backends.get(backend).Kernel
    real_run, real_eval, rows, seen = kernel.run_numpy, mx.eval, [], set()

    def timed_eval(*a, **k):
        start = time.perf_counter()
        real_eval(*a, **k)
        rows[-1]["eval"] += time.perf_counter() - start

    def run_numpy(self, buffers, launch):
        key = (self.k.name, id(self), launch)
        rows.append({"elements": sum(b.size for b in buffers[len(self.k.inputs):]), "new": key not in seen,
                     "eval": 0.0})
        seen.add(key)
        start = time.perf_counter()
        mx.eval = timed_eval
        try:
            real_run(self, buffers, launch)
        finally:
            mx.eval = real_eval
            rows[-1]["s"] = time.perf_counter() - start

    kernel.run_numpy = run_numpy
    start = time.perf_counter()
    verdicts = runtime.gate(request)
    print(f"gate in-process {time.perf_counter() - start:.1f} s, variants {sum(map(len, request['libraries'].values()))}")
    for r in rows:
        print(f"  {r['elements']:>10} elements {'new ' if r['new'] else 'seen'} {r['s'] * 1e3:8.1f} ms, "
              f"eval {r['eval'] * 1e3:8.1f} ms")
    for new in (True, False):
        some = [r for r in rows if r["new"] == new]
        print(f"{'new' if new else 'seen'}: {len(some)} runs, {sum(r['s'] for r in some):.2f} s, "
              f"eval {sum(r['eval'] for r in some):.2f} s")
    return verdicts


runtime.judge.run_child = calls if sys.argv[2:3] == ["calls"] else in_process
rows, cols = (int(n) for n in sys.argv[1].split("x"))
args = [mx.random.normal((rows, cols)), mx.random.normal((cols,))]
f = autoperfect.jit(rmsnorm, cache_dir=tempfile.mkdtemp())
mx.eval(f(*args))
print(f.last_trace.describe())
