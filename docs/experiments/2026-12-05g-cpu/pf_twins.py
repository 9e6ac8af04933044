"""Where a streaming row kernel asks for the rows ahead: each op's chosen variant as rendered now
(the store loop asks for row r + ap_ahead's lines, four a 64-element chunk, while its streaming stores
hold the line fill buffers) beside twins of its source that ask elsewhere, the same bits:
- `stats`: in the statistics pass instead (two lines a 32-element step), where nothing else is in flight;
- `half`: half of each: the store loop the first half of the row's lines, the statistics pass the rest;
- `l2`: in the store loop as now but into L2 (`__builtin_prefetch(p, 0, 2)`, prefetcht1).
Through ctypes on buffers SHIFT bytes past a 2 MB boundary (with NATIVE=1 also through the native op on
the bench's MLX inputs), interleaved in rounds beside the roofline's streaming copy; with SWEEP=1 each
call after a read of twice the last-level cache (untimed: its inputs in memory, nothing dirty left). Run from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at this
checkout, under the warm condition:

    python docs/experiments/2026-12-05g-cpu/pf_twins.py layernorm rmsnorm ...
"""
import os
import re
import sys

import numpy as np

from autoperfect import bench
from autoperfect import contenders as C
from autoperfect.pipeline import program

from common import K, be, chosen, install_sweep, placed

ROUNDS = int(os.environ.get("ROUNDS", "21"))
SHIFT = int(os.environ.get("SHIFT", "0"))
SWEEP = os.environ.get("SWEEP") == "1"
NATIVE = os.environ.get("NATIVE") == "1"
STORE_ASK = re.compile(r"\n( *)if \(N <= 8192\) \{\n((?:\1  __builtin_prefetch\(in\d+ \+ b\d+ \+ ap_ahead \* strides\[\d+\] \+ jc \+ \d+\);\n)+)\1\}")
STATS_STEP = re.compile(r"\n( *)for \(; jm \+ 32 <= je; jm \+= 32\) \{")


def asks(store_block: str, j: str, lo: int, hi: int) -> str:
    """The store loop's requests rewritten for columns j + lo .. j + hi of the row ahead."""
    lines = re.findall(r"__builtin_prefetch\((in\d+ \+ b\d+ \+ ap_ahead \* strides\[\d+\]) \+ jc \+ 0\);", store_block)
    return "".join(f" if (N <= 8192) __builtin_prefetch({base} + {j} + {q});" for base in lines for q in range(lo, hi, 16))


def twins(source: str) -> dict[str, str]:
    m = STORE_ASK.search(source)
    assert m, "no store-loop prefetch to move"
    block = m.group(0)
    no_store = source.replace(block, "")
    in_stats = STATS_STEP.sub(lambda s: s.group(0) + asks(block, "jm", 0, 32), no_store)
    half_store = source.replace(block, "\n" + m.group(1) + "if (jc < N / 2) {" + block + "\n" + m.group(1) + "}")
    half = STATS_STEP.sub(lambda s: s.group(0) + " if (jm >= N / 2) {" + asks(block, "jm", 0, 32) + " }", half_store)
    l2 = source.replace(block, block.replace(");", ", 0, 2);"))
    return {"now": source, "stats": in_stats, "half": half, "l2": l2}


calls, moved = {}, {}
for op in sys.argv[1:]:
    c = chosen(op)
    spec, f, k, source = c.spec, c.f, c.k, c.source
    xs, _ = C.inputs_for(spec)
    ins = [placed(np.asarray(x, np.float32), SHIFT) for x in xs]
    first = None
    for name, text in twins(source).items():
        built = be.build(text)
        assert built.ok, (name, built.log[-3000:])
        outs = [placed(np.zeros(s, np.float32), SHIFT) for s in k.launch.out_shapes]
        call = be.Kernel(k, built.library, "ctypes").numpy_call(ins + outs, k.launch)
        call()
        got = np.concatenate([o.ravel() for o in outs]).view(np.uint32)
        first = got if first is None else first
        assert np.array_equal(got, first), f"{op}: {name} gave other bits"
        call.buffers = (ins, outs)
        calls[f"{op} {name}"] = call
        if NATIVE:
            ours = program(f, {k.name: be.Kernel(k, built.library)})
            sets = C.input_sets(spec, f, 1, False)
            calls[f"{op} {name} native"] = lambda ours=ours, s=sets[0]: C.evaluate(ours, s.arrays)
            moved[f"{op} {name} native"] = sum(C.ideal_traffic(f))
        moved[f"{op} {name}"] = sum(C.ideal_traffic(f))
    a, b = placed(np.ones(ins[0].size, np.float32), SHIFT), placed(np.zeros(ins[0].size, np.float32), SHIFT)
    calls[f"copy_nt {op}"] = lambda a=a, b=b: K.copy_nt(a.ctypes.data, b.ctypes.data, a.size)
    moved[f"copy_nt {op}"] = 8 * a.size
if SWEEP:
    install_sweep()
samples = bench.time_interleaved(calls, 2, ROUNDS, 1)
print(f"{ROUNDS} rounds, buffers {SHIFT} bytes past 2 MB{', each call after a sweep' if SWEEP else ''}; "
      "the same bits from each op's twins")
for key, s in samples.items():
    t = float(np.median(s))
    print(f"  {key:24s} {t * 1e3:7.3f} ms {moved[key] / t / 1e9:6.1f} GB/s")
