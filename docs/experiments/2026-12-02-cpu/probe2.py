import json, sys, time, yaml, numpy as np, mlx.core as mx
from autoperfect import backends, bench, roofline
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op
from autoperfect import contenders as C
op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
val = json.load(open(f"results/{op}/cpu/validation.json"))
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"]
f = front(spec)
xs, arrays = C.inputs_for(spec)
def prog(dispatch, at=f):
    be = backends.get("cpu")
    loaded = {k.name: be.Kernel(k, val["verified"][k.name][chosen[k.name]["chosen"]], dispatch) for k in at.kernels if k}
    return program(at, loaded)
# 16 rows: a program of their own (a program's launches are fixed; the kernel's source serves both)
small = [mx.array(a[:16]) if a.ndim == 2 else a for a in arrays]; mx.eval(*small)
f16 = front(spec.with_shapes({i.name: tuple(x.shape) for i, x in zip(spec.inputs, small)}))
k = [k for k in f.kernels if k][0]
lib = val["verified"][k.name][chosen[k.name]["chosen"]]
ck = backends.get("cpu").Kernel(k, lib, "ctypes")
views = [np.asarray(x) for x in xs] + [np.zeros(o, np.float32) for o in k.launch.out_shapes]
streams = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), C.ideal_bytes(f))
big = np.ones(64 << 20, np.float32)
calls = {"native": C.evaluated(prog("native"), arrays), "native_16rows": C.evaluated(prog("native", f16), small),
         "raw_ctypes": lambda: ck.run_numpy(views, k.launch), "copy_nt": streams["copy_nt"][0],
         "mx_add_16rows": C.evaluated(lambda a: a + 1, small[:1])}
for label, extra in (("back to back", {}), ("sweep", {"sweep": lambda: big.sum()}), ("sleep", {"sleep": lambda: time.sleep(0.02)})):
    s = bench.time_interleaved({**calls, **extra}, 3, 31, 1)
    print(op, label, {k: f"{np.median(v)*1e3:.3f}" for k, v in s.items() if k not in ("sweep", "sleep")})
