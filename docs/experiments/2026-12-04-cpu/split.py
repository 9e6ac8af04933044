"""Where a single call's time goes: OP's pipeline kernel (results/OP/cpu/candidates/*.VARIANT.c)
called three ways on the bench's one input set, each after three kinds of neighbour, interleaved
(15 rounds, medians): `ctypes` (the C function on numpy arrays, preallocated outputs), `native`
(the same library through the MLX primitive: allocation, graph, the CPU stream's thread) and
`mlx_fast`/`torch_compile` as reference points. Neighbours: `self` (the same call just before),
`dirty` (a 32 MB buffer written just before: dirty lines to write back, the input evicted) and
`sleep` (1 ms idle). Run from the repository root after `snakemake --cores 4 all`, under the
benchmark's warm condition: `python docs/experiments/2026-12-04-cpu/split.py OP [VARIANT]`."""
import glob
import sys
import time

import numpy as np
import yaml

from autoperfect import backends, interp
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op

op = sys.argv[1]
variant = sys.argv[2] if len(sys.argv) > 2 else "rows_v16"
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
f = front(spec)
k = [k for k in f.kernels if k][0]
(src,) = glob.glob(f"results/{op}/cpu/candidates/{k.name}.{variant}.c")
lib = be.build(open(src).read()).library
ours = program(f, {k.name: be.Kernel(k, lib)})
direct = be.Kernel(k, lib, "ctypes")
s = C.input_sets(spec, f, 1, C.has_torch())[0]
ref = interp.evaluate(f.traced, list(s.xs), "float64")
checks = {}
torch_fns, _ = C.torch_calls(f, s.tensors, ref, checks)
np_bufs = [np.asarray(x, np.float32) for x in s.xs] + [np.zeros(sh, np.float32) for sh in k.launch.out_shapes]
dirt = np.zeros(8 << 20, np.float32)
calls = {"ctypes": lambda: direct.run_numpy(np_bufs, k.launch), "native": lambda: C.evaluate(ours, s.arrays)}
if "torch_compile" in torch_fns:
    calls["torch_compile"] = lambda: torch_fns["torch_compile"](*s.tensors)
before = {"self": None, "dirty": lambda: dirt.fill(1.0), "sleep": lambda: time.sleep(0.001)}
res = {}
for _ in range(3):
    for c in calls.values():
        c()
for _ in range(15):
    for name, call in calls.items():
        for b, prep in before.items():
            (prep or call)()
            t = time.perf_counter()
            call()
            res.setdefault((name, b), []).append(time.perf_counter() - t)
for (name, b), v in res.items():
    print(f"{op} {name:14s} after {b:6s} {np.median(v) * 1e3:.3f} ms")
