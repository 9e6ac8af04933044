"""The bench's in-cache figure (contenders.in_cache) for OP's candidates VARIANTS, each in turn, in
this process: the cut's call, the half cut's, and the op's rows' time at full size. Run from the
root of a pipeline's clone (its results/OP/cpu/candidates), after `snakemake --cores 4 all`:
`OMP_PLACES=cores OMP_PROC_BIND=close python docs/experiments/2026-12-04e-cpu/incache.py layernorm rows_shifted_v16,rows_v16`."""
import glob
import sys

import yaml

from autoperfect import backends
from autoperfect import contenders as C
from autoperfect.pipeline import front
from autoperfect.spec import parse_op, seed_for

op, variants = sys.argv[1], sys.argv[2].split(",")
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
f = front(spec)
k = [k for k in f.kernels if k][0]
for v in variants:
    (src,) = glob.glob(f"results/{op}/cpu/candidates/{k.name}.{v}.c")
    loaded = {k.name: be.Kernel(k, be.build(open(src).read()).library)}
    r = C.in_cache(spec, f, loaded, seed_for(spec.name, "bench-order"))
    print(f"{op} {v}: cut {r['kernel']['median_s'] * 1e6:.2f} us, half {r['half']['kernel']['median_s'] * 1e6:.2f} us,"
          f" the op's rows {r['seconds'] * 1e3:.3f} ms")
