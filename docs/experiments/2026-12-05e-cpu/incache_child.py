"""The bench stage's in-cache measurement (contenders.measure_in_cache) of an op's chosen kernels, once,
in this process: the cut's and the half cut's median call and the figure. Run from a pipeline clone's
root after `snakemake --cores 4 all`, PYTHONPATH at the checkout whose code measures, under the warm
condition:

    python docs/experiments/2026-12-05e-cpu/incache_child.py add_rmsnorm
"""
import json
import sys

import yaml

from autoperfect import contenders as C
from autoperfect.spec import parse_op

op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
verified = json.load(open(f"results/{op}/cpu/validation.json"))["verified"]
variants = json.load(open(f"results/{op}/cpu/bench.json"))["variants"]
chosen = {k: verified[k][variants[k]["chosen"]] for k in verified}
r = C.measure_in_cache({"spec": spec.to_json(), "backend": "cpu", "chosen": chosen})["in_cache"]
print(f"{op}: cut {r['kernel']['median_s'] * 1e6:.1f} us, half {r['half']['kernel']['median_s'] * 1e6:.1f} us, "
      f"figure {r['seconds'] * 1e3:.3f} ms")
