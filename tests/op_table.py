"""The one table of ops every front-end test is driven by.

Each `Case` is a small function written against `mx`, the (name, shape, dtype) of its inputs and the
domain its inputs are drawn from. The table covers every op kind the tracer records (each unary and
binary MLX function, where, comparisons, broadcasting, powers, reductions, softmax, movement, casts,
Python scalars, operators, tuple outputs) plus the six ops of config.yaml at small shapes.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable, Sequence

import mlx.core as mx
import numpy as np
import yaml

from autoperfect import dtypes, trace
from autoperfect.spec import parse_ops, seed_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

Inputs = tuple[tuple[str, tuple[int, ...], str], ...]


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    inputs: Inputs
    range: tuple[float, float] | None = None  # domain of every float input (None: normal values)
    ints: bool = False                         # small integers, so comparisons see ties
    specials: bool = False                     # also meaningful at inf, -inf, nan, -0.0

    def __repr__(self) -> str:
        return self.name


def args(*shapes: tuple[int, ...], names: str = "xyzw", dtype: str = "float32") -> Inputs:
    return tuple((n, tuple(s), dtype) for n, s in zip(names, shapes))


X = args((4, 5))
XY = args((4, 5), (4, 5))
X3 = args((3, 4, 5))
POSITIVE = (0.25, 4.0)

# -- unary and binary functions: one generic case each, with the domain where they are defined -----

UNARY_RANGE = {"sqrt": POSITIVE, "rsqrt": POSITIVE, "log": POSITIVE, "log1p": (-0.75, 4.0)}
BINARY_RANGE = {"power": POSITIVE}
INT_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _unary(name: str) -> Callable:
    return lambda x: getattr(mx, name)(x)


def _binary(name: str) -> Callable:
    return lambda x, y: getattr(mx, name)(x, y)


def _unary_cases() -> list[Case]:
    return [Case(f"unary_{name}", _unary(name), X, UNARY_RANGE.get(name), specials=True)
            for name in trace.UNARY_FUNCTIONS]


def _binary_cases() -> list[Case]:
    out = []
    for name in trace.BINARY_FUNCTIONS:
        out.append(Case(f"binary_{name}", _binary(name), XY, BINARY_RANGE.get(name),
                        ints=name in INT_COMPARISONS or name.startswith("logical"),
                        specials=name not in BINARY_RANGE))
    return out


# -- reductions: every reduction, over every kind of axis argument, with and without keepdims ------

REDUCTIONS = ("sum", "mean", "max", "min", "prod", "var", "std", "logsumexp")
AXES = (None, 0, -1, (0, 2))


def _reduce(name: str, axis, keepdims: bool) -> Callable:
    return lambda x: getattr(mx, name)(x, axis=axis, keepdims=keepdims)


def _axis_name(axis) -> str:
    if axis is None:
        return "all"
    return "_".join(str(a) for a in axis) if isinstance(axis, tuple) else str(axis)


def _reduction_cases() -> list[Case]:
    out = []
    for name in REDUCTIONS:
        for axis in AXES:
            for keepdims in (False, True):
                case_name = f"reduce_{name}_{_axis_name(axis)}{'_keep' if keepdims else ''}"
                # a product of 60 normal values under- or overflows: draw factors near 1
                domain = (0.5, 1.5) if name == "prod" else None
                out.append(Case(case_name, _reduce(name, axis, keepdims), X3, domain, specials=True))
    return out


# -- hand-written cases ----------------------------------------------------------------------------


def where_scalar(x):
    return mx.where(x > 0, x, 0.0)


def where_bool_input(c, x, y):
    return mx.where(c, x, y)


def where_broadcast(x, y):
    return mx.where(x < y, x * 2, y)


def clip(x):
    return mx.clip(x, -1.0, 1.0)


def broadcast_col_row(x, y):
    return x * y + x


def broadcast_scalar_consts(x):
    return 2.0 * x + 1 - x / 3


def broadcast_zero_d(s, x):
    return s * x + s


def power_operator(x, y):
    return x ** y


def power_int_exponents(x):
    return x ** 2 + x ** 3 - x ** 1


def power_fractional(x):
    return mx.power(x, 0.5) + 2.0 ** x


def softmax_last(x):
    return mx.softmax(x, axis=-1)


def softmax_first(x):
    return mx.softmax(x, axis=0)


def softmax_all(x):
    return mx.softmax(x)


def softmax_precise(x):
    return mx.softmax(x, axis=-1, precise=True)


def var_ddof(x):
    return mx.var(x, axis=-1, ddof=1)


def method_reductions(x):
    return x.sum(axis=-1) + x.max(axis=-1) - x.mean(axis=-1)


def reshape_flat(x):
    return mx.reshape(x, (20,)) * 2


def reshape_infer(x):
    return x.reshape(-1, 2) + 1


def flatten(x):
    return mx.flatten(x) * 3


def transpose_default(x):
    return mx.transpose(x) + 1


def transpose_perm(x):
    return mx.transpose(x, (2, 0, 1)) * 2


def transpose_attr(x):
    return x.T - 1


def swapaxes(x):
    return mx.swapaxes(x, 0, 1) * x.T


def expand_dims(x, y):
    return mx.expand_dims(x, 0) + mx.expand_dims(y, 1)


def squeeze(x):
    return mx.squeeze(x) * 2


def squeeze_axis(x):
    return mx.squeeze(x, axis=1) + 1


def broadcast_to(x):
    return mx.broadcast_to(x, (3, 4, 5)) * 2


def cast_to_half(x):
    return x.astype(mx.float16)


def cast_half_to_float(x):
    return x.astype(mx.float32) * 3


def cast_round_trip(x):
    return mx.astype(x.astype(mx.float16) * 2, mx.float32)


def cast_to_bfloat(x):
    return x.astype(mx.bfloat16) + 1


def cast_bfloat_to_float(x):
    return x.astype(mx.float32) - 1


def cast_bool_to_float(c):
    return c.astype(mx.float32) * 2


def cast_float_to_int(x):
    return (x * 3).astype(mx.int32)


def weak_half_times_float(x):
    return x * 2.5 + 1


def weak_bfloat_plus_int(x):
    return x + 3


def weak_int_plus_int(i):
    return i + 1


def weak_int_times_float(i):
    return i * 1.5


def weak_int_divide(i):
    return i / 2


def weak_bool_plus_int(c):
    return c + 1


def weak_reflected(x):
    return 2 - x, 1 / (x * x + 1), 3 * x


def operators_arith(x, y):
    return (x + y) * (x - y) / (y * y + 1)


def operators_unary(x):
    return -x + abs(x)


def operators_compare(x, y):
    return (x < y, x <= y, x > y, x >= y, x == y, x != y)


def operators_compare_scalar(x):
    return (x > 0.5, 1.0 <= x, x == 0)


def operators_logical(c, d):
    return (c & d, c | d, ~c)


def multi_output(x, y):
    return x + y, x * y


def multi_output_shared(x):
    e = mx.exp(x)
    return e, e * 2, mx.sum(e, axis=-1)


def signed_zero_consts(x):
    return x / 0.0, x / -0.0


def int_mean(i):
    return mx.mean(i, axis=-1), mx.var(i, axis=-1), mx.logsumexp(i, axis=-1)


def large_logsumexp(x):
    return mx.logsumexp(x, axis=-1)


def large_softmax(x):
    return mx.softmax(x, axis=-1)


def reshape_of_transposed(x):
    return mx.reshape((x * 2).T, (-1,)) + 1


def expand_dims_of_row(x):
    y = x * 2
    return y - mx.expand_dims(mx.max(y, axis=-1), -1)


def broadcast_const(x):
    return mx.broadcast_to(1.5, (4, 5)) * x


def transpose_mixed(x):
    return mx.exp(x).T + mx.exp(x.T)


def three_chains(x, z):
    e, s, fz = mx.exp(x), mx.sin(x), mx.floor(z)
    return e * s + fz, z * 0.5


def reduce_reduced(z):
    return mx.sum(mx.max(z, axis=-1, keepdims=True), axis=-1)


def reduce_vector(v):
    return mx.sum(v) * 2 + mx.max(v)


def where_int_scalars(x):
    return mx.where(x > 0, 1, 0)


def prod_bool(x):
    return mx.prod(x > 0, axis=-1)


def half_exp(x):
    return mx.exp(x) * 0.5


def half_sum(x):
    return mx.sum(x, axis=-1)


def half_softmax(x):
    return mx.softmax(x, axis=-1)


def weight_prologue(x, w):  # Gemma's RMSNorm: 1 + w is computed again at each element of the row kernel
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * (1 + w)


def row_prologue(x, c):  # a per-row scale's cheap math, inside the elementwise kernel it feeds
    return x * (mx.abs(c) * 2)


def bfloat_upcast_rmsnorm(x, w):  # as models write it: float32 inside, the weight's cast per element
    xf = x.astype(mx.float32)
    return (xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-5) * w.astype(mx.float32)).astype(x.dtype)


def bfloat_mean(x):
    return mx.mean(x * 2, axis=-1)


HAND = [
    Case("where_scalar", where_scalar, X, specials=True),
    Case("where_bool_input", where_bool_input, (("c", (4, 5), "bool"),) + args((4, 5), (4, 5), names="xy")),
    Case("where_broadcast", where_broadcast, args((4, 1), (3,))),
    Case("clip", clip, X, specials=True),
    Case("broadcast_col_row", broadcast_col_row, args((4, 1), (3,))),
    Case("broadcast_scalar_consts", broadcast_scalar_consts, X, specials=True),
    Case("broadcast_zero_d", broadcast_zero_d, args((), (4, 5), names="sx")),
    Case("power_operator", power_operator, XY, POSITIVE),
    Case("power_int_exponents", power_int_exponents, X, specials=True),
    Case("power_fractional", power_fractional, X, POSITIVE),
    Case("softmax_last", softmax_last, X, specials=True),
    Case("softmax_first", softmax_first, X),
    Case("softmax_all", softmax_all, X),
    Case("softmax_precise", softmax_precise, X),
    Case("var_ddof", var_ddof, X),
    Case("method_reductions", method_reductions, X),
    Case("reshape_flat", reshape_flat, X),
    Case("reshape_infer", reshape_infer, X),
    Case("flatten", flatten, X3),
    Case("transpose_default", transpose_default, X),
    Case("transpose_perm", transpose_perm, X3),
    Case("transpose_attr", transpose_attr, X),
    Case("swapaxes", swapaxes, args((5, 5))),
    Case("expand_dims", expand_dims, args((5,), (4,))),
    Case("squeeze", squeeze, args((4, 1, 5))),
    Case("squeeze_axis", squeeze_axis, args((4, 1, 5))),
    Case("broadcast_to", broadcast_to, args((4, 1))),
    Case("cast_to_half", cast_to_half, X, specials=True),
    Case("cast_half_to_float", cast_half_to_float, args((4, 5), dtype="float16")),
    Case("cast_round_trip", cast_round_trip, X),
    Case("cast_to_bfloat", cast_to_bfloat, X),
    Case("cast_bfloat_to_float", cast_bfloat_to_float, args((4, 5), dtype="bfloat16")),
    Case("cast_bool_to_float", cast_bool_to_float, (("c", (4, 5), "bool"),)),
    Case("cast_float_to_int", cast_float_to_int, X),
    Case("weak_half_times_float", weak_half_times_float, args((4, 5), dtype="float16")),
    Case("weak_bfloat_plus_int", weak_bfloat_plus_int, args((4, 5), dtype="bfloat16")),
    Case("weak_int_plus_int", weak_int_plus_int, (("i", (4, 5), "int32"),)),
    Case("weak_int_times_float", weak_int_times_float, (("i", (4, 5), "int32"),)),
    Case("weak_int_divide", weak_int_divide, (("i", (4, 5), "int32"),)),
    Case("weak_bool_plus_int", weak_bool_plus_int, (("c", (4, 5), "bool"),)),
    Case("weak_reflected", weak_reflected, X),
    Case("operators_arith", operators_arith, XY, specials=True),
    Case("operators_unary", operators_unary, X, specials=True),
    Case("operators_compare", operators_compare, XY, ints=True, specials=True),
    Case("operators_compare_scalar", operators_compare_scalar, X, ints=True),
    Case("operators_logical", operators_logical, (("c", (4, 5), "bool"), ("d", (4, 5), "bool"))),
    Case("multi_output", multi_output, XY),
    Case("multi_output_shared", multi_output_shared, X),
    # programs that exposed library bugs (the tests mark them xfail, with the reason)
    Case("signed_zero_consts", signed_zero_consts, X, specials=True),
    Case("int_mean", int_mean, (("i", (4, 5), "int32"),)),
    Case("large_logsumexp", large_logsumexp, X, (100.0, 1e4)),  # exp(x) alone would overflow
    Case("large_softmax", large_softmax, X, (100.0, 1e4)),
    Case("reshape_of_transposed", reshape_of_transposed, X),
    Case("expand_dims_of_row", expand_dims_of_row, X),
    Case("broadcast_const", broadcast_const, X),
    Case("transpose_mixed", transpose_mixed, X),
    Case("three_chains", three_chains, args((4, 5), (4, 1), names="xz")),
    Case("reduce_reduced", reduce_reduced, args((4, 1), names="z")),
    Case("reduce_vector", reduce_vector, args((7,), names="v")),
    Case("where_int_scalars", where_int_scalars, X),
    Case("prod_bool", prod_bool, X),
    Case("half_exp", half_exp, args((4, 5), dtype="float16")),
    Case("half_sum", half_sum, args((4, 5), dtype="float16")),
    Case("half_softmax", half_softmax, args((4, 5), dtype="float16")),
    Case("bfloat_mean", bfloat_mean, args((4, 5), dtype="bfloat16")),
    Case("weight_prologue", weight_prologue, args((4, 5), (5,), names="xw")),
    Case("row_prologue", row_prologue, args((4, 5), (4, 1), names="xc"), specials=True),
    Case("bfloat_upcast_rmsnorm", bfloat_upcast_rmsnorm, args((4, 5), (5,), names="xw", dtype="bfloat16")),
]

# -- the six ops of config.yaml, at small shapes ---------------------------------------------------

SMALL_DIMS = (7, 3, 5, 11)  # distinct spec sizes, smallest first, become these (odd on purpose)


def small_shapes(specs: Sequence) -> dict[str, tuple[int, ...]]:
    """Replace each distinct dimension of the specs' inputs by a small odd size."""
    sizes = sorted({d for s in specs for d in s.shape})
    small = {d: SMALL_DIMS[k % len(SMALL_DIMS)] for k, d in enumerate(sizes)}
    return {s.name: tuple(small[d] for d in s.shape) for s in specs}


