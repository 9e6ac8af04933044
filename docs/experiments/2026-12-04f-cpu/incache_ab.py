"""OP's kernel from each source file given (same ABI: a candidate under results/OP/cpu/candidates,
or a rendering by ../2026-12-03c-cpu/render.py), in cache: the op's inputs cut to ROWS rows (the
spec's values, numpy buffers), each source's call timed in bursts of 20, interleaved over ROUNDS
rounds (60 unless set); the min and median per call, and each output's largest difference from the
first source's. Run from the repository root after `snakemake --cores 4 all`:
`OMP_PLACES=cores OMP_PROC_BIND=close python docs/experiments/2026-12-04f-cpu/incache_ab.py softmax 128 A.c B.c`."""
import os
import sys
import time

import numpy as np
import yaml

from autoperfect import backends
from autoperfect import contenders as C
from autoperfect.kernel_ir import Launch
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, rows, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
f = front(spec)
k = [k for k in f.kernels if k][0]
xs, _ = C.inputs_for(spec)
ins = [np.ascontiguousarray(x[:rows] if x.ndim == len(k.launch.dims) else x) for x in xs]
dims = (rows, *k.launch.dims[1:])
outs = {p: [np.zeros((rows, *sh[1:]), np.float32) for sh in k.launch.out_shapes] for p in paths}
launch = Launch(dims, k.launch.strides, tuple(x.shape for x in ins), tuple(o.shape for o in outs[paths[0]]))
calls = {}
for p in paths:
    b = be.build(open(p).read())
    assert b.ok, b.log
    calls[p] = be.Kernel(k, b.library, "ctypes").numpy_call(ins + outs[p], launch)
times = {p: [] for p in paths}
for _ in range(int(os.environ.get("ROUNDS", "60"))):
    for p, call in calls.items():
        call()
        t = time.perf_counter()
        for _ in range(20):
            call()
        times[p].append((time.perf_counter() - t) / 20)
for p in paths:
    diff = max(float(np.nanmax(np.abs(a - b), initial=0.0)) for a, b in zip(outs[p], outs[paths[0]]))
    print(f"{op} {os.path.basename(p):32s} min {min(times[p]) * 1e6:8.2f} us  median "
          f"{np.median(times[p]) * 1e6:8.2f} us  largest difference from the first {diff:.3g}")
