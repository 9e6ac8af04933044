"""The runtime's first-call check on MLX's CUDA build (autoperfect.jit, backend auto: cuda on a GPU).

1. A trace of another function (exp(x) * 3 for exp(x) * 2, put in place of the jit's own trace)
   passes the gate and must be caught by the first call's comparison with the function's own MLX
   result: the call returns MLX's values and no kernel runs.
2. RMSNorm and softmax at 4096x1024, float32, fresh kernel cache: the first call (compile, gate,
   the check, the race) and 20 warm calls, in this process; then the same functions in a new
   process on that cache (`--from-disk`), whose first call finds the agreement kept with the race
   and skips the check.

    PYTHONPATH=/tmp/site:$PWD python3 docs/experiments/2026-12-07k-gpu/first_call_gpu.py
"""
import subprocess
import sys
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import runtime


def rmsnorm(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def softmax(x):
    return mx.softmax(x, axis=-1)


def doubled(x):
    return mx.exp(x) * 2.0


def tripled(x):
    return mx.exp(x) * 3.0


def first_calls(cache: str) -> None:
    rng = np.random.default_rng(5)
    for fn, shapes in ((rmsnorm, [(4096, 1024), (1024,)]), (softmax, [(4096, 1024)])):
        args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in shapes]
        jitted = autoperfect.jit(fn, cache_dir=cache)
        start = time.perf_counter()
        out = jitted(*args)
        mx.eval(out)
        first = time.perf_counter() - start
        t = jitted.last_trace  # the first call's: its setup and race
        warm = []
        for _ in range(20):
            start = time.perf_counter()
            mx.eval(jitted(*args))
            warm.append(time.perf_counter() - start)
        err = mx.max(mx.abs(out - fn(*args))).item()
        print(f"{fn.__name__}: first call {first * 1e3:.1f} ms, warm median {np.median(warm) * 1e3:.3f} ms, "
              f"kernels {len(t.kernels)}, eager {t.eager!r}, race recorded {t.race.get('recorded')}, "
              f"checked {t.race.get('checked')}, largest difference from MLX {err:.3g}")
        print("  ", t.describe().splitlines()[0][:400])


if __name__ == "__main__":
    print(mx.default_device(), mx.__version__)
    if "--from-disk" in sys.argv:
        first_calls(sys.argv[-1])
        sys.exit(0)
    with tempfile.TemporaryDirectory() as cache:
        x = mx.array(np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32))
        f = autoperfect.jit(doubled, cache_dir=cache + "/disagree")
        f._trace = lambda inputs, name, constants: runtime.trace(tripled, inputs, name, constants)
        got = f(x)
        print("disagreeing trace:", "MLX's values" if mx.allclose(got, doubled(x)).item() else "WRONG VALUES",
              "| eager:", f.last_trace.eager, "| kernels:", len(f.last_trace.kernels),
              "| kernel calls:", f.stats()["kernel_calls"])
        print("== fresh cache, this process")
        first_calls(cache + "/ops")
        print("== the same cache, a new process")
        subprocess.run([sys.executable, __file__, "--from-disk", cache + "/ops"], check=True)
