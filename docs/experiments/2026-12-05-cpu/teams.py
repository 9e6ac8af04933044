"""OP's chosen kernel as our MLX op (native dispatch), single calls 2 ms apart, 101 of them, median: first in a
process where only MLX's stream thread has started an OpenMP team, then again after one ctypes call on
the main thread started a second team (as the benchmark's stream kernels and torch's intra-op pool
do), with the ctypes call's own median; then minor and major page faults per call of each. Run from a
pipeline clone's root after `snakemake --cores 4 all`, under the benchmark's warm condition:
`python docs/experiments/2026-12-05-cpu/teams.py rmsnorm`."""
import os, sys, time, statistics, json
import numpy as np, yaml
from autoperfect import backends
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op
op = sys.argv[1] if len(sys.argv) > 1 else "rmsnorm"; entry = yaml.safe_load(open("config.yaml"))["ops"][op]
be = backends.get("cpu")
spec = parse_op(op, entry); f = front(spec); (k,) = [k for k in f.kernels if k]
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"][k.name]["chosen"]
lib = be.build(open(f"results/{op}/cpu/candidates/{k.name}.{chosen}.c").read()).library
sets = C.input_sets(spec, f, 1, False)
nat = program(f, {k.name: be.Kernel(k, lib, "native")})
ins = [np.asarray(a) for a in sets[0].arrays]; outs = [np.zeros(sh, np.float32) for sh in k.launch.out_shapes]
direct = be.Kernel(k, lib, "ctypes").numpy_call(ins + outs, k.launch)
def med(call, n=101, pause=0.002):
    v = []
    for i in range(n):
        time.sleep(pause); t = time.perf_counter(); call(); v.append(time.perf_counter() - t)
    return statistics.median(v) * 1e6
native = lambda: C.evaluate(nat, sets[0].arrays)
a = med(native)
direct()  # the main thread's team now exists
b = med(native); c = med(direct)
print(f"{op} native, one team: {a:.1f} us; after a ctypes call made the main thread's team: native {b:.1f} us, ctypes {c:.1f} us")
import resource
def faults(call, n=50):
    r0 = resource.getrusage(resource.RUSAGE_SELF); 
    for i in range(n): time.sleep(0.002); call()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (r1.ru_minflt - r0.ru_minflt) / n, (r1.ru_majflt - r0.ru_majflt) / n
print("faults per call: native", faults(native), "ctypes", faults(direct))
