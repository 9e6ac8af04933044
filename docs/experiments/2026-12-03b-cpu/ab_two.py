"""OP's kernel from two source files A and B (same ABI) through ctypes on 9 rotating input sets
(4 KB pages; SETS=1 in the environment: one set, which a 16 MB input leaves in the L3), bursts of 9,
21 rounds, beside the streaming copy of the op's bytes; outputs compared (max abs difference
printed, not required equal)."""
import os, sys, yaml, numpy as np
from numpy._core import multiarray as ma
from autoperfect import backends, bench, roofline
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
from autoperfect import contenders as C
op, paths = sys.argv[1], sys.argv[2:]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec); xs, _ = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
ma._set_madvise_hugepage(False)
sets = [[np.array(x, np.float32, copy=True) for x in xs] + [np.zeros(sh, np.float32) for sh in k.launch.out_shapes] for _ in range(int(os.environ.get("SETS", "9")))]
calls, outs = {}, {}
for p in paths:
    b = be.build(open(p).read()); assert b.ok, b.log
    kern = be.Kernel(k, b.library, "ctypes")
    calls[p] = roofline.cycling([lambda kern=kern, b=b: kern.run_numpy(b, k.launch) for b in sets])
    calls[p](); outs[p] = [o.copy() for o in sets[0][len(xs):]]
for p in paths[1:]:
    print(p, "max |diff| vs", paths[0], max(float(np.max(np.abs(a - b))) for a, b in zip(outs[p], outs[paths[0]])))
st = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), C.ideal_bytes(f), 9)
calls["copy_nt"] = st["copy_nt"][0]
smp = bench.time_interleaved(calls, 9, 21, 1, burst=9)
for n, v in smp.items():
    print(f"{op} {n:30s} {np.median(v)*1e3:.3f} ms  {np.median(smp['copy_nt'])/np.median(v):.2f} of copy_nt")
