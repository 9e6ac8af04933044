"""An op's chosen kernel (results/{op}/cpu/bench.json) through ctypes with its inputs and its
outputs at controlled places: every buffer starts on a 2 MB boundary (roofline.paged_ones) and the
outputs are then moved D bytes on, for several D (all of them SHIFT bytes on first), on 4 KB pages and on huge pages (PAGES=base or
huge), interleaved in rounds beside the roofline's streaming copy over the same placements: whether
where MLX's heap happens to put an output relative to its input moves the op. Run from a pipeline
clone's root after `snakemake --cores 4 all`, PYTHONPATH at that clone, under the warm condition:

    PAGES=base python docs/experiments/2026-12-05e-cpu/alias_op.py OP [D ...]
"""
import json
import os
import sys

import numpy as np
import yaml

from autoperfect import backends, bench, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

ROUNDS = int(os.environ.get("ROUNDS", "15"))
PAGES = os.environ.get("PAGES", "base")
SHIFT = int(os.environ.get("SHIFT", "0"))  # bytes every buffer starts past its 2 MB boundary (MLX's: 8 mod 16)
op = sys.argv[1]
offsets = [int(d) for d in sys.argv[2:]] or [0, 16, 32, 64, 1024, 2048]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
f = front(spec)
k = [k for k in f.kernels if k][0]
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"][k.name]["chosen"]
lib = json.load(open(f"results/{op}/cpu/validation.json"))["verified"][k.name][chosen]
kern = backends.get("cpu").Kernel(k, lib, "ctypes")
xs, _ = C.inputs_for(spec)
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)


def placed(values: np.ndarray, d: int) -> np.ndarray:
    at = (SHIFT + d) // 4
    buf = roofline.paged_ones(values.size + 1024, PAGES)[at:at + values.size].reshape(values.shape)
    buf[...] = values
    return buf


moved = sum(C.ideal_traffic(f))
ins = [placed(np.asarray(x, np.float32), 0) for x in xs]
calls = {}
for d in offsets:
    outs = [placed(np.zeros(s, np.float32), d) for s in k.launch.out_shapes]
    calls[f"{op} {d}"] = kern.numpy_call(ins + outs, k.launch)
    calls[f"{op} {d}"].buffers = outs
    dst = placed(np.zeros(ins[0].size, np.float32), d)
    calls[f"copy_nt {d}"] = lambda a=ins[0], b=dst: K.copy_nt(a.ctypes.data, b.ctypes.data, a.size)
samples = bench.time_interleaved(calls, 2, ROUNDS, 1)
print(f"{op} ({chosen}) on {PAGES} pages, every buffer {SHIFT} bytes past a 2 MB boundary, {ROUNDS} rounds; GB/s at the median (best)")
for d in offsets:
    o, c = samples[f"{op} {d}"], samples[f"copy_nt {d}"]
    copy = 8 * ins[0].size
    print(f"output - input = {d:4d} mod 4096: {op} {moved / np.median(o) / 1e9:5.1f} ({moved / min(o) / 1e9:5.1f}), "
          f"copy_nt {copy / np.median(c) / 1e9:5.1f} ({copy / min(c) / 1e9:5.1f})")
