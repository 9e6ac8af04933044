"""OP's schedules through ctypes on 9 rotating input sets (bursts of 9), beside copy_nt and read
over 9 slices of the op's bytes; numpy buffers with huge pages on ("huge") and off ("4k")."""
import sys, yaml, numpy as np
from numpy._core import multiarray as ma
from autoperfect import backends, bench, roofline
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
from autoperfect import contenders as C
op, names = sys.argv[1], sys.argv[2].split(",")
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec); xs, _ = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
kerns = {s.name: be.Kernel(k, be.build(be.render(k, s)).library, "ctypes") for s in be.schedules_for(k) if s.name in names}
rk = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
calls = {}
for huge in (True, False):
    ma._set_madvise_hugepage(huge)
    tag = "huge" if huge else "4k"
    sets = [[np.array(x, np.float32, copy=True) for x in xs] + [np.zeros(sh, np.float32) for sh in k.launch.out_shapes] for _ in range(9)]
    for n, kern in kerns.items():
        calls[f"{n}@{tag}"] = roofline.cycling([lambda kern=kern, b=b: kern.run_numpy(b, k.launch) for b in sets])
    st = roofline.stream_calls(rk, C.ideal_bytes(f), 9)
    calls[f"copy_nt@{tag}"] = st["copy_nt"][0]; calls[f"read@{tag}"] = st["read"][0]
s = bench.time_interleaved(calls, 9, int(sys.argv[3]) if len(sys.argv) > 3 else 15, 1, burst=9)
for n, v in s.items():
    print(f"{n:28s} {np.median(v)*1e3:.3f} ms")
