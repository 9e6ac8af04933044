"""Each op's chosen variant (results/{op}/cpu/bench.json; if piped, its parent) against its `piped`
twin as the renderer now emits it (cpu.piped: Schedule.piped, CRenderer.pipes), through ctypes on line-aligned buffers (where the twin
pipes) and 8 bytes past a line (where it falls back to the unpiped loop), warm (two calls back to back)
and cold (each call after common.sweep), beside the roofline's streaming copy, interleaved in rounds;
the same bits checked at both places.

    python docs/experiments/2026-12-05g-cpu/piped_ab.py rmsnorm layernorm add_rmsnorm

from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at this checkout, under the
warm condition.
"""
import dataclasses
import os
import sys

import numpy as np

from autoperfect import bench
from autoperfect import contenders as C
from autoperfect.backends import cpu

from common import K, be, chosen, install_sweep, placed

ROUNDS = int(os.environ.get("ROUNDS", "21"))
calls, moved = {}, {}
for op in sys.argv[1:]:
    c = chosen(op)
    xs, _ = C.inputs_for(c.spec)
    unpiped = dataclasses.replace(c.schedule, piped=False, name=c.name.removesuffix("_piped"))
    schedules = {unpiped.name: unpiped, f"{unpiped.name}_piped": cpu.piped(unpiped)}
    for shift in (0, 8):
        ins = [placed(np.asarray(x, np.float32), shift) for x in xs]
        first = None
        for name, s in schedules.items():
            built = be.build(be.render(c.k, s))
            assert built.ok, built.log[-3000:]
            outs = [placed(np.zeros(o, np.float32), shift) for o in c.k.launch.out_shapes]
            call = be.Kernel(c.k, built.library, "ctypes").numpy_call(ins + outs, c.k.launch)
            call()
            got = np.concatenate([o.ravel() for o in outs]).view(np.uint32)
            first = got if first is None else first
            assert np.array_equal(got, first), f"{op} {name} at {shift}: other bits"
            call.buffers = (ins, outs)
            if shift == 0:
                calls[f"{op} {name}"] = call
                moved[f"{op} {name}"] = c.moved
        print(f"{op}: {' and '.join(schedules)} give the same bits, buffers {shift} bytes past a line")
    a, b = placed(np.ones(c.moved // 8, np.float32)), placed(np.zeros(c.moved // 8, np.float32))
    calls[f"copy_nt {op}"] = lambda a=a, b=b: K.copy_nt(a.ctypes.data, b.ctypes.data, a.size)
    moved[f"copy_nt {op}"] = 8 * a.size
for kind in ("warm", "cold"):
    undo = install_sweep() if kind == "cold" else (lambda: None)
    timed = {n: (lambda c=c: (c(), c())) if kind == "warm" else c for n, c in calls.items()}
    samples = bench.time_interleaved(timed, 2, ROUNDS, 1)
    undo()
    print(f"{kind}, {ROUNDS} rounds, line-aligned buffers ({'per call of two back to back' if kind == 'warm' else 'one call after a sweep'})")
    for n, s in samples.items():
        t = float(np.median(s)) / (2 if kind == "warm" else 1)
        print(f"  {n:36s} {t * 1e3:7.3f} ms {moved[n] / t / 1e9:6.1f} GB/s", flush=True)
