"""The figures behind the judge's 16-bit fixes of 2026-12-06 (`python rounding.py`, PYTHONPATH at a
checkout):

1. A bfloat16 RMSNorm computed in float32 and cast back, 4096x2048, one seeded normal draw: how many
   elements of a correct implementation (the interpreter's "native" mode: every op in its own dtype,
   as a kernel computes) are further from the float64 reference than a cast's bound allowing one
   rounding (the bound before), and than the bound now (both roundings).
2. dtypes.round_to(float64 -> bfloat16) against exact rational rounding (to nearest even, subnormals
   included) on near-ties and random magnitudes, now and through float32 (the way before).
3. A precise softmax of bfloat16 values: the judge's bound on its output, traced now (float32
   inside) and as before (a bfloat16 softmax), and MLX's results with and without `precise`.
"""
from fractions import Fraction

import mlx.core as mx
import numpy as np

from autoperfect import bounds, dtypes, interp
from autoperfect.judge import draw
from autoperfect.ops import Op
from autoperfect.pipeline import front
from autoperfect.spec import parse_op, seed_for

RMSNORM = ("def rms(x, w):\n    xf = x.astype(mx.float32)\n"
           "    return (xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-5)"
           " * w.astype(mx.float32)).astype(x.dtype)\n")


def cast_bound() -> None:
    spec = parse_op("rms", {"fn": RMSNORM, "inputs": {"x": {"shape": [4096, 2048], "dtype": "bfloat16"},
                                                      "w": {"shape": [2048], "dtype": "bfloat16"}}})
    f = front(spec)
    xs = draw(spec, "normal", np.random.default_rng(seed_for("rounding.py", "rms")))
    ref = interp.evaluate(f.traced, xs, "float64")[0]
    native = np.asarray(interp.evaluate(f.canonical, xs, "native")[0], np.float64)
    vals, errs = bounds.propagate(f.canonical, xs, keep=True)
    (out,) = f.canonical.outputs
    src = f.canonical.nodes[out].srcs[0]
    assert f.canonical.nodes[out].op is Op.CAST
    one = errs[src] * (1 + dtypes.EPS["bfloat16"]) + dtypes.EPS["bfloat16"] * np.abs(vals[out])
    diff = np.abs(native - ref)
    print(f"1. bfloat16 RMSNorm {native.size} elements: beyond one rounding's bound {int((diff > one).sum())}, "
          f"beyond the bound now {int((diff > errs[out]).sum())}")


def exact_bf16(v: float) -> float:
    if not np.isfinite(v) or v == 0:
        return v
    e = max(int(np.floor(np.log2(abs(v)))), -126)
    step = Fraction(2) ** (e - 7)
    q = Fraction(abs(v)) / step
    n = int(q)
    if q - n > Fraction(1, 2) or (q - n == Fraction(1, 2) and n % 2):
        n += 1
    out = float(n * step)
    return float(np.copysign(np.inf if out >= 2.0 ** 128 else out, v))


def round_once() -> None:
    rng = np.random.default_rng(seed_for("rounding.py", "ties"))
    with np.errstate(invalid="ignore"):
        base = (rng.integers(0, 1 << 16, 20000).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    base = base[np.isfinite(base)]
    tie = base * (1 + 2.0 ** -8)
    vals = np.concatenate([tie, tie * (1 + 2.0 ** -30), tie * (1 - 2.0 ** -30),
                           rng.standard_normal(20000) * 10.0 ** rng.integers(-45, 39, 20000)])
    want = np.array([exact_bf16(v) for v in vals])
    now = dtypes.round_to(vals, "bfloat16").astype(np.float64)
    with np.errstate(over="ignore"):
        before = dtypes.round_to(vals.astype(np.float32), "bfloat16").astype(np.float64)
    print(f"2. {vals.size} values: round_to differs from exact rounding at {int((now != want).sum())}, "
          f"through float32 at {int((before != want).sum())}")


def precise_softmax() -> None:
    """What a kernel is held to: the largest bound the judge puts on the output, in bfloat16 ulps of
    each value, for the graph traced now (float32 inside) and as it was (a bfloat16 softmax, every
    step rounded); and how far MLX's softmax without `precise` is from the reference."""
    rng = np.random.default_rng(seed_for("rounding.py", "softmax"))
    x = mx.array(rng.standard_normal((64, 512)) * 4).astype(mx.bfloat16)
    xs = [np.asarray(x.astype(mx.float32))]
    now = front(parse_op("p", {"fn": "def p(x):\n    return mx.softmax(x, axis=-1, precise=True)\n",
                               "inputs": {"x": {"shape": [64, 512], "dtype": "bfloat16"}}}))
    before = front(parse_op("s", {"fn": "def s(x):\n    return mx.softmax(x, axis=-1)\n",
                                  "inputs": {"x": {"shape": [64, 512], "dtype": "bfloat16"}}}))
    ref = interp.evaluate(now.traced, xs, "float64")[0]
    ulp = np.abs(ref) * 2.0 ** -7
    for name, f in (("now", now), ("before", before)):
        bound = bounds.propagate(f.canonical, xs)[1][f.canonical.outputs[0]]
        print(f"3. precise softmax 64x512, graph traced {name}: output bound at most "
              f"{np.max(bound / ulp):.2f} bfloat16 ulps")
    plain = np.asarray(mx.softmax(x, axis=-1).astype(mx.float32)).astype(np.float64)
    precise = np.asarray(mx.softmax(x, axis=-1, precise=True).astype(mx.float32)).astype(np.float64)
    print(f"   MLX precise at most {np.max(np.abs(precise - ref) / ulp):.2f} ulps from the reference, "
          f"without precise {np.max(np.abs(plain - ref) / ulp):.2f}")


if __name__ == "__main__":
    cast_bound()
    round_once()
    precise_softmax()
