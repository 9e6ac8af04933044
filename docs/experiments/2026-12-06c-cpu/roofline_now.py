"""The roofline's own stream measurement (measure_stream, 134 MB arrays on 4 KB pages) run again now,
then the streaming copy alone back to back, after a read, and the read kernel alone: what the
machine's memory gives at this moment beside the figure the pipeline's roofline stage caught."""
import time, numpy as np
from autoperfect import roofline, contenders
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = 33554432
r = roofline.measure_stream(k, n, 5, "base")
print({kk: round(v,1) for kk,v in r.items() if kk.endswith("gbps") and kk != "median_gbps"})
a, b = roofline.paged_ones(n,"base"), roofline.paged_ones(n,"base")
for rep in range(6):
    t=time.perf_counter(); k.copy_nt(a.ctypes.data, b.ctypes.data, n); d=time.perf_counter()-t
    print("copy_nt alone %.1f GB/s" % (8*n/d/1e9))
for rep in range(4):
    k.read(a.ctypes.data, n)
    t=time.perf_counter(); k.copy_nt(a.ctypes.data, b.ctypes.data, n); d=time.perf_counter()-t
    print("copy_nt after read %.1f GB/s" % (8*n/d/1e9))
for rep in range(4):
    t=time.perf_counter(); k.read(a.ctypes.data, n); d=time.perf_counter()-t
    print("read %.1f GB/s" % (4*n/d/1e9))
