"""float16 elementwise kernels on the CPU: the renderer before this change (6fa48f4: the prelude's
bit forms on every element, every op rounded to float16) against its two parts apart and together,
built from the same kernels and schedules, timed interleaved in one process on the same arrays.

  before   6fa48f4's cfamily.py (loaded from git)
  f32      float32 kept between the ops of an inexact kernel (CRenderer.rounded), nothing staged
  staged   float16 staged through float buffers by F16C (CRenderer.staged_loop), every op rounded
  both     the current renderer

Outputs are compared bit for bit against `before` where the arithmetic is the same (an exact
kernel: every form; an inexact one: `staged`), every form's largest difference from `before` in
float16 ulps is printed, and for `before` and `both` the largest error against the op in float64
and how many elements each has nearer it. Run: python half_stage.py [rows] (PYTHONPATH at a checkout, the
warm-allocator env; rows default 4096, of 2048).
"""
import sys

import numpy as np

from autoperfect import backends, bench
from autoperfect.backends import cfamily, cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
from sources_same import load  # beside this script

BEFORE = "6fa48f4"
BE = backends.get("cpu")
ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
SHAPE = [ROWS, 2048]
OPS = {
    "silu": "def f(x):\n    return x * mx.sigmoid(x)\n",
    "gelu_tanh": "def f(x):\n    return 0.5 * x * (1 + mx.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))\n",
    "mul_add": "def f(x, y):\n    return x * y + x\n",
    "upcast": "def f(x, y):\n    return x.astype(mx.float32) * y.astype(mx.float32)\n",
}


# the ops in float64 from the float16 inputs: how far each form is from the exact result
EXACT = {
    "silu": lambda x, y: x / (1 + np.exp(-x)),
    "gelu_tanh": lambda x, y: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x))),
    "mul_add": lambda x, y: x * y + x,
}


def old_module():
    return load(BEFORE, "autoperfect/backends/cfamily.py", "cfamily_before")


class F32Only(cfamily.CRenderer):
    def staging(self):
        return frozenset()


class StagedOnly(cfamily.CRenderer):
    def rounded(self, ins, expr):
        return cfamily.CFamily.rounded(self, ins, expr)


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance between float16 arrays in steps of the float16 grid (NaN at the same places)."""
    assert np.array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(a)
    ia, ib = (v[ok].view(np.int16).astype(np.int64) for v in (a, b))
    ia, ib = (np.where(v < 0, -0x8000 - v, v) for v in (ia, ib))  # sign-magnitude to a monotone order
    return int(np.abs(ia - ib).max(initial=0))


def main() -> None:
    old = old_module()
    rng = np.random.default_rng(20261206)
    x = (rng.standard_normal(SHAPE) * 2).astype(np.float16)
    y = (rng.standard_normal(SHAPE)).astype(np.float16)
    print(f"{SHAPE[0]}x{SHAPE[1]} float16, median ms over interleaved rounds; speedup of `both` over `before` [95% CI]")
    for name, fn in OPS.items():
        names = ["x", "y"][:fn.count(",") + 1]
        spec = parse_op(name, {"fn": fn, "inputs": {n: {"shape": SHAPE, "dtype": "float16"} for n in names}})
        inputs = [{"x": x, "y": y}[n] for n in names]
        (k,) = [k for k in front(spec).kernels if k is not None]
        exact = cfamily.exact(k)
        out_dtype = np.float16 if k.args[-1].dtype == "float16" else np.float32
        for schedule in cpu.schedules_for(k):
            forms = {"before": old.CRenderer, "f32": F32Only, "staged": StagedOnly, "both": cfamily.CRenderer}
            calls, outs = {}, {}
            for form, renderer in forms.items():
                build = BE.build(renderer(k, schedule).render())
                assert build.ok, build.log
                kern = BE.Kernel(k, build.library, "ctypes")
                outs[form] = np.zeros(SHAPE, out_dtype)
                calls[form] = (lambda kern=kern, o=outs[form]: kern.run_numpy([*inputs, o], k.launch))
            for call in calls.values():
                call()
            same = {f: np.array_equal(outs[f].view(np.uint8), outs["before"].view(np.uint8)) for f in forms}
            apart = {f: ulps(outs[f], outs["before"]) for f in forms} if out_dtype == np.float16 else {}
            if name in EXACT:
                want = EXACT[name](x.astype(np.float64), y.astype(np.float64))
                err = {f: np.abs(outs[f].astype(np.float64) - want) for f in ("before", "both")}
                print(f"  {name}: largest error against float64, before {err['before'].max():.3g}, "
                      f"both {err['both'].max():.3g}; elements nearer it: before "
                      f"{int((err['before'] < err['both']).sum())}, both {int((err['both'] < err['before']).sum())}")
            samples = bench.time_interleaved(calls, warmup=3, repeats=15, seed=7)
            r = bench.speedup(samples["both"], samples["before"], seed=7)
            med = " ".join(f"{f} {np.median(v) * 1e3:.3f}" for f, v in samples.items())
            print(f"{name} ({'exact' if exact else 'inexact'}) {schedule.name}: {med}; "
                  f"{r['median']:.2f}x [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]; same bits as before: "
                  f"{', '.join(f for f, v in same.items() if v)}; ulps from before: {apart}", flush=True)


if __name__ == "__main__":
    main()
