"""The 16-bit roundings of the prelude before and after they stayed in 32-bit lanes (the commit
before: a5c7951), built from the same kernels and timed interleaved in one process, in cache
(`python prelude_ab.py 256`: 256 rows of 2048). Outputs compared bit for bit."""
import os, re, subprocess, sys, time, numpy as np
ROOT = os.path.dirname(os.path.abspath(__file__))
from autoperfect import backends, bench
from autoperfect.backends import cpu, cfamily
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
BE = backends.get("cpu")
old_src = subprocess.run(["git", "-C", ROOT, "show", "a5c7951:autoperfect/backends/cfamily.py"], capture_output=True, text=True, check=True).stdout
OLD = re.search(r'PRELUDE = """\\\n(.*?)"""', old_src, re.S).group(1)
NEW = cfamily.PRELUDE
S = [int(sys.argv[1]), 2048]
fns = {
 "llama_bf16": ("def f(x, w):\n    xf = x.astype(mx.float32)\n    y = xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-6)\n    return w * y.astype(x.dtype)\n", "bfloat16"),
 "add_bf16": ("def f(x, w):\n    return x + w\n", "bfloat16"),
 "silu_f16": ("def f(x, w):\n    return x * mx.sigmoid(x) + w\n", "float16"),
}
rng = np.random.default_rng(0)
for name, (fn, dt) in fns.items():
    spec = parse_op("f", {"fn": fn, "inputs": {"x": {"shape": S, "dtype": dt}, "w": {"shape": [S[1]], "dtype": dt}}})
    (k,) = [k for k in front(spec).kernels if k is not None]
    x = rng.integers(0x3000, 0x3c00, S).astype(np.uint16)
    w = x[0].copy()
    for s in cpu.schedules_for(k)[:3]:
        calls, outs = {}, {}
        for form, pre in (("old", OLD), ("new", NEW)):
            cfamily.PRELUDE = pre
            src = BE.render(k, s)
            b = BE.build(src); assert b.ok, b.log
            kern = BE.Kernel(k, b.library, "ctypes")
            outs[form] = np.zeros(S, np.uint16)
            calls[form] = (lambda kern=kern, o=outs[form]: kern.run_numpy([x, w, o], k.launch))
        for c in calls.values(): c()
        same = np.array_equal(outs["old"], outs["new"])
        samples = bench.time_interleaved(calls, warmup=5, repeats=41, seed=3)
        r = bench.speedup(samples["new"], samples["old"], seed=3)
        med = {f: round(np.median(v) * 1e3, 4) for f, v in samples.items()}
        print(name, s.name, med, f"old/new {r['median']:.2f}x [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]", "same bits", same, flush=True)
