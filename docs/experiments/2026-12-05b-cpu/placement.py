"""Whether a buffer's speed follows where it lands: GROUPS separate allocations of 9 sets of 16.8 MB
(MLX's buffers, each group allocated after the last was timed and kept), the roofline's read kernel
in bursts over each group, rounds rotating over the groups; medians per call in ms, per group. Run
from a pipeline clone's root (the roofline's kernels built), under the benchmark's warm condition:
`GROUPS=6 python docs/experiments/2026-12-05b-cpu/placement.py`."""
import os
import time

import numpy as np

from autoperfect import contenders as C
from autoperfect import roofline

K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
MB, SETS, GROUPS = 16_809_984, 9, int(os.environ.get("GROUPS", "6"))
groups = []
for g in range(GROUPS):
    groups.append(roofline.stream_calls(K, MB, SETS, C.mlx_ones)["read"][0])
times = {g: [] for g in range(GROUPS)}
for rnd in range(15):
    for g in range(GROUPS):
        start = time.perf_counter()
        for _ in range(SETS):
            groups[g]()
        times[g].append((time.perf_counter() - start) / SETS)
print(" ".join(f"{np.median(times[g]) * 1e3:.3f}" for g in range(GROUPS)), "ms per 16.8 MB read, by group",
      flush=True)
