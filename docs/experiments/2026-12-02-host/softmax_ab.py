"""Softmax over 4096x1024 through autoperfect.jit (race off, so its fastest variant) against torch
eager, interleaved, 31 rounds; medians in ms and their ratio. Run it in turn on two checkouts (an
older one from a git worktree) to see whether a change moved the kernel's time, under the
benchmark's warm condition:

    OMP_PLACES=cores OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 \
      MALLOC_TRIM_THRESHOLD_=4294967296 PYTHONPATH=. python docs/experiments/2026-12-02-host/softmax_ab.py LABEL
"""
import sys

import mlx.core as mx
import numpy as np
import torch

from _softmax import warm_jit
from autoperfect import bench

x = mx.random.normal((4096, 1024))
mx.eval(x)
jitted, _ = warm_jit(x)
t = torch.randn(4096, 1024)
s = bench.time_interleaved({"jit": lambda: mx.eval(jitted(x)), "torch": lambda: torch.softmax(t, -1)}, 3, 31, 1)
m = {k: float(np.median(v)) * 1e3 for k, v in s.items()}
print(sys.argv[1] if len(sys.argv) > 1 else "", {k: round(v, 3) for k, v in m.items()},
      "jit/torch", round(m["jit"] / m["torch"], 3), jitted.last_trace.regions[0].variant)
