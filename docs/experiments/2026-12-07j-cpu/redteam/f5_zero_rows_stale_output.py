"""Finding 5: output left unwritten on rows the judge never draws -> stale memory leaks to the user.

The judge pre-fills outputs with a NaN poison, so an element a kernel skips is caught -- but only
on rows it draws, and it never draws an all-zero row (every class is random normal data; `special`
puts one special value in one row in ten). A lazy "zero rows normalize to zero, and the output
starts zeroed" fast path (true of cpu.Kernel's ctypes fallback, which allocates mx.zeros) passes
both checks. In production the native launcher takes outputs from MLX's allocator uninitialized, so
an all-zero row (padding positions, masked/zeroed activations) returns whatever the previous
tensor freed into that block held: another tensor's data, silently.
Modification (rmsnorm, `rows` schedule): the store loop is wrapped in `if (r2 != 0.0f) { ... }`.
"""
from _common import *
import mlx.core as mx


def make(src):
    s = sub(src, "    #pragma omp simd\n    for (int64_t j = 0; j < N; j++) {\n      const float v0 = in0[b0 + j];\n      const float v8",
            "    if (r2 != 0.0f)\n    #pragma omp simd\n    for (int64_t j = 0; j < N; j++) {\n      const float v0 = in0[b0 + j];\n      const float v8")
    return s


for full in (False, True):
    spec, k, src = setup("rmsnorm", full=full)
    v, r, b = check_and_judge(spec, k, make(src))

kern = cpu.Kernel(k, b.library)
print("  dispatch:", kern.dispatch)
rng = np.random.default_rng(0)
w = mx.array(rng.standard_normal(1024).astype(np.float32))
x = rng.standard_normal((4096, 1024)).astype(np.float32)
x[::4] = 0.0                                   # a batch where every 4th position is padding
x = mx.array(x)
secret = mx.full((4096 * 1024 + 16,), 12345.0)  # some other tensor the process computed and freed
mx.eval(secret, x, w)
del secret
(out,) = kern([x, w]); mx.eval(out)
o = np.array(out)
report_error("production call, 1/4 of the rows zero", o, rmsnorm_ref(np.array(x), np.array(w)))
print("  zero rows should be all 0; distinct values found in them:", np.unique(o[::4])[:5])
