"""An op's chosen variant (results/{op}/cpu/bench.json) rendered by this checkout beside the same
schedule with knobs turned (KNOBS: `;`-separated sets of `field=value`, e.g. "split=64;prefetch=16384"),
through ctypes on line-aligned buffers at the launch's rows and at ROWS_SMALL rows, beside the
roofline's streaming copy, interleaved in rounds (with SWEEP=1 each call cold: common.sweep). Prints each one's largest difference from the
chosen's output (a turned knob may change bits: a split sums in another order).
Run from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at this checkout,
under the warm condition:

    KNOBS="split=64" python docs/experiments/2026-12-05g-cpu/knobs.py OP...
"""
import dataclasses
import os
import sys

import numpy as np

from autoperfect import bench
from autoperfect import contenders as C

from common import K, be, chosen, install_sweep, placed

ROUNDS = int(os.environ.get("ROUNDS", "21"))
ROWS_SMALL = int(os.environ.get("ROWS_SMALL", "0"))
KNOBS = [k for k in os.environ.get("KNOBS", "split=64").split(";") if k]


def turned(schedule, knob: str):
    fields = dict(kv.split("=") for kv in knob.split(","))
    return dataclasses.replace(schedule, **{f: type(getattr(schedule, f))(int(v)) for f, v in fields.items()})


calls, bytes_of = {}, {}
for op in sys.argv[1:]:
    c = chosen(op)
    f, k, schedule = c.f, c.k, c.schedule
    xs, _ = C.inputs_for(c.spec)
    R = k.launch.dims[0]
    for rows in [R] + ([ROWS_SMALL] if ROWS_SMALL else []):
        launch = dataclasses.replace(k.launch, dims=(rows,) + k.launch.dims[1:],
                                     out_shapes=tuple((rows,) + s[1:] for s in k.launch.out_shapes))
        ins = [placed(np.asarray(x, np.float32)[:rows] if np.ndim(x) == len(k.launch.dims) else np.asarray(x, np.float32))
               for x in xs]
        first = None
        for knob in ["chosen"] + KNOBS:
            built = be.build(be.render(k, schedule if knob == "chosen" else turned(schedule, knob)))
            assert built.ok, (knob, built.log[-2000:])
            outs = [placed(np.zeros(s, np.float32)) for s in launch.out_shapes]
            call = be.Kernel(k, built.library, "ctypes").numpy_call(ins + outs, launch)
            call()
            got = np.concatenate([o.ravel() for o in outs])
            first = got if first is None else first
            diff = float(np.max(np.abs(got - first) / (np.abs(first) + 1e-30)))
            call.buffers = (ins, outs)
            key = f"{op} {knob} {rows}"
            calls[key] = call
            bytes_of[key] = sum(C.ideal_traffic(f)) * rows / R
            print(f"{key}: largest relative difference from the chosen {diff:.2e}")
        a, b = placed(np.ones(ins[0].size, np.float32)), placed(np.zeros(ins[0].size, np.float32))
        calls[f"copy_nt {op} {rows}"] = lambda a=a, b=b: K.copy_nt(a.ctypes.data, b.ctypes.data, a.size)
        bytes_of[f"copy_nt {op} {rows}"] = 8 * a.size
if os.environ.get("SWEEP") == "1":
    install_sweep()
samples = bench.time_interleaved(calls, 2, ROUNDS, 1)
print(f"{ROUNDS} rounds, line-aligned buffers; GB/s of the op's ideal traffic at the median")
for key, s in samples.items():
    t = float(np.median(s))
    print(f"  {key:36s} {t * 1e3:7.3f} ms {bytes_of[key] / t / 1e9:6.1f} GB/s")
