"""OP's native op at 1/64 of its rows (in cache, so a call is mostly its fixed costs), back to back
(21 rounds of 20 calls, median per call), in a process where MODE put a second OpenMP team on the
main thread first: `none`, `torch` (torch's intra-op pool: torch ships libgomp.so.1, the one our
kernels then load too) or `ctypes` (a roofline stream kernel called through ctypes, as the
benchmark's in-round stream kernels are). Run from the repository root after `snakemake --cores 4
all`, under the benchmark's warm condition:

    for m in none torch ctypes; do python docs/experiments/2026-12-04b-cpu/teams.py mean_var $m; done
"""
import json
import sys

import numpy as np
import yaml

from autoperfect import backends, bench, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op

op, mode = sys.argv[1], sys.argv[2]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"]
verified = json.load(open(f"results/{op}/cpu/validation.json"))["verified"]
be = backends.get("cpu")
loaded = {k.name: be.Kernel(k, verified[k.name][chosen[k.name]["chosen"]]) for k in front(spec).kernels if k}
small = spec.with_shapes(C.scaled_shapes(spec, 64))
xs, arrays = C.inputs_for(small)
ours = program(front(small), loaded)
if mode == "torch":
    import torch
    x = torch.randn(1000, 1000)
    for _ in range(10):
        x.exp().sum()
elif mode == "ctypes":
    roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), 1 << 20)["copy"][0]()
s = bench.time_interleaved({"k": lambda: C.evaluate(ours, arrays)}, 3, 21, 1, burst=20)["k"]
print(op, "1/64 of the rows,", mode, f"{np.median(s) * 1e6:.1f} us a call back to back")
