"""Time an op's chosen kernel against NT copy of the same bytes: back to back, and with a 256 MB sweep between calls."""
import json, sys, yaml, numpy as np, mlx.core as mx
from autoperfect import backends, bench, roofline
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
loaded = {k.name: be.Kernel(k, val["verified"][k.name][chosen[k.name]["chosen"]]) for k in f.kernels if k}
prog = program(f, loaded)
kern = C.evaluated(prog, arrays)
streams = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), C.ideal_bytes(f))
big = np.ones(64 << 20, np.float32)
sweep = lambda: big.sum()
calls = {"kernel": kern, "copy_nt": streams["copy_nt"][0], "copy": streams["copy"][0]}
for label, extra in (("back to back", {}), ("sweep between", {"sweep": sweep})):
    s = bench.time_interleaved({**calls, **extra}, 3, 31, 1)
    med = {k: float(np.median(v)) for k, v in s.items()}
    b = C.ideal_bytes(f)
    print(op, label, {k: f"{v*1e3:.3f} ms" for k, v in med.items()}, "kernel GB/s %.1f" % (b / med["kernel"] / 1e9),
          "copy_nt GB/s %.1f" % (b / med["copy_nt"] / 1e9), "ratio %.2f" % (med["copy_nt"] / med["kernel"]))
