"""Every CPU rendering of every op in config.yaml and configs/unseen.yaml into DIR (one file each), to
compare a refactor's output with `diff -r`: `python docs/experiments/2026-12-05j-cpu/renderings.py DIR` from
the repository root."""
import sys
from pathlib import Path
import yaml
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_ops
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
n = 0
for cfg in ("config.yaml", "configs/unseen.yaml"):
    for name, spec in parse_ops(yaml.safe_load(open(cfg))["ops"]).items():
        for k in [k for k in front(spec).kernels if k]:
            for s in cpu.schedules_for(k):
                (out / f"{name}.{k.name}.{s.name}.c").write_text(cpu.render(k, s)); n += 1
print(n, "renderings")
