"""Every CPU schedule of OP's kernel rendered by the checked-out code into DIR/OP.SCHEDULE.c, each
also with its split loops as AVX-512 vectors (`_vec`) and that contracted (`_vecfma`):
`python docs/experiments/2026-12-05c-cpu/render.py OP DIR` from the repository root. Prints the
kernel's symbol (what ../2026-12-04-cpu/hb.c is given)."""
import sys
from dataclasses import replace
from pathlib import Path

import yaml

from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, out = sys.argv[1], Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
k = [k for k in front(parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])).kernels if k][0]
for s in cpu.schedules_for(k):
    for tag, t in (("", s), ("_vec", replace(s, vectors=True)), ("_vecfma", replace(s, vectors=True, contract=True))):
        (out / f"{op}.{s.name}{tag}.c").write_text(cpu.render(k, t))
print(k.name)
