"""What the cost model's reductions counted once per element they reduce (e168e00) change in the
roofline's bound of config.yaml's ops: each op's kernel work (cost.kernel_work) and the bound it
gives against a pipeline run's roofline and traffic (roofline.bound), beside the bound that run's
bench.json recorded. python bounds.py RESULTS (a pipeline run's results directory)."""
import json
import sys

import yaml

from autoperfect import cost, fuse, roofline, spec as specmod
from autoperfect.canon import canonicalize
from autoperfect.kernel_ir import lower
from autoperfect.trace import trace

results = sys.argv[1]
ops = specmod.parse_ops(yaml.safe_load(open("config.yaml"))["ops"])
roof = json.load(open(f"{results}/roofline.json"))
for name, sp in ops.items():
    p = fuse.fuse(canonicalize(trace(sp.function(), [(i.name, tuple(i.shape), i.dtype) for i in sp.inputs], name)))
    work = cost.kernel_work([lower(p, r) for r in p.regions if r.kind == "kernel"])
    bench = json.load(open(f"{results}/{name}/cpu/bench.json"))
    new = roofline.bound(bench["bytes_moved"], work, roof, bench["bytes_read"])
    old = bench["classification"]
    print(f"{name}: compute {old['compute_s'] * 1e3:.3f} -> {new['compute_s'] * 1e3:.3f} ms, memory "
          f"{new['memory_s'] * 1e3:.3f} ms, bound {old['bound']} -> {new['bound']}")
