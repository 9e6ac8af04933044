"""Every CPU schedule of OP's kernel rendered by the checked-out code, into DIR/OP.SCHEDULE.c:
`python docs/experiments/2026-12-03c-cpu/render.py OP DIR` (from the repository root). Run it at
two commits (a `git worktree` of the older one) to compare renderings with ab_two.py or hot.py."""
import sys
from pathlib import Path

import yaml

from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, out = sys.argv[1], Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
k = [k for k in front(parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])).kernels if k][0]
for s in cpu.schedules_for(k):
    (out / f"{op}.{s.name}.c").write_text(cpu.render(k, s))
    print(out / f"{op}.{s.name}.c")
