import numpy as np, time
from autoperfect import roofline, bench
try:
    from numpy._core.multiarray import _set_madvise_hugepage as smh
except ImportError:
    from numpy.core.multiarray import _set_madvise_hugepage as smh
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = 4 << 20
calls = {}
for huge in (True, False):
    smh(huge)
    a = np.ones(n, np.float32); b = np.ones(n, np.float32); big = np.ones(1 << 26, np.float32)
    calls[f"copy_nt_huge={huge}"] = (lambda a=a, b=b: k.copy_nt(a.ctypes.data, b.ctypes.data, n))
    calls[f"read_big_huge={huge}"] = (lambda big=big: k.read(big.ctypes.data, big.size))
s = bench.time_interleaved(calls, 3, 31, 1)
for name, v in s.items():
    size = 8 * n if "copy" in name else 4 * (1 << 26)
    print(name, f"{np.median(v)*1e3:.3f} ms, {size/np.median(v)/1e9:.1f} GB/s")
