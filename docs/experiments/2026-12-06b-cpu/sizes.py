"""The streaming copy over MLX buffers in a loop: 32 MB of traffic over one set (the L3 keeps it)
and over 12 taken in turn, 128 MB over 3, 512 MB and 1280 MB over one; best and median GB/s."""
import sys, time, numpy as np
from autoperfect import roofline, contenders
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
def run(traffic_mb, reps, sets):
    n = traffic_mb * 2**20 // 8
    arrs = [(contenders.mlx_ones(n), contenders.mlx_ones(n)) for _ in range(sets)]
    calls = [ (lambda a=a,b=b: k.copy_nt(a.ctypes.data, b.ctypes.data, n)) for a,b in arrs]
    for c in calls: c()
    ts=[]
    for r in range(reps):
        c = calls[r % sets]
        t=time.perf_counter(); c(); ts.append(time.perf_counter()-t)
    ts=np.array(ts)
    return 8*n/np.min(ts)/1e9, 8*n/np.median(ts)/1e9
for mb, sets in [(32,1),(32,12),(128,3),(512,1),(1280,1)]:
    b, m = run(mb, 40 if mb<512 else 10, sets)
    print(f"traffic {mb:5d} MB x{sets:2d} sets: best {b:5.1f} median {m:5.1f} GB/s")
