"""How fast the roofline's own stream kernels ran in each op's rounds, as a share of that run's
roofline (results/roofline.json's bandwidth_gbps): the best copy or triad kernel beside each
memory-bound op, single calls / steady bursts (bench.json's stream_in_rounds.gbps and
steady.stream_in_rounds.gbps). An op moving the same bytes cannot be held to more than these.
`python docs/experiments/2026-12-05b-cpu/streams_vs_roofline.py CLONE [CLONE ...]` (each a pipeline
clone after `snakemake --cores 4 all`)."""
import json
import sys

OPS = ("chain", "mean_var", "softmax", "layernorm", "rmsnorm", "add_rmsnorm")
for clone in sys.argv[1:]:
    roof = json.load(open(f"{clone}/results/roofline.json"))["bandwidth_gbps"]
    shares = []
    for op in OPS:
        b = json.load(open(f"{clone}/results/{op}/cpu/bench.json"))
        single, steady = b["stream_in_rounds"]["gbps"], b["steady"]["stream_in_rounds"]["gbps"]
        shares.append(f"{op} {single / roof:.0%}/{steady / roof:.0%}")
    print(f"{clone}: roofline {roof:.1f} GB/s; " + ", ".join(shares))
