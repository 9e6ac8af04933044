"""float16 row kernels in AVX-512 vectors (Schedule.vectors: CRenderer.vector_groups and vector_final,
float16 converted by F16C in registers, nothing staged) against the staged schedules: every schedule
the pipeline offers configs/mixed_precision.yaml's op (argument: rmsnorm_half, the default, or
softmax_half) and each one's twin with `vectors` set (`_vec`), 4096x2048, timed interleaved, inputs
in turn from 6 copies beyond the caches; the first line counts each one's outputs that differ from
`rows`' (the plain sum's order is the compiler's there) or apmath_scratch_v16's. Run: python
registers.py [op] (PYTHONPATH at a checkout, the warm-allocator env)."""
import pathlib
import sys

import numpy as np
import yaml
from dataclasses import replace
from autoperfect import backends, bench
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
BE = backends.get("cpu")
ops = yaml.safe_load(open(pathlib.Path(__file__).resolve().parents[3] / "configs/mixed_precision.yaml"))["ops"]
name = sys.argv[1] if len(sys.argv) > 1 else "rmsnorm_half"
spec = parse_op(name, ops[name])
(k,) = [k for k in front(spec).kernels if k is not None]
rng = np.random.default_rng(3)
copies = [(rng.standard_normal((4096, 2048)) * 3).astype(np.float16) for _ in range(6)]
w = rng.standard_normal(2048).astype(np.float16)
calls, outs = {}, {}
scheds = list(cpu.schedules_for(k))
extra = [replace(s, name=s.name + "_vec", vectors=True) for s in scheds if not s.vectors]
for s in scheds + extra:
    b = BE.build(BE.render(k, s)); assert b.ok, b.log
    kern = BE.Kernel(k, b.library, "ctypes"); o = outs[s.name] = np.zeros((4096, 2048), np.float16); turn = iter(range(1 << 30))
    rest = [w] if len(k.inputs) > 1 else []
    calls[s.name] = lambda kern=kern, o=o, turn=turn, rest=rest: kern.run_numpy([copies[next(turn) % 6], *rest, o], k.launch)
for c in calls.values(): c()
first = outs.get("rows", outs.get("apmath_scratch_v16"))
print({n: int((o.view(np.uint16) != first.view(np.uint16)).sum()) for n, o in outs.items()})
samples = bench.time_interleaved(calls, warmup=3, repeats=21, seed=3)
print({n: round(float(np.median(v)) * 1e3, 3) for n, v in samples.items()})
