"""OP's pipeline kernel (`results/OP/cpu/candidates/*.rows_v16.c`) through the native dispatch,
timed right after one call of each other contender (only ours timed), after itself, and after a
1 ms sleep: 15 rounds, medians. Run from the repository root after `snakemake --cores 4 all`,
under the benchmark's warm condition: `python docs/experiments/2026-12-03c-cpu/after.py OP`."""
import sys, time, glob
import numpy as np, yaml
from autoperfect import backends, interp
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op
op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec)
k = [k for k in f.kernels if k][0]
(src,) = glob.glob(f"results/{op}/cpu/candidates/{k.name}.rows_v16.c")
ours = program(f, {k.name: be.Kernel(k, be.build(open(src).read()).library)})
sets = C.input_sets(spec, f, 1, C.has_torch())
ref = interp.evaluate(f.traced, list(sets[0].xs), "float64")
checks = {}
torch_fns, _ = C.torch_calls(f, sets[0].tensors, ref, checks)
calls = C.user_calls(spec, f, torch_fns, checks, ref, sets[0])
s = sets[0]
kern = lambda: C.evaluate(ours, s.arrays)
res = {}
for _ in range(3):
    for n, c in calls.items(): c(s); kern()
for rep in range(15):
    for n, c in list(calls.items()) + [("kernel", None), ("sleep1ms", None)]:
        if c is not None: c(s)
        elif n == "kernel": kern()
        else: time.sleep(0.001)
        t = time.perf_counter(); kern(); res.setdefault(n, []).append(time.perf_counter() - t)
for n, v in res.items(): print(f"kernel after {n:14s} {np.median(v)*1e3:.3f} ms")