def config_specs() -> dict:
    with open(os.path.join(ROOT, "config.yaml")) as f:
        return parse_ops(yaml.safe_load(f)["ops"])


def _config_cases() -> list[Case]:
    out = []
    for name, spec in config_specs().items():
        shapes = small_shapes(spec.inputs)
        inputs = tuple((i.name, shapes[i.name], i.dtype) for i in spec.inputs)
        ranges = {i.range for i in spec.inputs}
        domain = ranges.pop() if len(ranges) == 1 else None
        out.append(Case(f"config_{name}", spec.function(), inputs, domain))
    return out


CONFIG = _config_cases()
CASES: list[Case] = _unary_cases() + _binary_cases() + _reduction_cases() + HAND + CONFIG
BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES), "case names must be unique"

# -- inputs ----------------------------------------------------------------------------------------

SPECIAL_VALUES = (math.inf, -math.inf, math.nan, -0.0, 0.0)


def make_inputs(case: Case, salt: str = "", specials: bool = False) -> list[np.ndarray]:
    """Deterministic inputs for `case` (seeded from its name), each in its dtype's numpy container.

    With `specials`, the first elements of every float input are inf, -inf, nan, -0.0 and 0.0.
    """
    rng = np.random.default_rng(seed_for("op_table", case.name, salt))
    out = []
    for k, (_, shape, dtype) in enumerate(case.inputs):
        if dtype == "bool":
            out.append(rng.random(shape) < 0.5)
            continue
        if dtype == "int32":
            out.append(rng.integers(-6, 7, size=shape).astype(np.int32))
            continue
        if case.range is not None:
            x = rng.uniform(case.range[0], case.range[1], size=shape)
        elif case.ints:
            x = rng.integers(-2, 3, size=shape).astype(np.float64)
        else:
            x = rng.standard_normal(shape) * 2.0
        if specials and x.size:
            flat = x.reshape(-1)
            vals = np.roll(np.array(SPECIAL_VALUES), k)  # different inputs meet different specials
            n = min(len(vals), flat.size)
            flat[:n] = vals[:n]
            x = flat.reshape(shape)
        out.append(dtypes.round_to(np.asarray(x, dtype=np.float64), dtype).astype(dtypes.to_numpy(dtype)))
    return out


