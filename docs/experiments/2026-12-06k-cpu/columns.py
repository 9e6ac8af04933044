"""Reductions over a leading or middle axis, every CPU variant of each kernel timed alone on the
same input, interleaved (each round runs every variant once, in turn), 30 rounds after a warm-up:
the median per variant, and GB/s of the bytes the kernel must move (kernel_ir.bytes_moved).
Outputs are compared with the plain `rows` variant's (bits, or the largest relative difference).
Run: python columns.py [permuted] (PYTHONPATH at a checkout; a fresh build dir under /tmp).
`permuted`: kernels with per-element outputs after the reduction (a softmax over axis 0, an
instance norm, a batch norm whose weight is the first row)."""
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from autoperfect import backends, static
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op, seed_for

BE = backends.get("cpu")
CASES = [("mx.max(x, axis=0)", [4096, 512]), ("mx.var(x, axis=0)", [4096, 512]),
         ("mx.logsumexp(x, axis=0)", [4096, 512]), ("mx.sum(x, axis=1)", [64, 256, 256]),
         ("mx.mean(x, axis=1)", [16, 256, 1024]), ("mx.max(x, axis=0)", [100000, 40])]
if len(sys.argv) > 1 and sys.argv[1] == "permuted":  # per-element outputs of permuted loops (after 9590d71)
    CASES = [("mx.softmax(x, axis=0)", [4096, 512]),
             ("(x - mx.mean(x, axis=1, keepdims=True)) * mx.rsqrt(mx.var(x, axis=1, keepdims=True) + 1e-5)",
              [16, 256, 1024]),
             ("(x - mx.mean(x, axis=0)) * mx.rsqrt(mx.var(x, axis=0) + 1e-5) * x[0]", [8192, 256]),
             ("(x - mx.mean(x, axis=0)) * mx.rsqrt(mx.var(x, axis=0) + 1e-5) * x[0]", [2048, 1024])]
STORAGE = {"float32": np.float32}
tmp = Path(tempfile.mkdtemp())
for expr, shape in CASES:
    spec = parse_op("c", {"fn": f"def c(x):\n    return {expr}\n", "inputs": {"x": {"shape": shape}}})
    rng = np.random.default_rng(seed_for("columns.py", expr, "x".join(map(str, shape))))
    for k in (k for k in front(spec).kernels if k is not None):
        inputs = [rng.standard_normal(s).astype(STORAGE[a.dtype]) for a, s in zip(k.inputs, k.launch.in_shapes)]
        runs, outs = {}, {}
        for s in cpu.schedules_for(k):
            source = BE.render(k, s)
            assert static.check(source, "cpu", k.name).passed
            build = BE.build(source, tmp)
            assert build.ok, build.log
            outs[s.name] = [np.zeros(o, STORAGE[a.dtype]) for a, o in zip(k.outputs, k.launch.out_shapes)]
            runs[s.name] = BE.Kernel(k, build.library, "ctypes").numpy_call(inputs + outs[s.name], k.launch)
        times = {n: [] for n in runs}
        for rnd in range(33):
            for n, call in runs.items():
                t = time.perf_counter()
                call()
                if rnd >= 3:
                    times[n].append(time.perf_counter() - t)
        print(f"{expr} {shape}: kernel {k.name} dims {list(k.launch.dims)}, {k.bytes_moved() / 1e6:.1f} MB")
        for n, ts in times.items():
            med = float(np.median(ts))
            same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(outs[n], outs["rows" if "rows" in outs else next(iter(outs))]))
            diff = "same bits" if same else "max rel diff %.2g" % max(
                float(np.max(np.abs(a.astype(np.float64) - b) / np.maximum(np.abs(b), 1e-30)))
                for a, b in zip(outs[n], outs[next(iter(outs))]))
            print(f"  {n:24s} {med * 1e6:9.1f} us  {k.bytes_moved() / med / 1e9:6.1f} GB/s  {diff}")
