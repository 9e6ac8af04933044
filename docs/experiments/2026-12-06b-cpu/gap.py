"""The streaming copy over S sets (env S, default 12) of 32 MB of traffic, taken in turn, right after
another call and after a gap: none, a busy wait, a sleep."""
import os, time, numpy as np
from autoperfect import roofline, contenders
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = 32 * 2**20 // 8
S = int(os.environ.get("S", 12))
sets = [(contenders.mlx_ones(n), contenders.mlx_ones(n)) for _ in range(S)]
calls = [lambda a=a, b=b: k.copy_nt(a.ctypes.data, b.ctypes.data, n) for a, b in sets]
def busy(s):
    e = time.perf_counter() + s
    while time.perf_counter() < e: pass
gaps = {"none": lambda: None, "busy1ms": lambda: busy(1e-3), "busy5ms": lambda: busy(5e-3),
        "sleep0.2ms": lambda: time.sleep(2e-4), "sleep1ms": lambda: time.sleep(1e-3), "sleep5ms": lambda: time.sleep(5e-3),
        "sleep20ms": lambda: time.sleep(2e-2)}
res = {g: [] for g in gaps}
i = 0
for rnd in range(30):
    for g, f in gaps.items():
        calls[i % S](); i += 1   # a call just before, so 'none' is back to back
        f()
        t = time.perf_counter(); calls[i % S](); res[g].append(time.perf_counter() - t); i += 1
for g, ts in res.items():
    print(f"{g:10s} median {np.median(ts)*1e3:.3f} ms  {8*n/np.median(ts)/1e9:5.1f} GB/s  best {8*n/np.min(ts)/1e9:5.1f}")
