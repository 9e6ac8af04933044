"""LayerNorm row kernels on one thread, in cache: R rows of 1024 (default 32: 128 KB, the L2's),
ROUNDS rounds (default 60) of 100 calls each kernel in turn; prints each one's minimum and median
time an element and its largest difference from the first one's output. A kernel is a schedule of
config.yaml's LayerNorm, rendered by the project's compiler (its name), or a C file (the same ABI:
x, w, b, out). From the checkout's root:
    OMP_NUM_THREADS=1 python docs/experiments/2026-12-07f-cpu/st.py rows_v16_near \
        docs/experiments/2026-12-07f-cpu/ln_hand.c rows_shifted_v16"""
import ctypes, os, subprocess, sys, tempfile, time

import numpy as np
import yaml

from autoperfect import backends
from autoperfect.pipeline import front
from autoperfect.spec import parse_ops

N, R, ROUNDS = 1024, int(os.environ.get("R", 32)), int(os.environ.get("ROUNDS", 60))
FLAGS = "-O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math -fPIC -shared".split()

spec = parse_ops(yaml.safe_load(open("config.yaml"))["ops"])["layernorm"]
kernel = next(k for k in front(spec).kernels if k is not None)
be = backends.get("cpu")
rendered = {s.name: be.render(kernel, s) for s in be.schedules_for(kernel)}
tmp = tempfile.mkdtemp()
ks = {}
for arg in sys.argv[1:]:
    path = arg
    if arg in rendered:
        path = os.path.join(tmp, f"{arg}.c")
        open(path, "w").write(rendered[arg])
    so = os.path.join(tmp, os.path.basename(path) + ".so")
    subprocess.run(["gcc", *FLAGS, path, "-o", so, "-lm"], check=True)
    name = next(line for line in open(path) if line.startswith("void k_")).split()[1].split("(")[0]
    ks[arg] = getattr(ctypes.CDLL(so), name)

rng = np.random.default_rng(0)
x = (rng.standard_normal((R, N)) + 8).astype(np.float32)
w, b = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
out = np.zeros((R, N), np.float32)
bufs = (ctypes.c_void_p * 4)(x.ctypes.data, w.ctypes.data, b.ctypes.data, out.ctypes.data)
dims, strides = (ctypes.c_int64 * 2)(R, N), (ctypes.c_int64 * 8)(N, 1, 0, 1, 0, 1, N, 1)
ts, outs = {a: [] for a in ks}, {}
for _ in range(ROUNDS):
    for a, k in ks.items():
        k(bufs, dims, strides)
        t0 = time.perf_counter()
        for _ in range(100):
            k(bufs, dims, strides)
        ts[a].append((time.perf_counter() - t0) / 100)
        outs[a] = out.copy()
first = next(iter(ks))
for a in ks:
    print(f"{os.path.basename(a)}: min {min(ts[a]) * 1e9 / (R * N):.3f} med {np.median(ts[a]) * 1e9 / (R * N):.3f} "
          f"ns/elem, maxdiff {np.abs(outs[a] - outs[first]).max():.2e}")
