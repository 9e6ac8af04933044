"""The benchmark (`contenders.measure`, 21 rounds, no scaling rows) for OP under CONDITION with
VAR=A and VAR=B in alternating children (A B A B; "-" leaves VAR unset). Each child prints the
kernel's and every baseline's median, the kernel's speedups, its GB/s and the stream kernels' GB/s
in the same rounds (added 2026-12-04, evening).

    python docs/experiments/2026-12-03-cpu/env_ab.py chain default AUTOPERFECT_HUGE_PAGES 0 1
    python docs/experiments/2026-12-03-cpu/env_ab.py rmsnorm warm GLIBC_TUNABLES - glibc.malloc.hugetlb=1
"""
import json, os, sys, yaml
from autoperfect import bench
from autoperfect.spec import parse_op
op, condition, var, *values = sys.argv[1:]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
validation = json.load(open(f"results/{op}/cpu/validation.json"))
payload = {"spec": spec.to_json(), "backend": "cpu", "variants": validation["verified"], "warmup": 3, "repeats": 21}
for value in values * 2:
    if value == "-":
        os.environ.pop(var, None)
    else:
        os.environ[var] = value
    r = bench.run_condition(condition, "autoperfect.contenders:measure", payload, 900)
    medians = {"kernel": r["kernel"]["median_s"], **{k: v["median_s"] for k, v in r["baselines"].items()}}
    s = r["stream_in_rounds"]
    print(op, condition, f"{var}={value}", {k: f"{v * 1e3:.3f} ms" for k, v in medians.items()},
          {k: f"{v['median']:.2f}x" for k, v in r["speedup"].items()},
          f"kernel {r['bytes_moved'] / medians['kernel'] / 1e9:.1f} GB/s; in rounds: stream "
          f"{s['gbps']:.1f}, its mix {s['mixed_gbps']:.1f} GB/s", flush=True)
