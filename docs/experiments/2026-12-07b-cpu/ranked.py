"""A first call whose kernels this cache timed at another shape: mx.value_and_grad of
sum(layer_norm(x, w, b) * c) through autoperfect.jit at 4096x1024 in a fresh cache (every variant
built, gated and timed), then at 2048x1024 by a new jit on the same cache (its kernels' variants
ranked by the medians at 4096x1024: runtime.rank), printing the second call's steps and how many
variants each kernel built. Run: python ranked.py (PYTHONPATH at a checkout)."""
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect.backends import cpu


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


built = []
real_build = cpu.build
cpu.build = lambda source, where: built.append(source) or real_build(source, where)
cache = tempfile.mkdtemp()
for rows in (4096, 2048):
    rng = np.random.default_rng(rows)
    args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in [(rows, 1024), (1024,), (1024,)]]
    c = mx.array(rng.standard_normal((rows, 1024)).astype(np.float32))
    jitted = autoperfect.jit(layer_norm, cache_dir=cache)
    f = mx.value_and_grad(lambda *a: mx.sum(jitted(*a) * c), argnums=(0, 1, 2))
    built.clear()
    t = time.perf_counter()
    mx.eval(f(*args))
    whole = time.perf_counter() - t
    (plan,) = jitted._plans.values()
    steps = [(name, trace.setup) for name, trace in (("forward", jitted.last_trace),
                                                      ("backward", plan.backward.last_trace))]
    print(f"{rows}x1024: first call {whole:.1f} s, {len(built)} builds; " + "; ".join(
        f"{name} " + ", ".join(f"{k} {v:.2f} s" for k, v in setup.items() if k in ("compile", "gate", "choose"))
        for name, setup in steps))
