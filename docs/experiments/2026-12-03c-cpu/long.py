"""Mean and variance of long rows (ROWS x N float32, default 16 x 1048576: 64 MB, rows of 4 MB that
no L2 holds), rendered by the checked-out code as `rows_v16` (two passes, each reading the row from
memory or the L3) and `rows_shifted_v16` (one), through ctypes on 3 input sets taken in turn,
2 threads, 21 interleaved rounds, beside the roofline's read kernel over the same bytes; results
checked against float64 first. `python docs/experiments/2026-12-03c-cpu/long.py [ROWS N]`; with
PLAIN=1 both also without compensated blocks."""
import dataclasses
import os
import sys

import numpy as np

from autoperfect import backends, bench, roofline
from autoperfect.backends import cpu
from autoperfect.kernel_ir import Launch
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

rows, n = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (16, 1 << 20)
spec = parse_op("mean_var", {"fn": "def mean_var(x):\n    return mx.mean(x, axis=-1), mx.var(x, axis=-1)\n",
                             "inputs": {"x": {"shape": [rows, n], "dtype": "float32"}}})
be = backends.get("cpu")
k = [k for k in front(spec).kernels if k][0]
launch = Launch((rows, n), ((n, 1),), ((rows, n),), ((rows,), (rows,)))
rng = np.random.default_rng(3)
sets = [[(rng.standard_normal((rows, n)) + 3).astype(np.float32), np.zeros(rows, np.float32), np.zeros(rows, np.float32)]
        for _ in range(3)]
calls = {}
chosen = [s for s in cpu.schedules_for(k) if s.name in ("rows_v16", "rows_shifted_v16")]
if os.environ.get("PLAIN"):  # the same without compensated blocks
    chosen += [dataclasses.replace(s, name=s.name + "_plain", compensate=0) for s in chosen]
for s in chosen:
    b = be.build(cpu.render(k, s))
    kern = be.Kernel(k, b.library, "ctypes")
    kern.run_numpy(sets[0], launch)
    exact = sets[0][0].astype(np.float64).var(axis=1)
    print(s.name, "worst relative error of the variance", float(np.max(np.abs(sets[0][2] - exact) / exact)))
    calls[s.name] = roofline.cycling([lambda kern=kern, b=b: kern.run_numpy(b, launch) for b in sets])
read = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), rows * n * 4, 3)["read"][0]
calls["read"] = read
samples = bench.time_interleaved(calls, 3, 21, 1)
for name, v in samples.items():
    print(f"{name:18s} {np.median(v) * 1e3:.2f} ms, {rows * n * 4 / np.median(v) / 1e9:.1f} GB/s of the input")
print("shifted over two-pass", bench.speedup(samples["rows_v16"], samples["rows_shifted_v16"], 1))
