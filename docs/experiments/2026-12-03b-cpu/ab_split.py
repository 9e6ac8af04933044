"""OP's chosen-style schedule SCHEDULE rendered as is and with split=SPLIT partial results, through ctypes on 9 rotating input sets (4 KB pages), bursts of 9, 21 rounds, beside the streaming copy."""
import sys, yaml, numpy as np
from dataclasses import replace
from numpy._core import multiarray as ma
from autoperfect import backends, bench, roofline
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
from autoperfect import contenders as C
op, sched, split = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec); xs, _ = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
s = {s.name: s for s in be.schedules_for(k)}[sched]
srcs = {f"split{s.split}": be.render(k, s), f"split{split}": be.render(k, replace(s, split=split))}
ma._set_madvise_hugepage(False)
sets = [[np.array(x, np.float32, copy=True) for x in xs] + [np.zeros(sh, np.float32) for sh in k.launch.out_shapes] for _ in range(9)]
calls = {}
for n, src in srcs.items():
    kern = be.Kernel(k, be.build(src).library, "ctypes")
    calls[n] = roofline.cycling([lambda kern=kern, b=b: kern.run_numpy(b, k.launch) for b in sets])
st = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), C.ideal_bytes(f), 9)
calls["copy_nt"] = st["copy_nt"][0]
smp = bench.time_interleaved(calls, 9, 21, 1, burst=9)
a, b = list(srcs)
sp = bench.speedup(smp[b], smp[a], 1)
print(op, {n: f"{np.median(v)*1e3:.3f}" for n, v in smp.items()}, f"{b} over {a}: {sp['median']:.2f}x [{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}]")
