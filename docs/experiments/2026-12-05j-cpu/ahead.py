"""An elementwise op's streaming variants (config.yaml's OP) with and without their requests ahead
(CRenderer.reach_ahead), read from memory: each built as the pipeline builds it and called through
ctypes on numpy buffers at the kernel's launch, K input sets in turn (default: enough for 400 MB,
past the 300 MB L3), ROUNDS (default 40) interleaved single calls, both threads. Prints the median
per variant, GB/s of the op's bytes (inputs and output) and the ratio to the first; checks each
variant's output against the first's where they round alike (same name but the `_nopf` suffix).

OMP_PLACES=cores OMP_PROC_BIND=close python docs/experiments/2026-12-05j-cpu/ahead.py OP [DISTANCE...]
(FN="x * mx.sigmoid(x)": OP is that function of x, 4096x1024 float32, instead of config.yaml's;
a twin with our functions inlined also runs without, `_novec`)
(from the repository root; DISTANCE: further Schedule.prefetch values, bytes, tried beside the
renderer's, named `_pfBYTES`; REVERSE=1 times them in the reverse order within each round; OFFSET,
default 8: the outputs' first byte this far past a 64-byte line)"""
import os
import sys
import time
from dataclasses import replace

import numpy as np
import yaml

from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, distances = sys.argv[1], [int(d) for d in sys.argv[2:]]
if os.environ.get("FN"):  # an op of x alone, not in config.yaml
    spec = parse_op(op, {"fn": f"def {op}(x):\n    return {os.environ['FN']}\n",
                         "inputs": {"x": {"shape": [4096, 1024], "dtype": "float32"}}})
else:
    spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
(k,) = [k for k in front(spec).kernels if k]
assert k.kind == "elementwise", f"{op} is a {k.kind} kernel"
schedules = {}
for s in cpu.schedules_for(k):
    if cpu.CpuRenderer(k, s).streams() and s.prefetch:
        schedules[s.name] = s
        schedules[f"{s.name}_nopf"] = replace(s, prefetch=0)
        schedules.update({f"{s.name}_pf{d}": replace(s, prefetch=d) for d in distances})
        if s.vectors:
            schedules[f"{s.name}_novec"] = replace(s, vectors=False)
fns = {}
for name, s in schedules.items():
    build = cpu.build(cpu.render(k, s))
    assert build.ok, build.log
    fns[name] = cpu.Kernel(k, build.library, dispatch="ctypes")
launch = k.launch
nbytes = sum(int(np.prod(s)) * 4 for s in launch.in_shapes + launch.out_shapes)
K = int(os.environ.get("K", -(-(400 << 20) // nbytes)))
rng = np.random.default_rng(11)
ins = [[rng.standard_normal(shape).astype(np.float32) for shape in launch.in_shapes] for _ in range(K)]
OFFSET = int(os.environ.get("OFFSET", 8))


def placed(shape) -> np.ndarray:
    """An output buffer OFFSET bytes past a 64-byte line (MLX's start 8 bytes past 16), so every
    variant's rows meet the lines alike."""
    backing = np.empty(int(np.prod(shape)) + 32, np.float32)
    at = ((OFFSET - backing.ctypes.data) % 64) // 4
    return backing[at:at + int(np.prod(shape))].reshape(shape)


outs = {n: [[placed(shape) for shape in launch.out_shapes] for _ in range(K)] for n in fns}
calls = {n: [f.numpy_call(x + o, launch) for x, o in zip(ins, outs[n])] for n, f in fns.items()}
for n in fns:
    calls[n][0]()
    base = n.split("_nopf")[0].split("_pf")[0].split("_novec")[0]
    if base != n:
        assert all(np.array_equal(a, b) for a, b in zip(outs[n][0], outs[base][0])), n
times, turn = {n: [] for n in fns}, 0
order = list(fns)[::-1] if os.environ.get("REVERSE") else list(fns)  # the order within a round
for _ in range(int(os.environ.get("ROUNDS", 40))):
    for n in order:
        c = calls[n][turn % K]
        t = time.perf_counter()
        c()
        times[n].append(time.perf_counter() - t)
        turn += 1
first = np.median(times[next(iter(fns))])
print(f"{op}: {nbytes / 1e6:.1f} MB a call, {K} input sets")
for n in fns:
    m = np.median(times[n])
    print(f"{n:34s} {m * 1e3:.3f} ms  {nbytes / m / 1e9:.1f} GB/s  {m / first:.3f}x")
