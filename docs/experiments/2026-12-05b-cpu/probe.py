"""The roofline's streaming copy (copy_nt) over the same bytes in four settings, in one process:
numpy arrays (huge pages) and MLX buffers (4 KB pages), each back to back and as single calls
between torch and MLX work, as in the benchmark's rounds; plus every thread's CPU affinity.
`OMP_PLACES=cores OMP_PROC_BIND=close python docs/experiments/2026-12-05b-cpu/probe.py MB`."""
import os, sys, time
import numpy as np
import mlx.core as mx
import torch
from autoperfect import roofline, contenders

K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
MB = int(sys.argv[1]) if len(sys.argv) > 1 else 32
n = (MB << 20) // 8
other_t = torch.ones(4 << 20)
other_m = mx.ones((4 << 20,))


def between():  # a neighbour: torch's pool and MLX's stream thread busy for a moment
    (other_t * 2.0).sum()
    mx.eval((other_m * 2.0).sum())


def gbps(call, single, reps=41):
    times = []
    for _ in range(reps):
        if single:
            between()
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return 8 * n / np.median(times) / 1e9, 8 * n / min(times) / 1e9


for rnd in range(2):
    for src in ("numpy", "mlx"):
        ones = (lambda k: np.full(k, 1.0, np.float32)) if src == "numpy" else contenders.mlx_ones
        a, b = ones(n), ones(n)
        call = roofline._stream_call(K, "copy_nt", a, b)
        for single in (False, True):
            med, best = gbps(call, single)
            print(f"{MB} MB {src:5s} {'single' if single else 'back-to-back':12s} median {med:5.1f} best {best:5.1f} GB/s", flush=True)
for tid in sorted(os.listdir("/proc/self/task"), key=int):
    comm = open(f"/proc/self/task/{tid}/comm").read().strip()
    print(tid, comm, sorted(os.sched_getaffinity(int(tid))))
