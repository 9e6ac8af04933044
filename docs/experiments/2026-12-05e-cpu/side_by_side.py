"""Several ops' chosen kernels (results/{op}/cpu/bench.json's variants) in the same interleaved rounds,
through native dispatch on their own MLX inputs (one set each), beside the roofline's streaming
copy of 16M floats in MLX's memory and no baseline: whether an op's lower share of the stream
bandwidth in the benchmark is its kernel's or its neighbours' (each op's rounds have its own
baselines). Prints each median and its GB/s. Run from a pipeline clone's root after
`snakemake --cores 4 all`, PYTHONPATH at that clone, under the benchmark's warm condition:

    ROUNDS=41 python docs/experiments/2026-12-05e-cpu/side_by_side.py rmsnorm layernorm ...
"""
import json
import os
import sys

import numpy as np
import yaml

from autoperfect import backends, bench, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op

ROUNDS = int(os.environ.get("ROUNDS", "41"))
ops = yaml.safe_load(open("config.yaml"))["ops"]
be = backends.get("cpu")
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
calls, moved = {}, {}
for op in sys.argv[1:]:
    spec = parse_op(op, ops[op])
    f = front(spec)
    chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"]
    libs = json.load(open(f"results/{op}/cpu/validation.json"))["verified"]
    loaded = {k.name: be.Kernel(k, libs[k.name][chosen[k.name]["chosen"]]) for k in f.kernels if k is not None}
    _, arrays = C.inputs_for(spec)
    calls[op] = C.evaluated(program(f, loaded), arrays)
    moved[op] = sum(C.ideal_traffic(f))
n = 16 << 20
src, dst = C.mlx_ones(n), C.mlx_ones(n)
calls["copy_nt"] = lambda: K.copy_nt(src.ctypes.data, dst.ctypes.data, n)
moved["copy_nt"] = 2 * 4 * n
samples = bench.time_interleaved(calls, 3, ROUNDS, 1)
for name, s in samples.items():
    med = float(np.median(s))
    print(f"{name:14s} {med * 1e3:7.3f} ms {moved[name] / med / 1e9:6.1f} GB/s")
