"""An op's chosen kernel (results/{op}/cpu/bench.json, rendered by this checkout) against its
hand-pipelined prototype (`rms_pipelined.c` for rmsnorm, `ln_pipelined.c` for layernorm; built with the backend's flags, -DPF_ROWS=0, 1 and 2: no
prefetch, the rows 1 or 2 on), through ctypes on line-aligned buffers, warm (back to back over the
same buffers) and cold (each call after common.sweep), beside the roofline's streaming copy,
interleaved in rounds, and the renderer's own `piped` twin of the chosen schedule (`piped`, and with
its split loops' groups as AVX-512 vectors: `piped vectors`); the same
bits checked. Run from a pipeline clone's root after `snakemake
--cores 4 all`, PYTHONPATH at this checkout, under the warm condition:

    python docs/experiments/2026-12-05g-cpu/pipelined_ab.py rmsnorm|layernorm
"""
import ctypes
import dataclasses
import os
import sys

import numpy as np

from autoperfect import bench
from autoperfect import contenders as C

from common import K, be, chosen, install_sweep, placed

ROUNDS = int(os.environ.get("ROUNDS", "21"))
HERE = os.path.dirname(os.path.abspath(__file__))
op = sys.argv[1]
PROTOTYPE = {"rmsnorm": ("rms_pipelined.c", "rms_pipelined"), "layernorm": ("ln_pipelined.c", "ln_pipelined")}[op]
c = chosen(op)
spec, f, k, source = c.spec, c.f, c.k, c.source
R, N = k.launch.dims
assert N % 64 == 0 and N < 4096 and k.launch.strides[0] == (N, 1)


xs, _ = C.inputs_for(spec)
ins = [placed(np.asarray(x, np.float32)) for x in xs]
kernels = {"chosen": be.Kernel(k, be.build(source).library, "ctypes").fn,
           "piped": be.Kernel(k, be.build(be.render(k, dataclasses.replace(c.schedule, piped=True))).library, "ctypes").fn,
           "piped vectors": be.Kernel(k, be.build(be.render(k, dataclasses.replace(c.schedule, piped=True, vectors=True))).library,
                                      "ctypes").fn}
proto = open(os.path.join(HERE, PROTOTYPE[0])).read()
for rows in (0, 1, 2):
    built = be.build(f"#define PF_ROWS {rows}\n" + proto)
    assert built.ok, built.log[-3000:]
    fn = getattr(ctypes.CDLL(built.library), PROTOTYPE[1])
    fn.argtypes, fn.restype = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)], None
    kernels[f"pipelined pf{rows}"] = fn
dims = (ctypes.c_int64 * 2)(R, N)
flat = be.Kernel.flat_strides(k.launch)
strides = (ctypes.c_int64 * len(flat))(*flat)
calls, first = {}, None
for name, fn in kernels.items():
    out = placed(np.zeros((R, N), np.float32))
    ptrs = (ctypes.c_void_p * (len(ins) + 1))(*[i.ctypes.data for i in ins], out.ctypes.data)
    call = (lambda fn=fn, ptrs=ptrs: fn(ptrs, dims, strides))
    call()
    first = out.view(np.uint32).copy() if first is None else first
    assert np.array_equal(out.view(np.uint32), first), f"{name}: other bits"
    call.out = out
    calls[name] = call
a, b = placed(np.ones(R * N, np.float32)), placed(np.zeros(R * N, np.float32))
calls["copy_nt"] = lambda: K.copy_nt(a.ctypes.data, b.ctypes.data, a.size)
moved = sum(C.ideal_traffic(f))
for kind in ("warm", "cold"):
    if kind == "cold":
        install_sweep()
    samples = bench.time_interleaved({n: (lambda c=c: (c(), c())) if kind == "warm" else c for n, c in calls.items()},
                                     2, ROUNDS, 1)
    print(f"{kind}, {ROUNDS} rounds, line-aligned buffers, the same bits ({'two calls back to back, GB/s of both' if kind == 'warm' else 'one call after a sweep'})")
    for n, s in samples.items():
        t = float(np.median(s)) / (2 if kind == "warm" else 1)
        print(f"  {n:16s} {t * 1e3:7.3f} ms {moved / t / 1e9:6.1f} GB/s", flush=True)
