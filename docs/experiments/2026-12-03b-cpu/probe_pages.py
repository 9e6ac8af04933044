"""The roofline's copy, streaming copy and read kernels over 9 slices of 34 MB (bursts of 9) on numpy arrays with its huge-page madvise on and off, twice each."""
import time, numpy as np
from numpy._core import multiarray as ma
from autoperfect import roofline
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
def t(call, n):
    s = time.perf_counter()
    for _ in range(n): call()
    return (time.perf_counter() - s) / n
sets = {}
for huge in (True, False):
    ma._set_madvise_hugepage(huge)
    sets[huge] = roofline.stream_calls(k, 34 << 20, 9)
for rep in range(2):
  for huge in (True, False):
    res = {}
    for name in ("copy_nt", "read", "copy"):
        c, moved = sets[huge][name]
        for _ in range(3): c()
        xs = [t(c, 9) for _ in range(15)]
        res[name] = moved / np.median(xs) / 1e9
    print("huge" if huge else "4k  ", {n: f"{v:.1f}" for n, v in res.items()})
