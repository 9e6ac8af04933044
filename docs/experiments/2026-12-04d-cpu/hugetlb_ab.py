"""The benchmark's single calls (`contenders.measure`, 21 rounds, no scaling) for OP under the warm
allocator, in children alternating without and with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (every
large malloc'd block, MLX's and torch's alike, madvised onto transparent huge pages), PAIRS times.
Each child prints the kernel's median and GB/s, the stream kernels' GB/s in the same rounds (on
MLX's buffers: the pages every contender's inputs live on), and torch.compile's median.

    python docs/experiments/2026-12-04d-cpu/hugetlb_ab.py OP [PAIRS]   (after snakemake --cores 4 all)
"""
import json, os, sys, yaml
from autoperfect import bench
from autoperfect.spec import parse_op

op, pairs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
validation = json.load(open(f"results/{op}/cpu/validation.json"))
payload = {"spec": spec.to_json(), "backend": "cpu", "variants": validation["verified"], "warmup": 3, "repeats": 21}
for _ in range(pairs):
    for value in ("-", "glibc.malloc.hugetlb=1"):
        if value == "-":
            os.environ.pop("GLIBC_TUNABLES", None)
        else:
            os.environ["GLIBC_TUNABLES"] = value
        r = bench.run_condition("warm", "autoperfect.contenders:measure", payload, 900)
        k = r["kernel"]["median_s"]
        s = r["stream_in_rounds"]
        tc = r["baselines"].get("torch_compile", {}).get("median_s", float("nan"))
        print(f"{op} hugetlb={'on ' if value != '-' else 'off'} kernel {k * 1e3:.3f} ms "
              f"{r['bytes_moved'] / k / 1e9:.1f} GB/s; in rounds: stream {s['gbps']:.1f}, its mix "
              f"{s['mixed_gbps']:.1f} GB/s; torch_compile {tc * 1e3:.3f} ms", flush=True)
