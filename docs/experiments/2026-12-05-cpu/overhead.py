"""What a single call of OP's chosen kernel pays beyond the kernel, by size: the op's inputs cut to
ROWS rows (1: no parallel region, the kernel's `if` keeps it on one thread; 32 and more: a team of
two), each way called after PAUSE_MS of sleep (the threads idle, as between a benchmark's rounds),
interleaved, 201 calls each, median in microseconds:
- `mlx_tiny`: MLX's own op on 16 floats (mx.eval(x + 1)): MLX's handoff to its stream thread;
- `native`: our MLX op (autoperfect.native): the handoff, the stream thread's OpenMP team;
- `ctypes`: the kernel through ctypes on the main thread into a fixed output (the main thread's team).
Run from a pipeline clone's root after `snakemake --cores 4 all`, under the benchmark's warm condition:
`python docs/experiments/2026-12-05-cpu/overhead.py rmsnorm 1,32,512,4096`."""
import os
import statistics
import sys
import time

import mlx.core as mx
import numpy as np
import yaml

from autoperfect import backends
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op

op, sizes = sys.argv[1], [int(r) for r in sys.argv[2].split(",")]
pause = float(os.environ.get("PAUSE_MS", "2")) / 1e3
entry = yaml.safe_load(open("config.yaml"))["ops"][op]
be = backends.get("cpu")
full = front(parse_op(op, entry))
(k_full,) = [k for k in full.kernels if k]
import json
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"][k_full.name]["chosen"]
lib = be.build(open(f"results/{op}/cpu/candidates/{k_full.name}.{chosen}.c").read()).library
tiny = mx.ones((16,))
mx.eval(tiny)
print(op, chosen, f"pause {pause * 1e3:g} ms")
for rows in sizes:
    cut = {**entry, "inputs": {n: {**a, "shape": [rows, *a["shape"][1:]] if len(a["shape"]) > 1 else a["shape"]}
                               for n, a in entry["inputs"].items()}}
    spec = parse_op(op, cut)
    f = front(spec)
    (k,) = [k for k in f.kernels if k]
    sets = C.input_sets(spec, f, 1, False)
    native = program(f, {k.name: be.Kernel(k, lib, "native")})
    ins = [np.asarray(a) for a in sets[0].arrays]
    outs = [np.zeros(sh, np.float32) for sh in k.launch.out_shapes]
    direct = be.Kernel(k, lib, "ctypes").numpy_call(ins + outs, k.launch)
    ways = {"mlx_tiny": lambda: mx.eval(tiny + 1), "native": lambda: C.evaluate(native, sets[0].arrays),
            "ctypes": direct}
    times = {n: [] for n in ways}
    for i in range(201):
        for n, call in (ways.items() if i % 2 else reversed(ways.items())):
            time.sleep(pause)
            t = time.perf_counter()
            call()
            times[n].append(time.perf_counter() - t)
    print(f"rows {rows:5d}: " + "  ".join(f"{n} {statistics.median(v) * 1e6:8.1f}" for n, v in times.items()))
