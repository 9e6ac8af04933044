"""The roofline's streaming copy over 16 MB a side, 12 sets taken in turn (from memory): MLX's buffers
(8-byte aligned, their offsets printed), mappings of their own on 4 KB and on huge pages, and a source
8 or 32 bytes past the line; best and median GB/s, twice."""
import time, numpy as np
from autoperfect import roofline, contenders
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = 32 * 2**20 // 8
def bench(pairs, reps=40):
    m = min(min(a.size, b.size) for a, b in pairs)  # the offset views are 16 floats short
    calls = [(lambda a=a,b=b: k.copy_nt(a.ctypes.data, b.ctypes.data, m)) for a,b in pairs]
    for c in calls: c()
    ts=[]
    for r in range(reps):
        t=time.perf_counter(); calls[r%len(calls)](); ts.append(time.perf_counter()-t)
    return 8*m/np.min(ts)/1e9, 8*m/np.median(ts)/1e9
S=12
mlx=[(contenders.mlx_ones(n), contenders.mlx_ones(n)) for _ in range(S)]
print("mlx offsets mod 64:", [(a.ctypes.data%64, b.ctypes.data%64) for a,b in mlx[:3]], "mod 4096", [(a.ctypes.data%4096, b.ctypes.data%4096) for a,b in mlx[:3]])
base=[(roofline.paged_ones(n,"base"), roofline.paged_ones(n,"base")) for _ in range(S)]
huge=[(roofline.paged_ones(n,"huge"), roofline.paged_ones(n,"huge")) for _ in range(S)]
for rnd in range(2):
    print("mlx  %.1f %.1f" % bench(mlx))
    print("base %.1f %.1f" % bench(base))
    print("huge %.1f %.1f" % bench(huge))
    # offset variants from base arrays
    for off in (8, 32):
        pairs=[(a[off//4:off//4+n-16], b[:n-16]) for a,b in base]
        print("base src+%d %.1f %.1f" % ((off,)+bench(pairs)))
