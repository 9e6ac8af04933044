"""OP's chosen VARIANT (python paths.py OP VARIANT, from a run's checkout after `snakemake all`) through
MLX (the native op, as the benchmark's `kernel` contender) and the same library through ctypes
(layernorm's argument layout), bursts of 18 calls over 9 input sets in turn, interleaved with the
roofline's streaming copy over as many sets: medians, ms and GB/s of a copy's traffic."""
import ctypes, json, sys, time, numpy as np, yaml
from autoperfect import backends, roofline, spec as S
import autoperfect.contenders as C
op = sys.argv[1]; variant = sys.argv[2]
val = json.load(open(f"results/{op}/cpu/validation.json"))
spec = S.parse_ops(yaml.safe_load(open("config.yaml"))["ops"])[op]
be = backends.get("cpu"); f = C.front(spec)
kname, libs = next(iter(val["verified"].items())); lib = libs[variant]
loaded = {k.name: be.Kernel(k, lib) for k in f.kernels if k is not None}
ours = C.program(f, loaded)
count = 9
sets = C.input_sets(spec, f, count, False)
cdll = ctypes.CDLL(lib); fn = getattr(cdll, kname)
R, N = sets[0].xs[0].shape
outs = [np.empty((R, N), np.float32) for _ in range(count)]
dims = (ctypes.c_int64 * 2)(R, N); st = (ctypes.c_int64 * 6)(N, 1, 0, 1, 0, 1)
def raw(i):
    xs = sets[i].xs
    fn((ctypes.c_void_p * 4)(*(x.ctypes.data for x in xs), outs[i].ctypes.data), dims, st)
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = R * N
cp = [(C.mlx_ones(n), C.mlx_ones(n)) for _ in range(count)]
calls = {"mlx_native": lambda i: C.evaluate(ours, sets[i].arrays), "ctypes": raw,
         "copy_nt": lambda i: k.copy_nt(cp[i][0].ctypes.data, cp[i][1].ctypes.data, n)}
res = {c: [] for c in calls}; j = 0
for rnd in range(30):
    for c in (list(calls) if rnd % 2 else list(calls)[::-1]):
        t = time.perf_counter()
        for q in range(18): calls[c]((j + q) % count)
        res[c].append((time.perf_counter() - t) / 18); j += 18
for c, ts in res.items():
    print(f"{c:10s} burst median {np.median(ts)*1e3:.3f} ms  {8*n/np.median(ts)/1e9:.1f} GB/s")
