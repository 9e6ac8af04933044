"""Row-kernel sources with one ABI (OP's kernel) on a cache-resident 128x1024 input, one thread,
30 interleaved rounds of 50 calls each; the median time per row. What a kernel costs when memory
is not the limit: run with OMP_NUM_THREADS=1 from the repository root,
`python docs/experiments/2026-12-03c-cpu/hot.py OP A.c B.c ...`."""
import sys
import time

import numpy as np
import yaml

from autoperfect import backends
from autoperfect.kernel_ir import Launch
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, paths = sys.argv[1], sys.argv[2:]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
k = [k for k in front(spec).kernels if k][0]
R, N = 128, 1024
rng = np.random.default_rng(1)
ins = [rng.standard_normal((R, N)).astype(np.float32)] + [rng.standard_normal(N).astype(np.float32) for _ in k.inputs[1:]]
outs = [np.zeros((R, N) if a.space == "elem" else (R,), np.float32) for a in k.outputs]
launch = Launch((R, N), tuple((N, 1) if i == 0 else (0, 1) for i in range(len(ins))),
                tuple(x.shape for x in ins), tuple(o.shape for o in outs))
calls = []
for p in paths:
    b = be.build(open(p).read())
    assert b.ok, b.log
    kern = be.Kernel(k, b.library, "ctypes")
    calls.append(lambda kern=kern: kern.run_numpy(ins + outs, launch))
times = {p: [] for p in paths}
for _ in range(30):
    for p, call in zip(paths, calls):
        start = time.perf_counter()
        for _ in range(50):
            call()
        times[p].append((time.perf_counter() - start) / 50)
for p in paths:
    print(f"{p:50s} {np.median(times[p]) / R * 1e9:.1f} ns/row")
