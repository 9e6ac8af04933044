"""Softmax rows in cache, one thread: each of variants.py's sources on R (default 128) rows of 1024
floats (512 KB in, 512 KB out: the L2), batches of 20 calls, ROUNDS (default 200) interleaved
rounds, the median a row and the ratio to the first name's.

OMP_NUM_THREADS=1 python docs/experiments/2026-12-05h-cpu/rows_in_cache.py DIR NAME...   (PYTHONPATH at the checkout)"""
import os
import sys
import time

import numpy as np
from common import aligned, call, load

directory, names = sys.argv[1], sys.argv[2:]
R = int(os.environ.get("R", 128))
x = aligned(R)
x[...] = np.random.default_rng(1).standard_normal(x.shape) * 3
calls = {n: call(fn, x, aligned(R)) for n, fn in load(directory, names).items()}
times = {n: [] for n in names}
for _ in range(int(os.environ.get("ROUNDS", 200))):
    for n, c in calls.items():
        t = time.perf_counter()
        for _ in range(20):
            c()
        times[n].append((time.perf_counter() - t) / 20)
first = np.median(times[names[0]])
for n in names:
    m = np.median(times[n])
    print(f"{n:28s} {m * 1e9 / R:7.1f} ns a row  {m / first:.3f}x")
