"""The chosen kernels' time in cache (`contenders.measure_in_cache`, a child each, as the bench
stage starts them) for the ops of a pipeline's results, with the code of the tree on PYTHONPATH:
    python docs/experiments/2026-12-07f-cpu/in_cache.py RESULTS [op ...]
Prints, per op, the cuts timed, `seconds` (the op's time in cache), the fixed cost of a call where
two cuts were timed, and the op's traffic at 80% of the roofline's stream bandwidth (the bar)."""
import json, os, sys

import yaml

from autoperfect import bench
from autoperfect.spec import parse_ops

results = sys.argv[1]
ops = sys.argv[2:] or ["layernorm", "rmsnorm", "add_rmsnorm", "mean_var", "chain"]
root = os.path.dirname(os.path.abspath(results))
specs = parse_ops(yaml.safe_load(open(os.path.join(root, "config.yaml")))["ops"])
ceiling = json.load(open(os.path.join(results, "roofline.json")))
for op in ops:
    bench_json = json.load(open(os.path.join(results, op, "cpu", "bench.json")))
    validation = json.load(open(os.path.join(results, op, "cpu", "validation.json")))
    chosen = {k: os.path.join(root, validation["verified"][k][v["chosen"]]) for k, v in bench_json["variants"].items()}
    spec = specs[op]
    got = bench.run_condition("warm", "autoperfect.contenders:measure_in_cache",
                              {"spec": spec.to_json(), "backend": "cpu", "chosen": chosen}, 600)["in_cache"]
    bar = bench_json["bytes_moved"] / (0.8 * ceiling["bandwidth_gbps"] * 1e9)
    cuts = [got["divisor"]] + ([got["half"]["divisor"]] if "half" in got else [])
    fixed = f", {got['per_call_s'] * 1e6:.2f} us a call" if "per_call_s" in got else ""
    print(f"{op}: cuts {cuts}, {got['seconds'] * 1e3:.3f} ms in cache"
          f"{' (fixed costs included)' if got.get('fixed_included') else ''}{fixed}; "
          f"calls {got['calls_s'] * 1e3:.3f} ms; bar {bar * 1e3:.3f} ms", flush=True)
