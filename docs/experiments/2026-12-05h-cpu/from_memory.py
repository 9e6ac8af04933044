"""Softmax 4096x1024 read from memory, both threads: each of variants.py's sources on K (default 24)
input sets of 16 MB in turn (384 MB, past the 300 MB L3; K=1: the input stays in the L3), outputs on
a line, ROUNDS (default 60) interleaved single calls; the median, GB/s of the op's 33.5 MB (input
and output, as the report counts them) and the ratio to the first name's.
Every variant's output checked equal to the first's (where the ablations change the result the
check is skipped: NOCHECK=1).

OMP_PLACES=cores OMP_PROC_BIND=close python docs/experiments/2026-12-05h-cpu/from_memory.py DIR NAME...   (PYTHONPATH at the checkout)"""
import os
import sys
import time

import numpy as np
from common import aligned, call, load

directory, names = sys.argv[1], sys.argv[2:]
R, K = 4096, int(os.environ.get("K", 24))
rng = np.random.default_rng(7)
xs = [rng.standard_normal((R, 1024)).astype(np.float32) * 3 for _ in range(K)]
fns = load(directory, names)
outs = {n: [aligned(R) for _ in range(K)] for n in names}
calls = {n: [call(fns[n], x, o) for x, o in zip(xs, outs[n])] for n in names}
for n in names:
    calls[n][0]()
    if n != names[0] and not os.environ.get("NOCHECK"):
        assert np.array_equal(outs[n][0], outs[names[0]][0]), n
times, turn = {n: [] for n in names}, 0
for _ in range(int(os.environ.get("ROUNDS", 60))):
    for n in names:
        c = calls[n][turn % K]
        t = time.perf_counter()
        c()
        times[n].append(time.perf_counter() - t)
        turn += 1
first = np.median(times[names[0]])
for n in names:
    m = np.median(times[n])
    print(f"{n:28s} {m * 1e3:.3f} ms  {2 * R * 1024 * 4 / m / 1e9:.1f} GB/s  {m / first:.3f}x")
