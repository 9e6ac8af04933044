import sys, yaml, numpy as np
from autoperfect import backends, bench, roofline
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
from autoperfect import contenders as C
op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec); xs, arrays = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
calls = {}
outs = [np.zeros(s, np.float32) for s in k.launch.shapes[len(k.inputs):]] if hasattr(k.launch, "shapes") else None
for s in be.schedules_for(k):
    if s.name in sys.argv[2].split(","):
        b = be.build(be.render(k, s)); kern = be.Kernel(k, b.library, "ctypes")
        bufs = [np.ascontiguousarray(x, np.float32) for x in xs] + [np.zeros(sh, np.float32) for sh in k.launch.out_shapes]
        calls[s.name] = (lambda kern=kern, bufs=bufs: kern.run_numpy(bufs, k.launch))
st = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), C.ideal_bytes(f))
calls["copy_nt"] = st["copy_nt"][0]; calls["copy"] = st["copy"][0]; calls["read"] = st["read"][0]
s = bench.time_interleaved(calls, 3, 41, 1)
print(op, {n: f"{np.median(v)*1e3:.3f} ms" for n, v in s.items()})
