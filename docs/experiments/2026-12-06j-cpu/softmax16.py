"""16-bit softmax's scratch stash in AVX-512 vectors, its final pass narrowing in registers (this
checkout's cfamily.py) against the same schedule rendered by a commit's (`then`: the final pass an
`omp simd` loop through the prelude's rounding into a staged buffer, narrowed after), every other
schedule the pipeline offers, and torch.compile's softmax on the same values: configs/
mixed_precision.yaml's softmax_precise (bfloat16) and softmax_half (float16), 4096x2048, timed
interleaved with inputs in turn from 6 copies beyond the caches, outputs preallocated (the kernels
alone, through ctypes). First line per op: how many outputs differ in their bits from `then`'s.
Run: python softmax16.py [COMMIT] (PYTHONPATH at a checkout, the warm-allocator env; COMMIT
defaults to HEAD)."""
import importlib.util
import pathlib
import sys

import numpy as np
import torch
import yaml

from autoperfect import backends, bench, judge
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

ROOT = pathlib.Path(__file__).resolve().parents[3]
COMMIT = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
path = ROOT / "docs/experiments/2026-12-06f-cpu/sources_same.py"
spec = importlib.util.spec_from_file_location("sources_same", path)
sources_same = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sources_same)
then = sources_same.load(COMMIT, "autoperfect/backends/cfamily.py", "cfamily_then")
BE = backends.get("cpu")
ops = yaml.safe_load((ROOT / "configs/mixed_precision.yaml").read_text())["ops"]
rng = np.random.default_rng(7)

for name in ("softmax_precise", "softmax_half"):
    dtype = ops[name]["inputs"]["x"]["dtype"]
    (k,) = [k for k in front(parse_op(name, ops[name])).kernels if k is not None]
    copies = [judge.storage(rng.standard_normal((4096, 2048)).astype(np.float32) * 3, dtype) for _ in range(6)]
    sources = {s.name: BE.render(k, s) for s in cpu.schedules_for(k) if s.name != "libm"}
    sources.update({f"{s.name}/then": then.CRenderer(k, s).render() for s in cpu.schedules_for(k) if s.vectors})
    calls, outs = {}, {}
    for label, source in sources.items():
        b = BE.build(source)
        assert b.ok, b.log
        kern = BE.Kernel(k, b.library, "ctypes")
        o = outs[label] = np.zeros((4096, 2048), np.uint16)
        turn = iter(range(1 << 30))
        calls[label] = lambda kern=kern, o=o, turn=turn: kern.run_numpy([copies[next(turn) % 6], o], k.launch)
    as_torch = (lambda a: torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)) if dtype == "bfloat16" else torch.from_numpy
    tcopies = [as_torch(c) for c in copies]
    compiled = torch.compile(lambda x: torch.softmax(x.float(), dim=-1).to(x.dtype))
    tturn = iter(range(1 << 30))
    calls["torch_compile"] = lambda: compiled(tcopies[next(tturn) % 6])
    for c in calls.values():
        c()
    print(name, dtype, "outputs differing from then's",
          {lbl: int((outs[lbl] != outs[f"{lbl}/then"]).sum()) for lbl in outs if f"{lbl}/then" in outs})
    samples = bench.time_interleaved(calls, warmup=3, repeats=21, seed=7)
    print(name, dtype, "median ms", {n: round(float(np.median(v)) * 1e3, 3) for n, v in samples.items()})
