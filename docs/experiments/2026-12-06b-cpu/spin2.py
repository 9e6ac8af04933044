"""The streaming copy over one set of 32 MB of traffic (env PRE: after nothing, `idle`, or after an
MLX softmax over 16 MB, `mlx`, which leaves its output's lines dirty), then a sleep of 0, 5 or 30 ms."""
import os, time, numpy as np, mlx.core as mx
from autoperfect import roofline, contenders
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = 32 * 2**20 // 8
a, b = contenders.mlx_ones(n), contenders.mlx_ones(n)
copy = lambda: k.copy_nt(a.ctypes.data, b.ctypes.data, n)
xa = mx.ones((4096, 1024)); mx.eval(xa)
msm = lambda: mx.eval(mx.softmax(xa, axis=-1))
PRE = os.environ["PRE"]
res = {}
for rnd in range(25):
    for gap in (0.0, 0.005, 0.03):
        if PRE == "mlx": msm()
        if gap: time.sleep(gap)
        t = time.perf_counter(); copy(); res.setdefault(gap, []).append(time.perf_counter() - t)
for key, ts in res.items():
    print(PRE, key, f"median {np.median(ts)*1e3:.3f} ms  {8*n/np.median(ts)/1e9:.1f} GB/s")
