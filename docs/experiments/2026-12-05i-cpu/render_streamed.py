"""OP's CPU schedules (config.yaml) rendered into DIR, each also with streaming stores toggled:
DIR/<kernel>.NAME.c, DIR/<kernel>.NAME_st.c (streamed) or NAME_ns.c (not), the names
../2026-12-05h-cpu/from_memory.py loads. `python render_streamed.py OP DIR` from the repository root."""
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
    toggled = replace(s, stream=0 if s.stream else cpu.STREAM_FROM)
    for name, schedule in ((s.name, s), (f"{s.name}_{'ns' if s.stream else 'st'}", toggled)):
        (out / f"{k.name}.{name}.c").write_text(cpu.render(k, schedule))
        print(out / f"{k.name}.{name}.c")
