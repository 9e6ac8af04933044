"""The benchmark child (`contenders.measure`: single calls and the steady state, 21 rounds) for OP
with VAR=A and VAR=B in alternating children (A B A B; "-" leaves VAR unset), under the warm
condition; each prints the kernel's, torch.compile's and the in-round streaming copy's and read's
medians in both states. Run from the repository root after `snakemake --cores 4 all`:

    python docs/experiments/2026-12-04b-cpu/env_steady.py rmsnorm GLIBC_TUNABLES - glibc.malloc.hugetlb=1
    python docs/experiments/2026-12-04b-cpu/env_steady.py mean_var GOMP_SPINCOUNT - 30000
"""
import json
import os
import sys

import yaml

from autoperfect import bench
from autoperfect.spec import parse_op

op, var, *values = sys.argv[1:]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
validation = json.load(open(f"results/{op}/cpu/validation.json"))
payload = {"spec": spec.to_json(), "backend": "cpu", "variants": validation["verified"], "warmup": 3,
           "repeats": 21, "steady": True}


def line(d: dict) -> str:
    streams = d["stream_in_rounds"]["kernels"]
    return (f"kernel {d['kernel']['median_s'] * 1e3:.3f} torch_compile "
            f"{d['baselines']['torch_compile']['median_s'] * 1e3:.3f} copy_nt "
            f"{streams['copy_nt']['median_s'] * 1e3:.3f} read {streams['read']['median_s'] * 1e3:.3f}")


for value in values * 2:
    if value == "-":
        os.environ.pop(var, None)
    else:
        os.environ[var] = value
    r = bench.run_condition("warm", "autoperfect.contenders:measure", payload, 900)
    print(op, f"{var}={value}", "single:", line(r), "| steady:", line(r["steady"]),
          "| chosen", {k: v["chosen"] for k, v in r["variants"].items()}, flush=True)
