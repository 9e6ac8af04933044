"""autoperfect.jit with a Python number among the arguments (`rms_norm(x, w, 1e-5)`), which ran as
eager MLX before (runtime: "argument 2 is a float"): now the value is a constant of the plan, as
under mx.compile. Host time a call (graph only, best of 5 rounds of 20000) at 64x256 and whole
calls (mx.eval each, 41 interleaved rounds, medians) at 4096x1024, against MLX eager and the same
function with eps written in (the all-array call). Run: python python_args.py (PYTHONPATH at a checkout)."""
import tempfile

import mlx.core as mx
import autoperfect
from overhead import host_us, rows_and_weights, whole_us


def rms_norm(x, w, eps):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rms_norm_fixed(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w


cache = tempfile.mkdtemp()
for shape, x, w in rows_and_weights(1):
    j = autoperfect.jit(rms_norm, cache_dir=cache, race=False)
    k = autoperfect.jit(rms_norm_fixed, cache_dir=cache, race=False)
    j(x, w, 1e-5)
    k(x, w)
    print(f"{shape}: " + j.last_trace.describe().replace("\n", "\n  "))
    calls = {"mlx eager": lambda x, w: rms_norm(x, w, 1e-5), "jit, eps an argument": lambda x, w: j(x, w, 1e-5),
             "jit, eps written in": k}
    if shape == (64, 256):
        print("  host time a call, graph only: " + ", ".join(f"{n} {v:.2f} us" for n, v in host_us(calls, (x, w)).items()))
    else:
        print("  whole calls: " + ", ".join(f"{n} {v:.0f} us" for n, v in whole_us(calls, (x, w)).items()))
