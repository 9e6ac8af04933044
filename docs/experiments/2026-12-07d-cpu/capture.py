"""The gate requests of a LayerNorm's first mx.value_and_grad through autoperfect.jit at 4096x1024
(fresh cache): judge.run_child patched to save each request the runtime's gate sends to its child,
as OUT/req1.json (the forward kernel's) and OUT/req2.json (the backward's three), with the
libraries built for them (they stay in a temporary cache). Run from a checkout:
    python capture.py OUT"""
import json
import sys
import tempfile
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import judge

out = sys.argv[1]
real, sent = judge.run_child, []


def saving(module, request, settings, backend):
    if module == "autoperfect.runtime":
        sent.append(request)
        with open(f"{out}/req{len(sent)}.json", "w") as f:
            json.dump(request, f)
    return real(module, request, settings, backend)


judge.run_child = saving


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


rng = np.random.default_rng(0)
args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in [(4096, 1024), (1024,), (1024,)]]
c = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
jitted = autoperfect.jit(layer_norm, cache_dir=tempfile.mkdtemp())
f = mx.value_and_grad(lambda *a: mx.sum(jitted(*a) * c), argnums=(0, 1, 2))
t = time.perf_counter()
mx.eval(f(*args))
print(f"first call {time.perf_counter() - t:.1f} s; requests: "
      + ", ".join(f"req{n + 1}.json {sum(len(v) for v in r['libraries'].values())} variants" for n, r in enumerate(sent)))
