import time, numpy as np
from autoperfect import roofline
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = 4 << 20  # 16 MB per array
a = np.ones(n, np.float32); b = np.ones(n, np.float32)
big = np.ones(64 << 20, np.float32)  # 256 MB
def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
def t(f):
    s = time.perf_counter(); f(); return time.perf_counter() - s
copy = lambda: k.copy_nt(a.ctypes.data, b.ctypes.data, n)
for name, between in [("back to back", lambda: None), ("sleep 10ms", lambda: time.sleep(0.01)),
                      ("spin 10ms 1 thread", lambda: spin(0.01)),
                      ("sweep 256MB read", lambda: k.read(big.ctypes.data, big.size)),
                      ("sleep 1ms", lambda: time.sleep(0.001))]:
    xs = []
    for _ in range(31):
        between(); xs.append(t(copy))
    xs.sort()
    print(f"{name:20s} NT copy 32 MB moved: median {8*n/xs[15]/1e9:.1f} GB/s best {8*n/xs[0]/1e9:.1f}")
