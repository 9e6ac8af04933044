"""16-bit row kernels in AVX-512 vectors (Schedule.vectors: float16 by F16C, bfloat16 by a shift and
the prelude's rounding in registers, CRenderer.vector_groups and vector_final) against the schedules
that spell them in `omp simd` loops: every schedule the pipeline offers an op of
configs/mixed_precision.yaml (argument: its name, default rmsnorm_llama) and each one's twin with
`vectors` set (`_vec`), timed interleaved, read from memory (4096x2048, inputs in turn from 6
copies beyond the caches) and in cache (128x2048, one input). The first line counts each one's
outputs whose bits differ from the first schedule's. Run: python registers.py [op] (PYTHONPATH at
a checkout, the warm-allocator env)."""
import pathlib
import sys
from dataclasses import replace

import numpy as np
import yaml

from autoperfect import backends, bench, judge
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

BE = backends.get("cpu")
ops = yaml.safe_load(open(pathlib.Path(__file__).resolve().parents[3] / "configs/mixed_precision.yaml"))["ops"]
name = sys.argv[1] if len(sys.argv) > 1 else "rmsnorm_llama"


def kernel(rows):
    entry = {**ops[name], "inputs": {**ops[name]["inputs"]}}
    entry["inputs"]["x"] = {**entry["inputs"]["x"], "shape": [rows, 2048]}
    (k,) = [k for k in front(parse_op(name, entry)).kernels if k is not None]
    return k


k = kernel(4096)
rng = np.random.default_rng(3)


def bits(shape, dtype):
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    return judge.storage(x, dtype).view(np.uint16)


dtype = k.inputs[0].dtype
scheds = list(cpu.schedules_for(k))
scheds += [replace(s, name=s.name + "_vec", vectors=True) for s in scheds if not s.vectors]
for rows, n_copies in ((4096, 6), (128, 1)):
    k = kernel(rows)
    copies = [bits((rows, 2048), dtype) for _ in range(n_copies)]
    rest = [bits(2048, k.inputs[1].dtype)] if len(k.inputs) > 1 else []
    calls, outs = {}, {}
    for s in scheds:
        b = BE.build(BE.render(k, s)); assert b.ok, b.log
        kern = BE.Kernel(k, b.library, "ctypes"); o = outs[s.name] = np.zeros((rows, 2048), np.uint16)
        turn = iter(range(1 << 30))
        calls[s.name] = lambda kern=kern, o=o, turn=turn: kern.run_numpy([copies[next(turn) % n_copies], *rest, o], k.launch)
    for c in calls.values():
        c()
    first = outs[scheds[0].name]
    print(rows, "rows: differing outputs", {n: int((o != first).sum()) for n, o in outs.items()})
    samples = bench.time_interleaved(calls, warmup=3, repeats=21, seed=3)
    print(rows, "rows: median ms", {n: round(float(np.median(v)) * 1e3, 4) for n, v in samples.items()})
