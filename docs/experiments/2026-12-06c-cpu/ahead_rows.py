"""layernorm 4096x1024's kernel (python ahead_rows.py results/layernorm/cpu/candidates/K.VARIANT.c, from a
run's checkout) with the distance of its row requests varied (8192 bytes: as rendered; 0: none),
built with the backend's flags and called through ctypes in bursts of 8 over 12 input sets in turn,
the distances interleaved: median ms and GB/s of its traffic."""
import ctypes, subprocess, sys, time, numpy as np
src = open(sys.argv[1]).read()
R, N = 4096, 1024
FL = ["-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-shared", "-fPIC"]
fns = {}
for d in (0, 4096, 8192, 16384, 32768):
    s = src.replace("ap_row_bytes >= 8192 ? 1 : 8192 /", f"ap_row_bytes >= {max(d,1)} ? 1 : {max(d,1)} /")
    if d == 0: s = s.replace("if (N <= 8192) {", "if (0) {")
    p = f"/tmp/ahead_rows_{d}.c"; open(p, "w").write(s)
    subprocess.run(["gcc", *FL, p, "-o", p[:-2] + ".so", "-lm"], check=True)
    lib = ctypes.CDLL(p[:-2] + ".so"); fns[d] = getattr(lib, src.split("void ")[1].split("(")[0])
S = 12
xs = [np.random.default_rng(i).standard_normal((R, N), dtype=np.float32) for i in range(S)]
g = np.ones(N, np.float32); b = np.zeros(N, np.float32)
outs = [np.empty((R, N), np.float32) for _ in range(S)]
dims = (ctypes.c_int64 * 2)(R, N); st = (ctypes.c_int64 * 6)(N, 1, 0, 1, 0, 1)
def call(f, i):
    bufs = (ctypes.c_void_p * 4)(xs[i].ctypes.data, g.ctypes.data, b.ctypes.data, outs[i].ctypes.data)
    f(bufs, dims, st)
res = {d: [] for d in fns}; k = 0
for rnd in range(40):
    for d, f in (list(fns.items()) if rnd % 2 else list(fns.items())[::-1]):
        t = time.perf_counter()
        for j in range(8): call(f, (k + j) % S)
        res[d].append((time.perf_counter() - t) / 8); k += 8
call(fns[8192], 0); a = outs[0].copy(); call(fns[32768], 0); assert (a == outs[0]).all()
for d, ts in res.items():
    print(f"ahead {d:6d} B: burst median {np.median(ts)*1e3:.3f} ms  {2*R*N*4/np.median(ts)/1e9:.1f} GB/s")
