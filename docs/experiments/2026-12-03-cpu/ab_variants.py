"""softmax's stash_v16 against scratch_v16 and torch eager, interleaved, through the pipeline's program."""
import sys, yaml, numpy as np
from autoperfect import backends, bench
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op
from autoperfect import contenders as C
import torch
op = sys.argv[1] if len(sys.argv) > 1 else "softmax"
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec); xs, arrays = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
calls = {}
for s in be.schedules_for(k):
    if s.name in sys.argv[2].split(","):
        b = be.build(be.render(k, s)); assert b.ok, b.log
        calls[s.name] = C.evaluated(program(f, {k.name: be.Kernel(k, b.library)}), arrays)
if op == "softmax":
    t = torch.from_numpy(np.asarray(xs[0])); calls["torch_eager"] = lambda: torch.softmax(t, -1)
from autoperfect import roofline
st = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), C.ideal_bytes(f))
calls["copy_nt"] = st["copy_nt"][0]; calls["copy"] = st["copy"][0]
s = bench.time_interleaved(calls, 3, 41, 1)
print({n: f"{np.median(v)*1e3:.3f} ms" for n, v in s.items()})
base = sys.argv[2].split(",")[0]
for n in s:
    if n != base: print(n, "over", base, bench.speedup(s[n], s[base], 1))
