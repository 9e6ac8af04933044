"""bfloat16 elementwise kernels (SiLU as a bfloat16 model writes it, and a residual add with a
scale) 4096x2048: every schedule the pipeline offers, against torch.compile's kernel on the same
bits, timed interleaved with inputs in turn from 6 copies beyond the caches; the first line counts
each schedule's outputs whose bits differ from the first one's. Run: python elementwise_bf16.py
(PYTHONPATH at a checkout, the warm-allocator env)."""
import numpy as np
import torch

from autoperfect import backends, bench, judge
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

BE = backends.get("cpu")
OPS = {"silu": ("def silu(x):\n    return x * mx.sigmoid(x)\n", lambda x: x * torch.sigmoid(x), 1),
       "scaled_add": ("def scaled_add(x, y):\n    return x + 0.5 * y\n", lambda x, y: x + 0.5 * y, 2)}
rng = np.random.default_rng(5)
for name, (fn, torch_fn, n_in) in OPS.items():
    entry = {"fn": fn, "inputs": {a: {"shape": [4096, 2048], "dtype": "bfloat16"} for a in "xy"[:n_in]}}
    (k,) = [k for k in front(parse_op(name, entry)).kernels if k is not None]
    copies = [[judge.storage(rng.standard_normal((4096, 2048)).astype(np.float32), "bfloat16")
               for _ in range(n_in)] for _ in range(6)]
    calls, outs = {}, {}
    for s in cpu.schedules_for(k):
        b = BE.build(BE.render(k, s)); assert b.ok, b.log
        kern = BE.Kernel(k, b.library, "ctypes"); o = outs[s.name] = np.zeros((4096, 2048), np.uint16)
        turn = iter(range(1 << 30))
        calls[s.name] = lambda kern=kern, o=o, turn=turn: kern.run_numpy([*copies[next(turn) % 6], o], k.launch)
    tcopies = [[torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16) for a in c] for c in copies]
    compiled = torch.compile(torch_fn)
    tturn = iter(range(1 << 30))
    calls["torch_compile"] = lambda: compiled(*tcopies[next(tturn) % 6])
    for c in calls.values():
        c()
    first = next(iter(outs.values()))
    print(name, "differing outputs", {n: int((o != first).sum()) for n, o in outs.items()})
    samples = bench.time_interleaved(calls, warmup=3, repeats=21, seed=5)
    print(name, "median ms", {n: round(float(np.median(v)) * 1e3, 3) for n, v in samples.items()})
