"""Whether a kernel's bits follow where its buffers lie: every variant of the kernels of a gate
request (saved by capture.py), at each draw of the call's shapes, run with its buffers placed 0, 8,
..., 56 bytes past a 64-byte boundary; per variant the elements that differ from the placement at 0,
as finite values (or infinities) and as NaNs of another sign or payload only.
    python placement.py REQUEST.json"""
import json
import sys

import numpy as np

from autoperfect import backends, judge, runtime
from autoperfect.graph import Graph
from autoperfect.pipeline import program

request = json.load(open(sys.argv[1]))
fronts = [runtime.front_of(Graph.from_json(g)) for g in request["graphs"]]
be = backends.get(request["backend"])
for name, libraries in request["libraries"].items():
    d = runtime._draws(name, fronts[0], 0)
    kernel = next(k for k in d.f.kernels if k is not None)
    kinds = [d.f.canonical.nodes[d.f.canonical.outputs[j]].dtype for j in d.outputs]
    keys = {cls: judge.answer_key(d.f, d.spec, cls, np.random.default_rng(d.seed(cls)), d.exact) for cls in d.classes}
    for variant, library in libraries.items():
        prog = program(d.f, {name: be.Kernel(kernel, library)})
        line = []
        for cls, key in keys.items():
            memo = {}
            base = prog.run_guarded(key.inputs, d.outputs, memo, 0)
            finite = nan = 0
            for offset in range(8, 64, 8):
                for a, b, kind in zip(base, prog.run_guarded(key.inputs, d.outputs, memo, offset), kinds):
                    u = f"u{a.dtype.itemsize}"
                    bits = a.reshape(-1).view(u) != b.reshape(-1).view(u)
                    both = (np.isnan(judge.as_float(a, kind)) & np.isnan(judge.as_float(b, kind))).reshape(-1)
                    finite += int((bits & ~both).sum())
                    nan += int((bits & both).sum())
            line.append(f"{cls}: {finite} finite, {nan} NaN-only")
        print(f"{name} {variant:28s}", "; ".join(line), flush=True)
