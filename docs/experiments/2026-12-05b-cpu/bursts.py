"""OP's VARIANT (a candidate under results/OP/cpu/candidates) in bursts of 9 calls over 9 input sets
beyond the caches, 15 rounds in a fixed order, one process: through the native op (`native`; and
`native_lazy9`, the 9 calls queued and evaluated at once), through ctypes on the main thread, the
roofline's read and streaming-copy kernels over the op's bytes, a one-element MLX op (`mlx_tiny`:
MLX's own cost of a call), and the neighbours NB names (none by default; `mlx_eager`,
`torch_compile`). Medians per call. Run from a pipeline clone's root after `snakemake --cores 4
all`, under the benchmark's warm condition:
`NB=torch_compile python docs/experiments/2026-12-05b-cpu/bursts.py mean_var rows_shifted_v16_near`."""
import time, yaml, numpy as np, mlx.core as mx, sys
from autoperfect import backends, roofline, contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op
op = sys.argv[1]; var = sys.argv[2]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec); k = [k for k in f.kernels if k][0]
lib = f"results/{op}/cpu/candidates/{k.name}.{var}.c"
lib = be.build(open(lib).read()).library
kn = be.Kernel(k, lib, "native"); kc = be.Kernel(k, lib, "ctypes")
import os
NB = os.environ.get("NB", "none").split(",")
sets = C.input_sets(spec, f, 9, "torch_compile" in NB)
pn = program(f, {k.name: kn})
outs = [np.empty(s, np.float32) for s in k.launch.out_shapes]
ccalls = [kc.numpy_call([np.asarray(a) for a in s.arrays] + outs, k.launch) for s in sets]
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
read, written = C.ideal_traffic(f)
streams = roofline.stream_calls(K, read + written, 9, C.mlx_ones)
tiny = mx.ones((4,)); mx.eval(tiny)
ways = {"native": lambda s: C.evaluate(pn, s.arrays), "ctypes": lambda s, i=iter(range(10**9)): ccalls[next(i) % 9](),
        "read": lambda s: streams["read"][0](), "copy_nt": lambda s: streams["copy_nt"][0](),
        "mlx_tiny": lambda s: mx.eval(mx.abs(tiny)),
        "native_lazy9": None}
ref = __import__("autoperfect.interp", fromlist=["x"]).evaluate(f.traced, list(sets[0].xs), "float64")
tf, _ = C.torch_calls(f, sets[0].tensors, ref, {}) if "torch_compile" in NB else ({}, None)
for n, c in C.user_calls(spec, f, tf, {}, ref, sets[0]).items():
    if n in NB: ways[n] = c
res = {n: [] for n in ways}
for rnd in range(15):
    for n, w in ways.items():
        t = time.perf_counter()
        if n == "native_lazy9":
            mx.eval([pn(*s.arrays) for s in sets])
        else:
            for s in sets: w(s)
        res[n].append((time.perf_counter() - t) / 9)
for n, v in res.items(): print(f"{n:12s} {np.median(v)*1e3:.3f} ms")