MX_DTYPES = {"float32": mx.float32, "float16": mx.float16, "bfloat16": mx.bfloat16, "int32": mx.int32,
             "bool": mx.bool_}


def to_mx(case: Case, arrays: Sequence[np.ndarray]) -> list:
    return [mx.array(a).astype(MX_DTYPES[dt]) for a, (_, _, dt) in zip(arrays, case.inputs)]


def from_mx(a) -> np.ndarray:
    """An MLX array as numpy (bfloat16, which numpy lacks, widened exactly to float32)."""
    if a.dtype == mx.bfloat16:
        a = a.astype(mx.float32)
    return np.array(a)


def eager(case: Case, arrays: Sequence[np.ndarray]) -> list:
    """The case's function run by MLX itself, as a list of MLX arrays."""
    out = case.fn(*to_mx(case, arrays))
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    mx.eval(out)
    return out


def trace_case(case: Case):
    return trace.trace(case.fn, case.inputs, case.name)


# -- comparison ------------------------------------------------------------------------------------

# Agreement between two evaluations of the same op, relative to the result's magnitude: float32 leaves
# room for libm (a few ulps) and summation order over a few dozen terms; the 16-bit types for about 20
# roundings, since the float64 reference rounds only at casts while MLX rounds after every op.
TOL = {"float32": 1e-5, "float16": 20 * dtypes.EPS["float16"], "bfloat16": 20 * dtypes.EPS["bfloat16"]}


