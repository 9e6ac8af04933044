"""The roofline's streaming kernels (copy, streaming copy, read) over two 134 MB numpy arrays with
numpy's huge-page madvise on and off, twice each, in one process: best and median of 10 calls in
GB/s, and the process's AnonHugePages. Run from the repository root after the roofline stage has
built its kernels, with glibc's default allocator (each array then gets a mapping of its own, which
the setting alone decides; under the warm condition the heap's madvised pages are reused), on a
quiet machine: `OMP_PLACES=cores OMP_PROC_BIND=close python docs/experiments/2026-12-04e-cpu/pages.py`."""
import time

import numpy as np
from numpy._core import multiarray as ma

from autoperfect import roofline

K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
N = 32 << 20


def huge_kb() -> str:
    with open("/proc/self/smaps_rollup") as f:
        return next(line.split()[1] for line in f if line.startswith("AnonHugePages"))


for huge in (True, False, True, False):
    ma._set_madvise_hugepage(huge)
    a, b = np.full(N, 1.0, np.float32), np.full(N, 1.0, np.float32)
    figures = {}
    for name in ("copy", "copy_nt", "read"):
        call = roofline._stream_call(K, name, a, b)
        times = []
        for _ in range(10):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        moved = roofline.BYTES_PER_ELEMENT[name] * N / 1e9
        figures[name] = f"{moved / min(times):.1f} (median {moved / np.median(times):.1f})"
    print(f"huge pages {huge}: AnonHugePages {huge_kb()} kB;", figures, flush=True)
    del a, b
