"""Write OP's candidate sources for the named schedules (as the checked-out renderer makes them) to
OUT/OP.SCHEDULE.c, for ../2026-12-03b-cpu/ab_two.py:

    python docs/experiments/2026-12-04d-cpu/render.py softmax /tmp/sm libmvec_scratch_v16 apmath_scratch_v16 apmath_v16
    python docs/experiments/2026-12-03b-cpu/ab_two.py softmax /tmp/sm/softmax.*.c
"""
import sys
from pathlib import Path

import yaml

from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, out, names = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
out.mkdir(parents=True, exist_ok=True)
(k,) = [k for k in front(parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])).kernels if k]
for s in cpu.schedules_for(k):
    if s.name in names:
        (out / f"{op}.{s.name}.c").write_text(cpu.render(k, s))
        print(out / f"{op}.{s.name}.c")
