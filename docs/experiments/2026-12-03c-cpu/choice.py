"""contenders.choose_variants for OP's kernel between the pipeline's candidates V1,V2,... as the
bench's measure() calls it (the baselines interleaved), REPS times with different orders:
`python docs/experiments/2026-12-03c-cpu/choice.py OP V1,V2 REPS [nobase]`; with SAME=1 every
repetition takes the bench's own order of rounds, otherwise each its own."""
import glob
import os
import sys
from autoperfect import backends, interp
from autoperfect import contenders as C
from autoperfect.pipeline import front
from autoperfect.spec import parse_op, seed_for
import yaml
op, names, reps = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec)
k = [k for k in f.kernels if k][0]
libs = {}
for n in names:
    (src,) = glob.glob(f"results/{op}/cpu/candidates/{k.name}.{n}.c")
    b = be.build(open(src).read()); libs[n] = b.library
sets = C.input_sets(spec, f, 1, C.has_torch())
ref = interp.evaluate(f.traced, list(sets[0].xs), "float64")
checks = {}
torch_fns, _ = C.torch_calls(f, sets[0].tensors, ref, checks)
calls = C.user_calls(spec, f, torch_fns, checks, ref, sets[0])
base = C.over(calls, sets[:1]) if "nobase" not in sys.argv else {}
for r in range(reps):
    # SAME=1: every repetition in the order the bench's own seed gives (the pipeline's rounds)
    seed = seed_for(spec.name, "bench-order") if os.environ.get("SAME") else seed_for(spec.name, "bench-order", str(r))
    ch = C.choose_variants(f, {k.name: libs}, list(sets[0].arrays), be, seed, base)
    c = ch[k.name]
    print(r, {v: round(s * 1e3, 3) for v, s in c["median_s"].items()}, c["chosen"], c["over_runner_up"]["median"] if "median" in c["over_runner_up"] else c["over_runner_up"])
