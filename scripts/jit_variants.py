"""How well autoperfect.jit's first call chose among a kernel's verified variants: the first call of
RMSNorm and softmax at each shape given (rows x cols), then every variant the gate passed timed
again, warm, against mx.compile and the jit itself in 31 interleaved rounds, one call per wait and ten calls queued
per wait, beside what the first call measured when it chose:

    python scripts/jit_variants.py 4096x4096
"""
import sys
import tempfile

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import bench, contenders
from autoperfect.pipeline import program

QUEUED = 10
seen = {}
choose = contenders.choose_variants


def capture(f, variants, arrays, be, seed, **kw):
    seen.update(f=f, variants=variants, be=be, choice=choose(f, variants, arrays, be, seed, **kw))
    return seen["choice"]


contenders.choose_variants = capture


def softmax(x):
    return mx.softmax(x, axis=-1)


def rmsnorm(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def medians(samples, per=1):
    return {k: round(float(np.median(v)) / per * 1e6, 1) for k, v in samples.items()}


for size in sys.argv[1:]:
    rows, cols = (int(n) for n in size.split("x"))
    for fn, shapes in ((rmsnorm, [(rows, cols), (cols,)]), (softmax, [(rows, cols)])):
        args = [mx.random.normal(s) for s in shapes]
        mx.eval(*args)
        seen.clear()
        jitted = autoperfect.jit(fn, cache_dir=tempfile.mkdtemp())
        mx.eval(jitted(*args))
        trace = jitted.last_trace
        print(fn.__name__, size, *(line.strip() for line in trace.describe().splitlines()[1:]
                                   if not line.startswith("    ")), sep="\n  ", flush=True)
        if not seen:
            print("  one variant passed: nothing was chosen")
            continue
        f, be = seen["f"], seen["be"]
        (kname, libs), = seen["variants"].items()
        chose = seen["choice"][kname]
        print(f"  the first call's medians (us, {chose['rounds']} rounds):",
              {v: round(s * 1e6, 1) for v, s in chose["median_s"].items()}, flush=True)
        kern = next(k for k in f.kernels if k is not None and k.name == kname)
        compiled = mx.compile(fn)
        calls = {v: program(f, {kname: be.Kernel(kern, lib)}) for v, lib in sorted(libs.items())}
        calls["mx.compile"] = compiled
        calls["jit"] = jitted  # the runtime itself, with the variant it chose
        once = {n: (lambda c=c: mx.eval(c(*args))) for n, c in calls.items()}
        queued = {n: contenders.pipelined(c, args, QUEUED) for n, c in calls.items()}
        s1 = bench.time_interleaved(once, 5, 31, 1)
        sq = bench.time_interleaved(queued, 3, 31, 2)
        print("  one call per wait (us):", medians(s1), flush=True)
        print(f"  {QUEUED} queued per wait (us a call):", medians(sq, QUEUED), flush=True)
        for v in libs:
            print(f"  {v} over mx.compile: once {bench.speedup(s1[v], s1['mx.compile'], 1)['median']:.2f}x,"
                  f" queued {bench.speedup(sq[v], sq['mx.compile'], 1)['median']:.2f}x")
