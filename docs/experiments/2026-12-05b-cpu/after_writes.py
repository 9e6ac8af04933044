"""Whether plain (write-allocate) stores leave memory slower for what follows: the roofline's read
kernel over 9 sets of 16.8 MB (MLX's buffers) in a burst, timed right after a burst of the plain
copy, of the streaming copy, or of nothing, and again a burst later, in rotating rounds, one
process. Medians per call in ms. Run from a pipeline clone's root after `snakemake --cores 4 all`
(the roofline's kernels built), under the benchmark's warm condition:
`python docs/experiments/2026-12-05b-cpu/after_writes.py`."""
import time

import numpy as np

from autoperfect import contenders as C
from autoperfect import roofline

K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
MB, SETS = 16_809_984, 9
read = roofline.stream_calls(K, MB, SETS, C.mlx_ones)["read"][0]
streams = roofline.stream_calls(K, 2 * MB, SETS, C.mlx_ones)  # each copy moves 2 x 16.8 MB


def burst(call) -> float:
    start = time.perf_counter()
    for _ in range(SETS):
        call()
    return (time.perf_counter() - start) / SETS


before = {"nothing": lambda: None, "copy_nt": streams["copy_nt"][0], "copy": streams["copy"][0]}
first = {n: [] for n in before}
second = {n: [] for n in before}
for rnd in range(31):
    for name in list(before)[rnd % 3:] + list(before)[:rnd % 3]:
        burst(before[name])
        first[name].append(burst(read))
        second[name].append(burst(read))
for name in before:
    print(f"read after {name:8s}: {np.median(first[name]) * 1e3:.3f} ms, a burst later "
          f"{np.median(second[name]) * 1e3:.3f} ms", flush=True)
