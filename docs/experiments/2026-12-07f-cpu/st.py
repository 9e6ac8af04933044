# (docs/experiments/2026-12-07f-cpu) Usage: OMP_NUM_THREADS=1 python st.py KERNEL.c ... (LayerNorm ABI: x, w, b, out)
"""Single-thread (R rows, OMP off) in-cache time per element, kernels interleaved, min and median."""
import ctypes, os, subprocess, sys, time
import numpy as np
N=1024; R=int(os.environ.get("R",32))
FLAGS = "-O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math -fPIC -shared".split()
ks={}
for p in sys.argv[1:]:
    so="/tmp/exp/"+os.path.basename(p)+".so"; subprocess.run(["gcc",*FLAGS,p,"-o",so,"-lm"],check=True)
    name=next(l for l in open(p) if l.startswith("void k_")).split()[1].split("(")[0]; ks[p]=getattr(ctypes.CDLL(so),name)
rng=np.random.default_rng(0)
x=(rng.standard_normal((R,N))+8).astype(np.float32); w=rng.standard_normal(N).astype(np.float32); b=rng.standard_normal(N).astype(np.float32)
out=np.zeros((R,N),np.float32)
bufs=(ctypes.c_void_p*4)(x.ctypes.data,w.ctypes.data,b.ctypes.data,out.ctypes.data)
dims=(ctypes.c_int64*2)(R,N); strides=(ctypes.c_int64*8)(N,1,0,1,0,1,N,1)
ts={p:[] for p in ks}; outs={}
for _ in range(int(os.environ.get("ROUNDS",60))):
    for p,k in ks.items():
        k(bufs,dims,strides); t0=time.perf_counter()
        for _ in range(100): k(bufs,dims,strides)
        ts[p].append((time.perf_counter()-t0)/100); outs[p]=out.copy()
f=next(iter(ks))
for p in ks:
    print(f"{os.path.basename(p)}: min {min(ts[p])*1e9/(R*N):.3f} med {np.median(ts[p])*1e9/(R*N):.3f} ns/elem, maxdiff {np.abs(outs[p]-outs[f]).max():.2e}")
