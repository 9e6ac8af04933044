"""The roofline's streaming copy and read kernels: over 9 slices of 34 MB in bursts of 9, one slice in bursts of 9, one 268 MB call, and 9 slices one call at a time (best and median of 21)."""
import time, numpy as np, sys
from autoperfect import roofline
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
def t(call, n):
    s = time.perf_counter()
    for _ in range(n): call()
    return (time.perf_counter() - s) / n
for label, nbytes, spans, burst in (("34MB x9 slices, burst 9", 34 << 20, 9, 9), ("34MB one slice, burst 9", 34 << 20, 1, 9),
                                   ("268MB, one call", 268 << 20, 1, 1), ("34MB x9, single calls", 34 << 20, 9, 1)):
    calls = roofline.stream_calls(k, nbytes, spans)
    res = {}
    for name in ("copy_nt", "read"):
        c, moved = calls[name]
        for _ in range(3): c()
        xs = [t(c, burst) for _ in range(21)]
        res[name] = (moved / min(xs) / 1e9, moved / np.median(xs) / 1e9)
    print(label, {n: f"best {a:.1f} median {b:.1f}" for n, (a, b) in res.items()})
