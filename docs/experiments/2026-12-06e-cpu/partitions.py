"""Every fusion partition and decision of config.yaml, configs/*.yaml, tests/test_fuse.py's
adversarial graphs and tests/op_table.py's cases, one line each: run it (from the checkout's root,
PYTHONPATH there) before and after a change to fuse.py and diff the outputs."""
import sys, yaml, json
sys.path.insert(0, "tests")
from autoperfect.spec import parse_op
from autoperfect.pipeline import front
from autoperfect import canon, fuse
from autoperfect.trace import trace
import test_fuse, op_table
for cfg in ("config.yaml", "configs/unseen.yaml", "configs/h200.yaml", "configs/mixed_precision.yaml"):
    for name, d in yaml.safe_load(open(cfg))["ops"].items():
        print(cfg, name, json.dumps(front(parse_op(name, d)).partition.to_json()["regions"]))
for fn, inputs, *_ in test_fuse.ADVERSARIAL:
    p = fuse.fuse(test_fuse.canonical(fn, inputs))
    print(fn.__name__, [r.nodes for r in p.regions], [(d.producer, d.consumer, d.fused, d.reason) for d in p.decisions])
for c in op_table.CASES:
    p = fuse.fuse(canon.canonicalize(op_table.trace_case(c)))
    print(c.name, [r.nodes for r in p.regions], [(d.fused, d.reason) for d in p.decisions])
