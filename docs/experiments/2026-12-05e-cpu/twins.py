"""An op's chosen variant (results/{op}/cpu/bench.json) rendered by this checkout ("now") beside
twins of its source, through ctypes on buffers placed SHIFT bytes past a 2 MB boundary, every
buffer alike (MLX's sit 8 mod 16: SHIFTS=0,8,40), interleaved in rounds; checks that all give the
same bits. TWINS picks them:
- `lines`: store_loop's line loop taken out (the whole lines after the last 64-element chunk then
  stored plainly, as before 2026-12-05e);
- `next_head`: without the write prefetch of the next row's first line (CRenderer.next_head,
  "none"), asking for the row's own first line at its start instead ("own head"), and asking for
  the next row's whatever its place ("untested").
Run from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at this checkout,
under the warm condition:

    TWINS=lines python docs/experiments/2026-12-05e-cpu/twins.py rmsnorm layernorm ...
"""
import json
import os
import re
import sys

import numpy as np
import yaml

from autoperfect import backends, bench, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

SHIFTS = [int(x) for x in os.environ.get("SHIFTS", "0,8,40").split(",")]
ROUNDS = int(os.environ.get("ROUNDS", "21"))
LINE_LOOP = re.compile(r"\n( *)for \(; jc \+ 16 <= \w+; jc \+= 16\) \{\n.*?\n\1\}", re.S)
ASK = re.compile(r"\n    if \(ap_stream && \(\(uintptr_t\)\((out\d+) \+ \(r \+ 1\) \* N\) & 63\)\) "
                 r"__builtin_prefetch\(out\d+ \+ \(r \+ 1\) \* N, 1, 3\);")
TWINS = {
    "lines": (LINE_LOOP, {"no lines": ""}),
    "next_head": (ASK, {"none": "",
                        "own head": r"\n    if (ap_stream) __builtin_prefetch(\1 + r * N, 1, 3);",
                        "untested": r"\n    if (ap_stream) __builtin_prefetch(\1 + (r + 1) * N, 1, 3);"}),
}
be = backends.get("cpu")


def placed(values: np.ndarray, at: int) -> np.ndarray:
    buf = roofline.paged_ones(values.size + 1024, "base")[at // 4:at // 4 + values.size].reshape(values.shape)
    buf[...] = values
    return buf


pattern, twins = TWINS[os.environ.get("TWINS", "lines")]
for op in sys.argv[1:]:
    spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
    f = front(spec)
    k = [k for k in f.kernels if k][0]
    chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"][k.name]["chosen"]
    source = be.render(k, {s.name: s for s in be.schedules_for(k)}[chosen])
    assert pattern.search(source), f"{op} {chosen}: nothing to take out (not streamed?)"
    sources = {"now": source, **{name: pattern.sub(repl, source) for name, repl in twins.items()}}
    xs, _ = C.inputs_for(spec)
    calls, first = {}, {}
    for sh in SHIFTS:
        ins = [placed(np.asarray(x, np.float32), sh) for x in xs]
        for name, text in sources.items():
            built = be.build(text)
            assert built.ok, built.log
            outs = [placed(np.zeros(s, np.float32), sh) for s in k.launch.out_shapes]
            call = be.Kernel(k, built.library, "ctypes").numpy_call(ins + outs, k.launch)
            call()
            got = np.concatenate([o.ravel() for o in outs]).view(np.uint32)
            first.setdefault(sh, got)
            assert np.array_equal(got, first[sh]), f"{op}: {name} at {sh} gave other bits"
            call.buffers = (ins, outs)
            calls[f"{name} @{sh}"] = call
    samples = bench.time_interleaved(calls, 2, ROUNDS, 1)
    moved = sum(C.ideal_traffic(f))
    print(f"{op} ({chosen}), buffers SHIFT bytes past 2 MB, {ROUNDS} rounds; the same bits from each")
    for name, s in samples.items():
        print(f"  {name:14s} {np.median(s) * 1e3:.3f} ms {moved / np.median(s) / 1e9:5.1f} GB/s")
