"""The benchmark's warm condition for OP with and without glibc.malloc.hugetlb=1 (MLX's and torch's
buffers on transparent huge pages), children one after another."""
import json, os, sys, yaml
from autoperfect import bench
from autoperfect.spec import parse_op
op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
validation = json.load(open(f"results/{op}/cpu/validation.json"))
payload = {"spec": spec.to_json(), "backend": "cpu", "variants": validation["verified"], "warmup": 3, "repeats": 21}
for tun in ("", "glibc.malloc.hugetlb=1", "", "glibc.malloc.hugetlb=1"):
    if tun: os.environ["GLIBC_TUNABLES"] = tun
    else: os.environ.pop("GLIBC_TUNABLES", None)
    r = bench.run_condition("warm", "autoperfect.contenders:measure", payload, 900)
    med = {"kernel": r["kernel"]["median_s"], **{k: v["median_s"] for k, v in r["baselines"].items()}}
    print(op, tun or "4K pages", {k: f"{v*1e3:.3f}" for k, v in med.items()},
          "vs torch_compile", round(r["speedup"].get("torch_compile", {}).get("median", float("nan")), 2),
          "stream in rounds", round(r["stream_in_rounds"]["mixed_gbps"], 1), flush=True)
