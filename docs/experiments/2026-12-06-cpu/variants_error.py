"""GELU's CPU variants of our own functions as the checked-out renderer writes them (the `_sigmoid`
twins among them: kernel_ir.sigmoid_form), built and run through the native op on the points of
gelu_sigmoid_error.py, each one's worst error as a share of the bound the judge takes from the
user's formula, and how many points exceed it. From the repository root:
`PYTHONPATH=. python docs/experiments/2026-12-06-cpu/variants_error.py`."""
import mlx.core as mx
import numpy as np
import yaml

from autoperfect import interp
from autoperfect.backends import cpu
from autoperfect.bounds import propagate
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

SHAPE = {"x": (1280, 1024)}
spec = parse_op("gelu_tanh", yaml.safe_load(open("config.yaml"))["ops"]["gelu_tanh"]).with_shapes(SHAPE)
f = front(spec)
(k,) = [k for k in f.kernels if k is not None]
x = np.concatenate([np.linspace(-12, 12, 1 << 20, dtype=np.float32),
                    np.sign(np.linspace(-1, 1, 1 << 18)).astype(np.float32)
                    * np.logspace(-30, 0, 1 << 18, dtype=np.float32)]).astype(np.float32).reshape(SHAPE["x"])
ref = interp.evaluate(f.traced, [x], "float64")[0]
_, errs = propagate(f.canonical, [x])
bound = np.broadcast_to(errs[f.canonical.outputs[0]], ref.shape)
for s in cpu.schedules_for(k):
    if not s.own_math:
        continue
    built = cpu.build(cpu.render(k, s))
    got = np.asarray(cpu.Kernel(k, built.library)([mx.array(x)])[0]).astype(np.float64)
    r = np.abs(got - ref) / bound
    fin = np.isfinite(r)
    i = int(np.argmax(np.where(fin, r, 0)))
    print(f"{s.name}: worst {r[fin].max():.3f} of the bound at x = {x.reshape(-1)[i]:.6g}; "
          f"points over it: {int((r[fin] > 1).sum())}")
