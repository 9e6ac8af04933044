"""OP's kernel from the old renderer (a candidate file) against the new rendering of SCHEDULE,
through ctypes on 9 rotating input sets (4 KB pages), bursts of 9, with copy_nt of the op's bytes.
Outputs must be equal bit for bit, or with a fourth argument `close` within 1e-5 relative (a change
that reorders a sum)."""
import sys, yaml, numpy as np
from numpy._core import multiarray as ma
from autoperfect import backends, bench, roofline
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
from autoperfect import contenders as C
op, sched, old_path = sys.argv[1], sys.argv[2], sys.argv[3]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec); xs, _ = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
s = {s.name: s for s in be.schedules_for(k)}[sched]
srcs = {"old": open(old_path).read(), "new": be.render(k, s)}
assert srcs["old"] != srcs["new"]
ma._set_madvise_hugepage(False)
sets = [[np.array(x, np.float32, copy=True) for x in xs] + [np.zeros(sh, np.float32) for sh in k.launch.out_shapes] for _ in range(9)]
calls = {}
outs = {}
for n, src in srcs.items():
    kern = be.Kernel(k, be.build(src).library, "ctypes")
    calls[n] = roofline.cycling([lambda kern=kern, b=b: kern.run_numpy(b, k.launch) for b in sets])
    calls[n](); outs[n] = [o.copy() for o in sets[0][len(xs):]]
same = np.array_equal if sys.argv[4:] != ["close"] else (lambda a, b: np.allclose(a, b, rtol=1e-5, atol=1e-6))
assert all(same(a, b) for a, b in zip(outs["old"], outs["new"]))
st = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), C.ideal_bytes(f), 9)
calls["copy_nt"] = st["copy_nt"][0]
smp = bench.time_interleaved(calls, 9, 21, 1, burst=9)
for n, v in smp.items():
    print(f"{op} {n:8s} {np.median(v)*1e3:.3f} ms")
sp = bench.speedup(smp["new"], smp["old"], 1)
print(f"{op} new over old: {sp['median']:.2f}x [{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}]; new/copy_nt {np.median(smp['copy_nt'])/np.median(smp['new']):.2f}, old/copy_nt {np.median(smp['copy_nt'])/np.median(smp['old']):.2f}")
