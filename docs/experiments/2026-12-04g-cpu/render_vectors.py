"""Every CPU schedule of OP's kernel with a split (partial results), rendered as it is and with
Schedule.vectors turned on, into DIR/OP.SCHEDULE.c and DIR/OP.SCHEDULE.vec.c (from the repository
root): `python docs/experiments/2026-12-04g-cpu/render_vectors.py rmsnorm /tmp/r`. The pipeline
offers the vector groups only with our exp's stash (apmath_scratch_avx512); this renders them for
the plain row kernels too, to time them with ../2026-12-04f-cpu/incache_ab.py."""
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
    if s.split and not s.vectors:
        for suffix, schedule in (("", s), (".vec", replace(s, vectors=True))):
            (out / f"{op}.{s.name}{suffix}.c").write_text(cpu.render(k, schedule))
            print(out / f"{op}.{s.name}{suffix}.c")
