"""The roofline's copy kernels (copy_nt, copy) and triad_nt from a source to a destination whose
address differs from the source's by D bytes modulo 4096, for several D, on 4 KB pages
(roofline.paged_ones "base": every array starts on a 2 MB boundary, then is offset), interleaved in
rounds: whether the relative placement of two buffers within a page (4K aliasing: a load whose
address matches an earlier store's low 12 bits waits for it) moves the stream figures. Elements per
array: argument 1 (default 16M); the offsets D: the rest.

    python docs/experiments/2026-12-05e-cpu/alias.py [ELEMENTS [D ...]]

with PYTHONPATH at a checkout, under the benchmark's warm condition.
"""
import os
import sys

import numpy as np

from autoperfect import bench, roofline

ROUNDS = int(os.environ.get("ROUNDS", "9"))
PAGES = os.environ.get("PAGES", "base")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 16 << 20
offsets = [int(d) for d in sys.argv[2:]] or [0, 16, 32, 64, 128, 256, 512, 1024, 2048, 3072, 4032]
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
src = roofline.paged_ones(n + 1024, PAGES)
third = roofline.paged_ones(n + 1024, PAGES)
calls = {}
for d in offsets:
    dst = roofline.paged_ones(n + 1024, PAGES)[d // 4:d // 4 + n]
    a = src[:n]
    calls[f"copy_nt {d}"] = lambda a=a, b=dst: K.copy_nt(a.ctypes.data, b.ctypes.data, n)
    calls[f"copy {d}"] = lambda a=a, b=dst: K.copy(a.ctypes.data, b.ctypes.data, n)
    calls[f"triad_nt {d}"] = lambda a=a, b=dst, c=third[:n]: K.triad_nt(b.ctypes.data, a.ctypes.data, c.ctypes.data, 3.0, n)
samples = bench.time_interleaved(calls, 2, ROUNDS, 1)
print(f"{n * 4 / 2**20:.0f} MB per array on {PAGES} pages, {ROUNDS} rounds; GB/s at the median (best)")
for d in offsets:
    row = []
    for name, per in (("copy_nt", 8), ("copy", 8), ("triad_nt", 12)):
        ts = samples[f"{name} {d}"]
        row.append(f"{name} {per * n / np.median(ts) / 1e9:5.1f} ({per * n / min(ts) / 1e9:5.1f})")
    print(f"destination - source = {d:4d} mod 4096: " + ", ".join(row))
