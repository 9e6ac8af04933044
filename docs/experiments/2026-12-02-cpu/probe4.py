"""Old (results/) against newly rendered library of the chosen variant, in rounds with the op's baselines."""
import json, sys, tempfile, yaml, numpy as np, mlx.core as mx
from pathlib import Path
from autoperfect import backends, bench, interp
from autoperfect.backends import cpu
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op
from autoperfect import contenders as C
op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
val = json.load(open(f"results/{op}/cpu/validation.json"))
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"]
be = backends.get("cpu")
f = front(spec)
xs, arrays = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
vname = chosen[k.name]["chosen"]
sched = [s for s in cpu.schedules_for(k) if s.name == vname][0]
new = cpu.build(open(sys.argv[3]).read() if len(sys.argv) > 3 else cpu.render(k, sched), Path(tempfile.mkdtemp()))
assert new.ok, new.log
calls = {"old": C.evaluated(program(f, {k.name: be.Kernel(k, val["verified"][k.name][vname])}), arrays),
         "new": C.evaluated(program(f, {k.name: be.Kernel(k, new.library)}), arrays)}
fn = spec.function()
base = {"mlx_eager": C.evaluated(fn, arrays), "mlx_compile": C.evaluated(mx.compile(fn), arrays),
        "numpy": lambda: interp.evaluate(f.traced, xs, "native")}
from autoperfect import torch_baseline  # torch_contenders became torch_calls (2026-12-03b): calls of torch inputs
tensors = torch_baseline.tensors(xs, f.traced)
tc, _ = C.torch_calls(f, tensors, interp.evaluate(f.traced, xs, "float64"), {})
base.update({n: (lambda c=c: c(*tensors)) for n, c in tc.items()})
s = bench.time_interleaved({**calls, **base}, 3, int(sys.argv[2]) if len(sys.argv) > 2 else 21, 7)
print(op, vname, {n: round(float(np.median(v)) * 1e3, 3) for n, v in s.items()}, "new over old", bench.speedup(s["new"], s["old"], 7))
