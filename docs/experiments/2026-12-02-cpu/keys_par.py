import time, numpy as np, mlx.core as mx
from concurrent.futures import ThreadPoolExecutor
from autoperfect import judge
from autoperfect.runtime import front_of, spec_of
from autoperfect.trace import trace
def rmsnorm(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w
from autoperfect.spec import seed_for
R = 4096
traced = trace(rmsnorm, [("x", (R, 4096), "float32"), ("w", (4096,), "float32")])
f, spec = front_of(traced), spec_of(traced)
jobs = [("normal", 1), ("special", 2), ("normal", 3)]
t = time.perf_counter()
seq = [judge.answer_key(f, spec, c, np.random.default_rng(s), False) for c, s in jobs]
print("sequential %.2f s" % (time.perf_counter() - t))
for workers in (2, 3):
    t = time.perf_counter()
    with ThreadPoolExecutor(workers) as ex:
        par = list(ex.map(lambda j: judge.answer_key(f, spec, j[0], np.random.default_rng(j[1]), False), jobs))
    print("threads %d: %.2f s" % (workers, time.perf_counter() - t))
assert all(np.array_equal(a.outputs[0].bound, b.outputs[0].bound, equal_nan=True) and np.array_equal(a.outputs[0].ref, b.outputs[0].ref, equal_nan=True) for a, b in zip(seq, par)); print("same")
