"""OP's kernel from each source file given (same ABI: a candidate under results/OP/cpu/candidates, or
a hand edit of one), through ctypes on 9 rotating input sets on 4 KB pages (THP=1: numpy's huge-page
madvise on), bursts of 9, 21 interleaved rounds (ROUNDS=...), beside the roofline's streaming copy
of the op's input into a buffer of the same size (`copy_nt`), in the same sets. Each figure is a
median per call and its ratio to the copy's. Run from the repository root after `snakemake --cores
4 all`, under the benchmark's warm condition:
`python docs/experiments/2026-12-04e-cpu/beside_copy.py OP A.c B.c ...`."""
import os
import sys

import numpy as np
import yaml
from numpy._core import multiarray as ma

from autoperfect import backends, bench, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, paths = sys.argv[1], sys.argv[2:]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
f = front(spec)
xs, _ = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
ma._set_madvise_hugepage(os.environ.get("THP") == "1")
sets = [[np.array(x, np.float32, copy=True) for x in xs] + [np.zeros(sh, np.float32) for sh in k.launch.out_shapes]
        for _ in range(9)]
copies = [np.zeros(s[0].size, np.float32) for s in sets]
calls = {}
for p in paths:
    b = be.build(open(p).read())
    assert b.ok, b.log
    kern = be.Kernel(k, b.library, "ctypes")
    calls[os.path.basename(p)] = roofline.cycling([kern.numpy_call(s, k.launch) for s in sets])
calls["copy_nt"] = roofline.cycling([lambda s=s, d=d: K.copy_nt(s[0].ctypes.data, d.ctypes.data, s[0].size)
                                     for s, d in zip(sets, copies)])
samples = bench.time_interleaved(calls, 9, int(os.environ.get("ROUNDS", "21")), 1, burst=9)
copy = np.median(samples["copy_nt"])
for name, v in samples.items():
    print(f"{op} {name:40s} {np.median(v) * 1e3:.3f} ms  {copy / np.median(v):.2f}x the copy's speed")
