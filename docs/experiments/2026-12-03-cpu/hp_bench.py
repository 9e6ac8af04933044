"""The benchmark's conditions for OP with our outputs offered huge pages and without
(AUTOPERFECT_HUGE_PAGES=0), children alternating; no scaling rows."""
import json, os, sys, yaml
from autoperfect import bench
from autoperfect.spec import parse_op
op, condition = sys.argv[1], sys.argv[2]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
validation = json.load(open(f"results/{op}/cpu/validation.json"))
payload = {"spec": spec.to_json(), "backend": "cpu", "variants": validation["verified"], "warmup": 3, "repeats": 21}
for hint in ("0", "1", "0", "1"):
    os.environ["AUTOPERFECT_HUGE_PAGES"] = hint
    r = bench.run_condition(condition, "autoperfect.contenders:measure", payload, 900)
    print(op, condition, "huge pages offered" if hint == "1" else "plain pages      ",
          f"kernel {r['kernel']['median_s']*1e3:.3f} ms", {k: f"{v['median']:.2f}x" for k, v in r["speedup"].items()}, flush=True)