def assert_close(got, ref, dtype: str, what: str = "", scale: float = 1.0) -> None:
    """`got` equals `ref` within the tolerance of `dtype`; NaN and infinities must sit at the same places.

    Non-float results (bool, int32) must be equal."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"

    def check(bad: np.ndarray, kind: str, bound=None) -> None:
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            extra = f" (bound {bound[i]:.3g})" if bound is not None else ""
            raise AssertionError(f"{what}: {kind} at {i} ({int(bad.sum())} in all): got {got[i]!r}, "
                                 f"want {ref[i]!r}{extra}")

    if dtype not in dtypes.FLOATS:
        check(got != ref, "mismatch")
        return
    got, ref = got.astype(np.float64), ref.astype(np.float64)
    check(np.isnan(got) != np.isnan(ref), "NaN mismatch")
    inf = np.isinf(ref) | np.isinf(got)
    check(inf & (got != ref), "infinity mismatch")
    finite = ~np.isnan(ref) & ~inf
    tol = TOL[dtype] * scale
    magnitude = max(1.0, float(np.mean(np.abs(ref[finite])))) if finite.any() else 1.0
    with np.errstate(invalid="ignore"):
        err = np.where(finite, np.abs(got - ref), 0.0)
    bound = tol * np.abs(ref) + tol * magnitude
    check(err > bound, "value off", bound)


def bit_equal(a, b) -> bool:
    """Bit for bit, as far as numpy can tell: equal values, NaN at the same places, zeros of the same sign."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    return bool(np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b)))


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps (0 where both are the same NaN or infinity)."""
    def ordered(x):
        i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    same = (np.isnan(a) & np.isnan(b)) | (a == b)
    return np.where(same, 0, np.abs(ordered(a) - ordered(b)))


def assert_within_ulps(got, want, ulps: int, what: str) -> None:
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    d = ulp_distance(got, want)
    assert d.max(initial=0) <= ulps, f"{what}: {d.max()} ulps apart (bound {ulps})"
