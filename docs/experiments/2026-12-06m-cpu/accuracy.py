"""train_step.py's step at 4096x1024: jit's outputs and MLX eager's against the float64 answer key
(the traced graph evaluated in float64 by autoperfect.interp), the largest error of each output
relative to 1 + |exact|. Run: python accuracy.py (PYTHONPATH at a checkout)."""
import tempfile

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect.canon import canonicalize
from autoperfect.interp import evaluate
from autoperfect.trace import trace
from train_step import step

rng = np.random.default_rng(0)
arrays = [rng.standard_normal(s).astype(np.float32) for s in ((4096, 1024), (1024,), (1024,), (4096, 1024))]
args = [mx.array(a) for a in arrays]
graph = canonicalize(trace(step, [(n, a.shape, "float32") for n, a in zip("xwbt", arrays)]))
exact = evaluate(graph, arrays)
got = {"jit": autoperfect.jit(step, cache_dir=tempfile.mkdtemp())(*args), "mlx_eager": step(*args)}
for label, outs in got.items():
    errs = [float(np.max(np.abs(np.array(o, dtype=np.float64) - e) / (1 + np.abs(e)))) for o, e in zip(outs, exact)]
    print(label, "loss, w, b:", ", ".join(f"{e:.1e}" for e in errs))
