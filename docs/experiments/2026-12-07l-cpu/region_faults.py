"""What a guarded buffer of 16 MB costs the judge's runs: a fresh region (its first touch
page-faults) against a pooled one (program._Regions), each filled with a 4096x1024 float32 copy as
guarded_call fills its inputs; medians of 10, alternating.

    PYTHONPATH=$PWD python docs/experiments/2026-12-07l-cpu/region_faults.py
"""
import time

import numpy as np

from autoperfect import program

x = np.random.default_rng(0).standard_normal((4096, 1024)).astype(np.float32)
pool, none = program._Regions(), program._Regions()
none.POOL_BYTES = 0  # keeps nothing: every buffer a fresh region
fresh, pooled = [], []
for _ in range(10):
    for times, regions in ((fresh, none), (pooled, pool)):
        program._REGIONS = regions
        start = time.perf_counter()
        np.copyto(program.placed(x.shape, np.float32, 0, guard=True), x)
        times.append(time.perf_counter() - start)
print(f"16 MB guarded buffer filled: fresh region {np.median(fresh) * 1e3:.1f} ms, "
      f"pooled {np.median(pooled) * 1e3:.1f} ms (medians of 10)")
