"""The read kernel in bursts over 9 sets of 16.8 MB of MLX's buffers, then the roofline's own
measure_stream at 134 MB numpy arrays, in one process: whether the two move together. Run from a
pipeline clone's root under the benchmark's warm condition, several times:
`python docs/experiments/2026-12-05b-cpu/covary.py`."""
import time, numpy as np
from autoperfect import contenders as C, roofline
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
MB, SETS = 16_809_984, 9
read = roofline.stream_calls(K, MB, SETS, C.mlx_ones)["read"][0]
t = []
for _ in range(15):
    s = time.perf_counter()
    for _ in range(SETS): read()
    t.append((time.perf_counter() - s) / SETS)
st = roofline.measure_stream(K, 1 << 25, 5)
print(f"mlx read bursts {MB / np.median(t) / 1e9:5.1f} GB/s | roofline-style 134 MB numpy: copy_nt {st['copy_nt_gbps']:5.1f} read {st['read_gbps']:5.1f} GB/s", flush=True)
