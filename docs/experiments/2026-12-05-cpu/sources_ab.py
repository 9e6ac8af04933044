"""OP's kernel from each source given (same ABI), as our MLX op and through ctypes into a fixed output,
single calls PAUSE_MS (default 2) apart, N (201) rounds alternating in order, median and quartiles.
Run as teams.py: `python docs/experiments/2026-12-05-cpu/sources_ab.py rmsnorm A.c B.c`."""
import os, sys, time, statistics, json
import numpy as np, yaml
from autoperfect import backends
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op
op, paths = sys.argv[1], sys.argv[2:]
pause = float(os.environ.get("PAUSE_MS", "2")) / 1e3
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec); (k,) = [k for k in f.kernels if k]
sets = C.input_sets(spec, f, 1, False)
ins = [np.asarray(a) for a in sets[0].arrays]
outs = [np.zeros(sh, np.float32) for sh in k.launch.out_shapes]
ways = {}
for p in paths:
    lib = be.build(open(p).read()).library
    nat = program(f, {k.name: be.Kernel(k, lib, "native")})
    ways["native " + os.path.basename(p)] = (lambda nat=nat: C.evaluate(nat, sets[0].arrays))
    ways["ctypes " + os.path.basename(p)] = be.Kernel(k, lib, "ctypes").numpy_call(ins + outs, k.launch)
times = {n: [] for n in ways}
order = list(ways.items())
for i in range(int(os.environ.get("N", "201"))):
    for n, call in (order if i % 2 else order[::-1]):
        time.sleep(pause); t = time.perf_counter(); call(); times[n].append(time.perf_counter() - t)
for n, v in times.items():
    print(f"{n:40s} median {statistics.median(v)*1e6:8.1f} us  q1 {np.percentile(v,25)*1e6:8.1f}  q3 {np.percentile(v,75)*1e6:8.1f}")
