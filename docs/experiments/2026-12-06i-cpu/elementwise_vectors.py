"""Elementwise kernels whose loop is written in AVX-512 vectors (Schedule.vectors, CRenderer.vector_final
and vector_chunk) against the same schedule's `omp simd` loop (`name/simd`), every other schedule the
pipeline offers, and torch.compile's kernel on the same values: SiLU as a model writes it and a
residual add with a scale, config.yaml's GELU (tanh form), 4096x2048 in DTYPE, timed interleaved with inputs in turn from 6 copies
beyond the caches. First line per op: how many outputs of each vectors schedule differ in their bits
from its `omp simd` twin's. Run: python elementwise_vectors.py DTYPE [OP ...] (PYTHONPATH at a
checkout, the warm-allocator env)."""
import sys
from dataclasses import replace

import numpy as np
import torch

from autoperfect import backends, bench, judge
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

DTYPE = sys.argv[1] if len(sys.argv) > 1 else "bfloat16"
BE = backends.get("cpu")
OPS = {"silu": ("def silu(x):\n    return x * mx.sigmoid(x)\n", lambda x: x * torch.sigmoid(x), 1),
       "scaled_add": ("def scaled_add(x, y):\n    return x + 0.5 * y\n", lambda x, y: x + 0.5 * y, 2),
       "gelu_tanh": ("def gelu_tanh(x):\n    return 0.5 * x * (1 + mx.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))\n",
                     lambda x: 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x))), 1)}
rng = np.random.default_rng(5)


def as_torch(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16) if DTYPE == "bfloat16" else torch.from_numpy(a)


for name, (fn, torch_fn, n_in) in OPS.items():
    if sys.argv[2:] and name not in sys.argv[2:]:
        continue
    entry = {"fn": fn, "inputs": {a: {"shape": [4096, 2048], "dtype": DTYPE} for a in "xy"[:n_in]}}
    (k,) = [k for k in front(parse_op(name, entry)).kernels if k is not None]
    copies = [[judge.storage(rng.standard_normal((4096, 2048)).astype(np.float32) * 4, DTYPE)
               for _ in range(n_in)] for _ in range(6)]
    schedules = {}
    for s in cpu.schedules_for(k):
        schedules[s.name] = s
        if s.vectors:
            schedules[f"{s.name}/simd"] = replace(s, vectors=False)
    calls, outs = {}, {}
    for label, s in schedules.items():
        b = BE.build(BE.render(k, s))
        assert b.ok, b.log
        kern = BE.Kernel(k, b.library, "ctypes")
        o = outs[label] = np.zeros((4096, 2048), copies[0][0].dtype)
        turn = iter(range(1 << 30))
        calls[label] = lambda kern=kern, o=o, turn=turn: kern.run_numpy([*copies[next(turn) % 6], o], k.launch)
    tcopies = [[as_torch(a) for a in c] for c in copies]
    compiled = torch.compile(torch_fn)
    tturn = iter(range(1 << 30))
    calls["torch_compile"] = lambda: compiled(*tcopies[next(tturn) % 6])
    for c in calls.values():
        c()
    bits = {lbl: o.view(np.uint16 if o.itemsize == 2 else np.uint32) for lbl, o in outs.items()}
    print(name, DTYPE, "outputs differing from the omp simd twin's",
          {lbl: int((bits[lbl] != bits[f"{lbl}/simd"]).sum()) for lbl in outs if f"{lbl}/simd" in outs})
    samples = bench.time_interleaved(calls, warmup=3, repeats=21, seed=5)
    print(name, DTYPE, "median ms", {n: round(float(np.median(v)) * 1e3, 3) for n, v in samples.items()})
