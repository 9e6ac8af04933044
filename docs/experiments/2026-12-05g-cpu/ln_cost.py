"""Where LayerNorm's time goes beside RMSNorm's: each op's chosen variant (results/{op}/cpu/bench.json)
rendered by this checkout, and twins of LayerNorm's source that drop one piece of its work (not the
same bits: they attribute cost, nothing else), through ctypes on line-aligned buffers, at the
benchmark's 4096 rows (16 MB a buffer: streaming stores) and at ROWS_SMALL rows (held in L2, plain
stores: the arithmetic alone), beside the roofline's copies, interleaved in rounds.
Twins (TWINS, comma-separated, default all):
- `no_wb`: the output pass without w and b (w taken as 1, b as 0);
- `no_test`: the 16-element test of whether to shift skipped (the shifted branch always);
- `plain`: the shifted branch never (the unshifted two-sum pass always);
- `no_stats`: no statistics pass (mean 0, rstd 1): the output pass alone.
Run from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at this checkout,
under the warm condition:

    python docs/experiments/2026-12-05g-cpu/ln_cost.py
"""
import dataclasses
import os
import re

import numpy as np

from autoperfect import bench
from autoperfect import contenders as C

from common import K, be, chosen, placed

ROUNDS = int(os.environ.get("ROUNDS", "21"))
ROWS_SMALL = int(os.environ.get("ROWS_SMALL", "128"))


def twin(source: str, name: str) -> str:
    if name == "no_wb":
        out = re.sub(r"in1\[b1 \+ j\]", "1.0f", source)
        return re.sub(r"in2\[b2 \+ j\]", "0.0f", out)
    if name == "no_test":
        return source.replace("if (5.0f * (float)ap_jk * ap_k * ap_k <= ap_e) {", "if (0) {", 1)
    if name == "plain":
        return source.replace("if (5.0f * (float)ap_jk * ap_k * ap_k <= ap_e) {", "if (1) {", 1)
    if name == "no_stats":
        head = source.index("    const float r1 = a1;")
        start = source.index("    float a1 = 0.0f;")
        body = source[start:head] + source[head:]
        stats_end = source.index("    const float r6 = a6;")
        out = source[:start] + "    float a1 = 0.0f, a6 = (float)N;\n" + source[stats_end:]
        out = out.replace("const float r3 = (r1 / r2);", "")
        out = re.sub(r"\(v0 - r3\)", "v0", out)
        del body
        return out.replace("const float r1 = a1;", "")
    raise ValueError(name)


rows_of = {}
calls = {}
for op in ("layernorm", "rmsnorm"):
    c = chosen(op)
    spec, k, source = c.spec, c.k, c.source
    names = ["now"] + ([t for t in os.environ.get("TWINS", "no_wb,no_test,plain,no_stats").split(",") if t]
                       if op == "layernorm" else [])
    xs, _ = C.inputs_for(spec)
    R, N = k.launch.dims
    for rows in (R, ROWS_SMALL):
        launch = dataclasses.replace(k.launch, dims=(rows, N), out_shapes=((rows, N),))
        ins = [placed(np.asarray(x, np.float32)[:rows] if np.ndim(x) == 2 else np.asarray(x, np.float32))
               for x in xs]
        for name in names:
            built = be.build(source if name == "now" else twin(source, name))
            assert built.ok, (name, built.log[-2000:])
            outs = [placed(np.zeros((rows, N), np.float32))]
            call = be.Kernel(k, built.library, "ctypes").numpy_call(ins + outs, launch)
            call.buffers = (ins, outs)
            key = f"{op} {name} {rows}"
            calls[key] = call
            rows_of[key] = (rows, N)
    for rows in (R, ROWS_SMALL):
        a, b = placed(np.ones((rows, N), np.float32)), placed(np.zeros((rows, N), np.float32))
        fn = K.copy_nt if rows == R else K.copy
        calls[f"copy {rows}"] = lambda a=a, b=b, fn=fn: fn(a.ctypes.data, b.ctypes.data, a.size)
        rows_of[f"copy {rows}"] = (rows, N)
samples = bench.time_interleaved(calls, 2, ROUNDS, 1)
print(f"{ROUNDS} rounds, line-aligned buffers; GB/s counts one read and one write of the rows "
      "(x and the output); ns a row at the median")
for key, s in samples.items():
    rows, N = rows_of[key]
    t = float(np.median(s))
    print(f"  {key:24s} {t * 1e3:7.3f} ms {8 * rows * N / t / 1e9:6.1f} GB/s {t / rows * 1e9 * 2:7.1f} ns/row/thread")
