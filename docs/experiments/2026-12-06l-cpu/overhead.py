"""What making jit's kernels transformable (runtime.transformable: mx.custom_function, the inputs
through mx.stop_gradient) costs a call, which jit pays only where a transformation traces the call's
arguments (native's any_tracer), and what mx.grad through jit costs against MLX's own.

Host time per call (the graph built, not evaluated; 20000 calls, best of 5 interleaved rounds) of an
RMSNorm at 64x256: MLX eager, the plan's program alone (what jit ran before, less jit's own
bookkeeping), the program wrapped, the tracer check, and jit's warm call (which checks and runs
the program unwrapped), and a second jit of the same function whose check is skipped (what a warm
call cost before the change). Then whole calls at 4096x1024 (mx.eval each,
41 interleaved rounds, medians): jit against MLX eager, and a loss's value and gradient through
jit against MLX's own value_and_grad. Run: python overhead.py (PYTHONPATH at a checkout)."""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect.runtime import transformable


def rmsnorm(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w


def loss(f):
    return lambda x, w: mx.sum(f(x, w) * mx.cos(x))


def host_us(calls: dict, args, n=20000, rounds=5) -> dict:
    best = {name: float("inf") for name in calls}
    for _ in range(rounds):
        for name, f in calls.items():
            for _ in range(200):
                f(*args)
            t = time.perf_counter()
            for _ in range(n):
                f(*args)
            best[name] = min(best[name], (time.perf_counter() - t) / n * 1e6)
    return best


def whole_us(calls: dict, args, rounds=41) -> dict:
    times = {name: [] for name in calls}
    for _ in range(3):
        for f in calls.values():
            mx.eval(f(*args))
    for _ in range(rounds):
        for name, f in calls.items():
            t = time.perf_counter()
            mx.eval(f(*args))
            times[name].append(time.perf_counter() - t)
    return {name: float(np.median(ts)) * 1e6 for name, ts in times.items()}


def rows_and_weights(seed: int):
    """(shape, x, w) at the two shapes timed: 64x256 (host time) and 4096x1024 (whole calls)."""
    rng = np.random.default_rng(seed)
    for shape in ((64, 256), (4096, 1024)):
        x = mx.array(rng.standard_normal(shape).astype(np.float32))
        w = mx.array(rng.standard_normal(shape[-1:]).astype(np.float32))
        mx.eval(x, w)
        yield shape, x, w


def main() -> None:
    cache = tempfile.mkdtemp()
    for shape, x, w in rows_and_weights(0):
        j = autoperfect.jit(rmsnorm, cache_dir=cache, race=False)
        j(x, w)
        print(f"rmsnorm {shape}: " + j.last_trace.describe().splitlines()[1].strip())
        (sig, plan), = [v for k, v in j._warm.items() if k[0][0] == shape]
        if shape == (64, 256):
            k = autoperfect.jit(rmsnorm, cache_dir=cache, race=False)
            k(x, w)
            k._tracing = lambda args: False
            us = host_us({"mlx eager": rmsnorm, "program": plan.run,
                          "program, transformable": transformable(plan.run, rmsnorm),
                          "any_tracer": lambda *a: j._tracing(a), "jit warm call": j, "jit, check skipped": k}, (x, w))
            print("  host time a call, graph only: " + ", ".join(f"{k} {v:.2f} us" for k, v in us.items()))
        else:
            us = whole_us({"mlx eager": rmsnorm, "program": plan.run, "jit": j}, (x, w))
            print("  whole calls: " + ", ".join(f"{k} {v:.0f} us" for k, v in us.items()))
            vg = whole_us({"mlx value_and_grad": mx.value_and_grad(loss(rmsnorm), argnums=(0, 1)),
                           "jit value_and_grad": mx.value_and_grad(loss(j), argnums=(0, 1))}, (x, w))
            print("  a loss's value and gradients: " + ", ".join(f"{k} {v:.0f} us" for k, v in vg.items()))


if __name__ == "__main__":
    main()
