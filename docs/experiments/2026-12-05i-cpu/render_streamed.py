"""GELU's CPU schedules, each also with streaming stores toggled: DIR/gelu_tanh.NAME.c, NAME_st (streamed) / NAME_ns (not)."""
import sys
from dataclasses import replace
from pathlib import Path
import yaml
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
op, out = sys.argv[1], Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
k = [k for k in front(parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])).kernels if k][0]
print(k.name)
for s in cpu.schedules_for(k):
    print(s.name, "stream", s.stream, "wide?", s)
    (out / f"{op}.{s.name}.c").write_text(cpu.render(k, s))
    t = replace(s, stream=0 if s.stream else cpu.STREAM_FROM)
    (out / f"{op}.{s.name}_{'ns' if s.stream else 'st'}.c").write_text(cpu.render(k, t))
