"""The mean/var kernel (`results/mean_var/cpu/candidates/*.rows_v16.c`) through the native
dispatch, back to back (after itself), at 1 to 4096 rows of 1024, beside MLX eager's mean and
var and a one-element MLX add: 51 calls, medians. `python docs/experiments/2026-12-03c-cpu/fixed.py mean_var`."""
import sys, time, glob
import numpy as np, yaml, mlx.core as mx
from autoperfect import backends
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu"); f = front(spec)
k = [k for k in f.kernels if k][0]
(src,) = glob.glob(f"results/{op}/cpu/candidates/{k.name}.rows_v16.c")
kern = be.Kernel(k, be.build(open(src).read()).library)
from autoperfect.kernel_ir import Launch
for rows in (1, 8, 64, 256, 1024, 4096):
    x = mx.random.normal((rows, 1024)); mx.eval(x)
    L = Launch((rows, 1024), ((1024, 1),), ((rows, 1024),), ((rows,), (rows,)))
    def mine(): mx.eval(*kern([x], L))
    def eager(): mx.eval(mx.mean(x, axis=-1), mx.var(x, axis=-1))
    def add1(): mx.eval(x[:1, :1] + 1)
    t = {}
    for n, c in (("ours", mine), ("mlx_eager", eager), ("tiny mlx op", add1)):
        for _ in range(5): c()
        v = []
        for _ in range(51):
            s = time.perf_counter(); c(); v.append(time.perf_counter() - s)
        t[n] = np.median(v) * 1e6
    print(rows, {n: round(v, 1) for n, v in t.items()}, "us")
