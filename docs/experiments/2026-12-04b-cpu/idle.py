"""OP's native op built from each SOURCE (e.g. the chosen rendering and a copy with
`schedule(static)` made `schedule(guided)` or `schedule(dynamic, 16)`), each call after IDLE ms of
sleep (0: back to back), over 9 copies of the inputs, 41 interleaved rounds, medians. With TEAM=torch
in the environment, torch's pool runs a team first. Run from the repository root after
`snakemake --cores 4 all`, under the benchmark's warm condition:

    python docs/experiments/2026-12-04b-cpu/idle.py mean_var 20 A.c B.c C.c
"""
import os
import sys
import time

import numpy as np
import yaml

from autoperfect import backends
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op

op, idle, paths = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
f = front(spec)
(k,) = [k for k in f.kernels if k]
sets = C.input_sets(spec, f, 9, False)
calls = {}
for p in paths:
    b = be.build(open(p).read())
    assert b.ok, b.log
    prog = program(f, {k.name: be.Kernel(k, b.library)})
    calls[p] = C.over({"x": lambda s, prog=prog: C.evaluate(prog, s.arrays)}, sets)["x"]
if os.environ.get("TEAM") == "torch":
    import torch
    x = torch.randn(1000, 1000)
    for _ in range(10):
        x.exp().sum()
for c in calls.values():
    for _ in range(3):
        c()
res = {p: [] for p in paths}
rng = np.random.default_rng(5)
for _ in range(41):
    for p in rng.permutation(paths):
        time.sleep(idle / 1e3)
        t = time.perf_counter()
        calls[p]()
        res[p].append(time.perf_counter() - t)
print(op, f"after {idle} ms idle:", "  ".join(f"{os.path.basename(p)} {np.median(v) * 1e3:.3f}" for p, v in res.items()))
