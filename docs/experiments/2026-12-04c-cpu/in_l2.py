"""Row kernels of 1024-long rows (the pipeline's C sources, ABI: bufs, dims, strides) called back to
back through ctypes on buffers that stay in the L2s: R rows (default 128: 512 KB an array, as
`contenders.in_cache` cuts RMSNorm and LayerNorm), OpenMP on every core, 30 rounds of 50 calls each
source in turn; prints each source's median call, per element per core (the two cores' share), and
its largest difference from the first source's output.
    NIN=2 python docs/experiments/2026-12-04c-cpu/in_l2.py results/rmsnorm/cpu/candidates/*.rows_v16.c
NIN inputs of R x N are drawn (strides N: a second input such as RMSNorm's weight is a full array
here, not one row); OFF=k puts every array k bytes past a 64-byte boundary (MLX's are 8 past a
16-byte one). Where the time goes:
    NIN=2 ROUNDS=400 perf record -o /tmp/l2.data python docs/experiments/2026-12-04c-cpu/in_l2.py SRC
    perf annotate -i /tmp/l2.data --stdio -s KERNEL._omp_fn.0
(RMSNorm's `rows_v16`, two profiles: 37% and 42% of the kernel's samples at the output loop's store,
9% at its load-and-multiply of the weight: the kernel's traffic between L1 and L2, not its arithmetic.)"""
import ctypes, os, subprocess, sys, time

import numpy as np

R, N = int(os.environ.get("R", 128)), 1024
NIN, OFF, ROUNDS = int(os.environ.get("NIN", 1)), int(os.environ.get("OFF", 0)), int(os.environ.get("ROUNDS", 30))
FLAGS = "-O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math -fPIC -shared".split()

kernels = {}
for path in sys.argv[1:]:
    so = os.path.join("/tmp", os.path.basename(path) + ".so")
    subprocess.run(["gcc", *FLAGS, path, "-o", so, "-lm"], check=True)
    name = next(line for line in open(path) if line.startswith("void k_")).split()[1].split("(")[0]
    kernels[path] = getattr(ctypes.CDLL(so), name)


def placed(a):
    raw = np.zeros(a.size * 4 + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + OFF
    view = raw[start:start + a.size * 4].view(np.float32).reshape(a.shape)
    view[...] = a
    return view


rng = np.random.default_rng(0)
ins = [placed(3 * rng.standard_normal((R, N)).astype(np.float32)) for _ in range(NIN)]
out = placed(np.zeros((R, N), np.float32))
bufs = (ctypes.c_void_p * (NIN + 1))(*[a.ctypes.data for a in ins], out.ctypes.data)
dims, strides = (ctypes.c_int64 * 2)(R, N), (ctypes.c_int64 * 8)(N, 1, N, 1, N, 1, N, 1)
times, outs = {p: [] for p in kernels}, {}
for _ in range(ROUNDS):
    for path, kernel in kernels.items():
        kernel(bufs, dims, strides)
        t0 = time.perf_counter()
        for _ in range(50):
            kernel(bufs, dims, strides)
        times[path].append((time.perf_counter() - t0) / 50)
        outs[path] = out.copy()
first = next(iter(kernels))
for path in kernels:
    m = np.median(times[path])
    print(f"{path}: {m * 1e6:.2f} us a call, {m * 1e9 / (R * N / 2):.3f} ns an element a core, "
          f"max |diff| {np.nanmax(np.abs(outs[path] - outs[first])):.2e}")
