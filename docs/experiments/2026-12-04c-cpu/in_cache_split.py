"""contenders.in_cache on OP's chosen kernels (the variant bench.json names, built from its candidate
source), in this process, printing the median call times the cut (`calls_s`), the op's time with the
fixed cost of a call taken out (`seconds`, contenders.rows_time) and that cost (`per_call_s`).
    python docs/experiments/2026-12-04c-cpu/in_cache_split.py OP      (after snakemake --cores 4 all)
Run once per op, under the benchmark's warm condition: on 2026-12-04 (the EPYC) rmsnorm 0.458 ->
0.362 ms (1.50 us a call), layernorm 0.639 -> 0.476 (2.56), mean_var 0.490 -> 0.442 (1.50),
add_rmsnorm 0.895 -> 0.774 (1.89), softmax 1.756 -> 1.415 (10.64), gelu_tanh 1.582 -> 1.423 (4.98),
chain 3.171 -> 2.596 (2.25)."""
import glob, json, os, sys

import yaml
from autoperfect import backends, contenders
from autoperfect.pipeline import front
from autoperfect.spec import parse_op, seed_for
op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
b = json.load(open(f"results/{op}/cpu/bench.json"))
os.makedirs("/tmp/in_cache_split", exist_ok=True)
loaded = {}
for k in (k for k in front(spec).kernels if k is not None):
    chosen = b["variants"][k.name]["chosen"]
    src = open(glob.glob(f"results/{op}/cpu/candidates/{k.name}.{chosen}.c")[0]).read()
    lib = be.build(src, "/tmp/in_cache_split")
    loaded[k.name] = be.Kernel(k, lib.library)
r = contenders.in_cache(spec, front(spec), loaded, seed_for(op, "bench-order"))
print(op, f"divisor {r['divisor']} calls_s {r['calls_s']*1e3:.3f} ms  seconds {r['seconds']*1e3:.3f} ms  per_call {r.get('per_call_s', 0)*1e6:.2f} us  half {'half' in r}")
