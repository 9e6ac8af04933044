"""RMSNorm's chosen kernel through ctypes on the main thread in a process with no other OpenMP team (no
native op, no torch), at 1, 32 and 4096 rows, 201 calls with PAUSE_MS (default 0) of sleep before
each, median: what a parallel region costs when its worker still spins. Run as teams.py:
`PAUSE_MS=2 python docs/experiments/2026-12-05-cpu/one_team.py`."""
import os, sys, time, statistics, json
import numpy as np, yaml
from autoperfect import backends
from autoperfect import contenders as C
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
op = "rmsnorm"; entry = yaml.safe_load(open("config.yaml"))["ops"][op]
be = backends.get("cpu")
(kf,) = [k for k in front(parse_op(op, entry)).kernels if k]
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"][kf.name]["chosen"]
lib = be.build(open(f"results/{op}/cpu/candidates/{kf.name}.{chosen}.c").read()).library
pause = float(os.environ.get("PAUSE_MS", "0")) / 1e3
for rows in (1, 32, 4096):
    cut = {**entry, "inputs": {n: {**a, "shape": [rows, *a["shape"][1:]] if len(a["shape"]) > 1 else a["shape"]} for n, a in entry["inputs"].items()}}
    spec = parse_op(op, cut); f = front(spec); (k,) = [k for k in f.kernels if k]
    sets = C.input_sets(spec, f, 1, False)
    ins = [np.asarray(a) for a in sets[0].arrays]; outs = [np.zeros(sh, np.float32) for sh in k.launch.out_shapes]
    call = be.Kernel(k, lib, "ctypes").numpy_call(ins + outs, k.launch)
    v = []
    for i in range(201):
        if pause: time.sleep(pause)
        t = time.perf_counter(); call(); v.append(time.perf_counter() - t)
    print(f"rows {rows}: ctypes alone {statistics.median(v)*1e6:.1f} us (pause {pause*1e3:g} ms)")
