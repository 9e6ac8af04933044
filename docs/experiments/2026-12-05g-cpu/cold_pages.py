"""The roofline's streaming copy and read kernels as single cold calls (each after an untimed read of
twice the last-level cache: their buffers in memory, their page-table lines too) and back to back
(warm: the previous call over the same buffers), on 4 KB pages and on huge pages (roofline.paged_ones),
interleaved in rounds: what a cold start costs a 16 MB op and how much of it the page size decides.

    python docs/experiments/2026-12-05g-cpu/cold_pages.py [FLOATS]

from anywhere, PYTHONPATH at the checkout, under the warm condition.
"""
import os
import sys

import numpy as np

from autoperfect import bench, roofline

from common import K, sweep

ROUNDS = int(os.environ.get("ROUNDS", "21"))
n = int(sys.argv[1]) if len(sys.argv) > 1 else 4 * 1024 * 1024
bufs = {p: (roofline.paged_ones(n, p), roofline.paged_ones(n, p)) for p in ("base", "huge")}


def cold(call):
    def run():
        sweep()
        return bench.time_burst(call, 1)
    return run


calls = {}
for p, (a, b) in bufs.items():
    calls[f"copy_nt {p}"] = lambda a=a, b=b: K.copy_nt(a.ctypes.data, b.ctypes.data, n)
    calls[f"read {p}"] = lambda a=a: K.read(a.ctypes.data, n)
samples = {name: [] for name in calls}
for order in bench.round_orders(len(calls), ROUNDS, 1):
    for i in order:
        name = list(calls)[i]
        calls[name]()  # make the call before it this one's own: "warm" is then back to back
        samples[name].append(("warm", bench.time_burst(calls[name], 1)))
        samples[name].append(("cold", cold(calls[name])()))
print(f"{n * 4 / 2**20:.0f} MB a buffer, {ROUNDS} rounds; GB/s at the median (copy: read + written)")
for name, got in samples.items():
    moved = (8 if name.startswith("copy") else 4) * n
    line = []
    for kind in ("warm", "cold"):
        t = float(np.median([s for k, s in got if k == kind]))
        line.append(f"{kind} {t * 1e3:6.3f} ms {moved / t / 1e9:5.1f} GB/s")
    print(f"  {name:14s} " + ", ".join(line))
