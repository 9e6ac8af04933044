"""The roofline's stream kernels (copy, copy_nt, read) over arrays on transparent huge pages and on
4 KB pages, interleaved in rounds: numpy's arrays (numpy madvises arrays of 4 MB and more, where the
roofline measured before 2026-12-05e), numpy's with that madvise switched off, MLX's buffers
(contenders.mlx_ones, the memory the ops' kernels get) and the roofline's own arrays since
(roofline.paged_ones, asked onto huge pages and kept off them). Elements per array: argument 1 (default the roofline's smaller
size, roofline.stream_sizes); pairs per kind: argument 2 (default 1; each call takes the next).
Prints each kernel's median and best GB/s per kind, and the share of each array on huge pages.

    python docs/experiments/2026-12-05e-cpu/pages.py [ELEMENTS [PAIRS]]

with PYTHONPATH at a checkout, under the benchmark's warm condition (OMP_PLACES=cores
OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296).
"""
import os
import re
import sys
import time

import numpy as np
from numpy._core import multiarray as ma

from autoperfect import bench, roofline
from autoperfect import contenders as C

ROUNDS = int(os.environ.get("ROUNDS", "9"))
n = int(sys.argv[1]) if len(sys.argv) > 1 else roofline.stream_sizes(roofline.cache_bytes(), bench.available_bytes())[0]
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)


def huge_kb() -> int:
    return int(re.search(r"AnonHugePages:\s+(\d+) kB", open("/proc/self/smaps_rollup").read()).group(1))


def numpy_ones(hinted: bool):
    def make(n):
        ma._set_madvise_hugepage(hinted)
        a = np.ones(n, np.float32)
        ma._set_madvise_hugepage(True)
        return a
    return make


kinds = {"numpy (huge pages)": numpy_ones(True), "numpy, no hint": numpy_ones(False), "mlx": C.mlx_ones,
         "paged_ones huge": lambda n: roofline.paged_ones(n, "huge"),
         "paged_ones base": lambda n: roofline.paged_ones(n, "base")}
arrays, huge = {}, {}
for kind, make in kinds.items():
    before = huge_kb()
    arrays[kind] = [(make(n), make(n)) for _ in range(pairs)]
    huge[kind] = (huge_kb() - before) * 1024 / (2 * pairs * n * 4)
times = {}
for _ in range(ROUNDS):
    for kind, ps in arrays.items():
        for name in ("copy_nt", "copy", "read"):
            for a, b in ps:
                fn = getattr(K, name)
                t = time.perf_counter()
                fn(a.ctypes.data, n) if name == "read" else fn(a.ctypes.data, b.ctypes.data, n)
                times.setdefault((kind, name), []).append(time.perf_counter() - t)
print(f"{n * 4 / 2**20:.0f} MB per array, {pairs} pair(s) per kind, {ROUNDS} rounds")
for kind in kinds:
    row = []
    for name in ("copy_nt", "copy", "read"):
        moved = (1 if name == "read" else 2) * n * 4
        ts = times[(kind, name)]
        row.append(f"{name} {moved / np.median(ts) / 1e9:5.1f} (best {moved / min(ts) / 1e9:5.1f})")
    print(f"{kind:20s} on huge pages {huge[kind]:4.0%}: " + ", ".join(row) + " GB/s")
