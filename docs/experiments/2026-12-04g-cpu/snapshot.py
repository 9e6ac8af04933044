"""What the checked-out code renders and plants for config.yaml's ops, into DIR, to be compared with
another commit's (`diff -r`): DIR/OP.KERNEL.SCHEDULE.c for every schedule of every kernel, and
.vec.c with Schedule.vectors turned on; DIR/mutants.json, each planted mutant's source hash (or why
its class does not apply) by op, schedule and class. A refactoring that changes neither changes no
kernel and no mutant. From the repository root, at each commit (a `git worktree` for the older):
`PYTHONPATH=. python docs/experiments/2026-12-04g-cpu/snapshot.py DIR`."""
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import yaml

from autoperfect.backends import cpu
from autoperfect.mutants import Mutant, plant
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
planted = {}
for op, spec in yaml.safe_load(open("config.yaml"))["ops"].items():
    for k in [k for k in front(parse_op(op, spec)).kernels if k is not None]:
        for s in cpu.schedules_for(k):
            source = cpu.render(k, s)
            (out / f"{op}.{k.name}.{s.name}.c").write_text(source)
            (out / f"{op}.{k.name}.{s.name}.vec.c").write_text(cpu.render(k, replace(s, vectors=True)))
            for m in plant(k, source):
                planted[f"{op}.{s.name}.{m.bug}"] = (hashlib.sha256(m.source.encode()).hexdigest()
                                                     if isinstance(m, Mutant) else m.reason)
(out / "mutants.json").write_text(json.dumps(planted, indent=1, sort_keys=True) + "\n")
print(f"{len(list(out.glob('*.c')))} renderings, {len(planted)} mutants in {out}")
