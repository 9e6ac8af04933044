"""OP's native op at its full size in the steady state (bursts of 9 back-to-back calls over 9 copies
of the inputs, 21 rounds, median per call), in a process where MODE put a second OpenMP team on the
main thread first: `none` or `ctypes` (a roofline stream kernel through ctypes, as the benchmark's
in-round stream kernels are). Run alternately, from the repository root after `snakemake --cores 4
all`, under the benchmark's warm condition with OMP_NUM_THREADS=2:

    for i in 1 2 3 4; do for m in none ctypes; do python docs/experiments/2026-12-04b-cpu/teams_steady.py mean_var $m; done; done
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
f = front(spec)
ours = program(f, {k.name: be.Kernel(k, verified[k.name][chosen[k.name]["chosen"]]) for k in f.kernels if k})
calls = C.over({"k": lambda s: C.evaluate(ours, s.arrays)}, C.input_sets(spec, f, 9, False))
if mode == "ctypes":
    roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), 1 << 20)["copy"][0]()
s = bench.time_interleaved(calls, 3, 21, 1, burst=9)["k"]
print(op, mode, f"{np.median(s) * 1e3:.3f} ms a call, steady over 9 sets")
