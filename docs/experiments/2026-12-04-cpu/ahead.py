"""How far ahead row kernels should prefetch: OP's VARIANT rendered by the checked-out code, with
`ap_ahead` (rows on, CRenderer.ahead_rows) fixed to each of DISTANCES and as rendered, through
ctypes on 9 rotating input sets past the caches, bursts of 9, 21 interleaved rounds, beside the
streaming copy of the op's bytes. Run from the repository root under the benchmark's warm
condition: `python docs/experiments/2026-12-04-cpu/ahead.py OP VARIANT 1,2,3,4`."""
import re
import sys

import numpy as np
import yaml

from autoperfect import backends, bench, roofline
from autoperfect import contenders as C
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, variant, distances = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3].split(",")]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
f = front(spec)
k = [k for k in f.kernels if k][0]
(schedule,) = [s for s in cpu.schedules_for(k) if s.name == variant]
rendered = cpu.render(k, schedule)
assert "ap_ahead =" in rendered, "this variant does not prefetch"
sources = {"as rendered": rendered}
for d in distances:
    sources[f"ap_ahead={d}"] = re.sub(r"const int64_t ap_ahead = [^;]*;", f"const int64_t ap_ahead = {d};", rendered)
xs, _ = C.inputs_for(spec)
sets = [[np.array(x, np.float32, copy=True) for x in xs] + [np.zeros(sh, np.float32) for sh in k.launch.out_shapes]
        for _ in range(9)]
calls = {}
for name, src in sources.items():
    b = be.build(src)
    assert b.ok, b.log
    kern = be.Kernel(k, b.library, "ctypes")
    calls[name] = roofline.cycling([lambda kern=kern, s=s: kern.run_numpy(s, k.launch) for s in sets])
st = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), C.ideal_bytes(f), 9)
calls["copy_nt"] = st["copy_nt"][0]
samples = bench.time_interleaved(calls, 9, 21, 1, burst=9)
for name, v in samples.items():
    print(f"{op} {variant} {name:14s} {np.median(v) * 1e3:.3f} ms  {np.median(samples['copy_nt']) / np.median(v):.2f} of copy_nt")
