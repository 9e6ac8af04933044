"""GELU (tanh form, config.yaml's gelu_tanh) evaluated in float32 as the user wrote it and as
x / (1 + exp(-2u)), the same value in exact arithmetic (1 + tanh(u) = 2 / (1 + e^-2u)), against the
judge's answer key: the float64 reference of the user's traced graph and the error bound propagated
over a canonical graph (bounds.propagate), once the user's and once the rewritten formula's.
2^20 points evenly over [-12, 12] and 2^18 of magnitudes 1e-30..1 of both signs; numpy's float32
tanh and exp stand in for the kernel's. Prints each form's worst error as a share of each bound.
From the repository root: `PYTHONPATH=. python docs/experiments/2026-12-06-cpu/gelu_sigmoid_error.py`."""
import numpy as np
import yaml

from autoperfect import interp
from autoperfect.bounds import propagate
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

SHAPE = {"x": (1280, 1024)}
REWRITTEN = "def gs(x):\n    return x / (1 + mx.exp(-1.5957691216057308 * (x + 0.044715 * x ** 3)))\n"


def bound_of(spec, x):
    f = front(spec.with_shapes(SHAPE))
    _, errs = propagate(f.canonical, [x])
    return np.broadcast_to(errs[f.canonical.outputs[0]], x.shape)


def worst(got, ref, bound, x):
    r = np.abs(got.astype(np.float64) - ref) / bound
    fin = np.isfinite(r)
    i = np.argmax(np.where(fin, r, 0))
    return f"{r[fin].max():.3g} at x = {x.reshape(-1)[i]:.6g}"


user = parse_op("gelu_tanh", yaml.safe_load(open("config.yaml"))["ops"]["gelu_tanh"])
rewritten = parse_op("gs", {"fn": REWRITTEN, "inputs": {"x": {"shape": list(SHAPE["x"]), "dtype": "float32"}}})
x = np.concatenate([np.linspace(-12, 12, 1 << 20, dtype=np.float32),
                    np.sign(np.linspace(-1, 1, 1 << 18)).astype(np.float32)
                    * np.logspace(-30, 0, 1 << 18, dtype=np.float32)]).astype(np.float32).reshape(SHAPE["x"])
ref = interp.evaluate(front(user.with_shapes(SHAPE)).traced, [x], "float64")[0]
f32 = np.float32
u = f32(0.7978845608028654) * (x + f32(0.044715) * x ** 3)
forms = {"as written": f32(0.5) * x * (f32(1) + np.tanh(u))}
with np.errstate(over="ignore"):
    forms["x / (1 + exp(-2u))"] = x / (f32(1) + np.exp(f32(-2) * u))
for name, spec in (("the user's formula's bound", user), ("the rewritten formula's bound", rewritten)):
    bound = bound_of(spec, x)
    for form, got in forms.items():
        print(f"{form}, against {name}: worst error {worst(got, ref, bound, x)} of the bound")
