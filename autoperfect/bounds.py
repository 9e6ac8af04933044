"""Error bounds derived from the problem, not tuned: first-order forward error analysis.

Every node gets its float64 value v and a bound e on how far a correct implementation in the node's
dtype may be from v: the sources' errors carried through the op's derivative, plus the op's own
rounding (u|v| for correctly rounded ops, k ulps for a function held to k ulps, n·u·Σ|x| for a sum
of n terms in any order; an approximated function's result below the smallest normal value may
be flushed to zero). Where the dtype overflows or a comparison sits within error of its
threshold, the bound is infinite: the element can't be judged numerically and is counted as such.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import dtypes
from .graph import Graph, Node
from .interp import apply, const_array
from .ops import OPAQUE, PREDICATE, REDUCE, ULP_BOUND, Op

INF = np.inf
FMAX = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0, "bfloat16": 3.3895313892515355e38}
DENORM_MIN = {"float32": 2.0 ** -149, "float16": 2.0 ** -24, "bfloat16": 2.0 ** -133}
# the smallest normal values: below them an approximated function's result may be flushed to zero,
# as MLX's exp does on the CPU (mx.exp(-103.) is 0, not 1.4e-45), and GPU math libraries' fast paths
TINY = {"float32": 2.0 ** -126, "float16": 2.0 ** -14, "bfloat16": 2.0 ** -126}


# What MLX's own functions may be off by beyond ULP_BOUND, for an answer key whose regions MLX may
# compute (propagate's `mlx`: the jit's gate runs every region but the gated kernel's with MLX):
# its exp and sigmoid are off by a share of |x| ulps (on this CPU 1.10|x| beyond 4 ulps and 1.03|x|
# beyond 8 over [-64, 64], 58 at |x| = 64), its erf by an absolute amount (3.65 ulps of 1.0; erf of
# 4e-16 is 0): docs/experiments/2026-12-07l-cpu/mlx_function_ulps.out. Every other function was
# within its ULP_BOUND there.
MLX_ULPS_PER_X = {Op.EXP: 1.25, Op.SIGMOID: 1.25}  # ulps of the result per unit of |x|
MLX_ULPS_OF_ONE = {Op.ERF: 8}  # ulps of 1.0, absolute


def _mlx_allowance(op: Op, a: np.ndarray, v: np.ndarray, u: float) -> np.ndarray | float:
    """What `propagate(mlx=True)` adds to a function's own error (MLX_ULPS_PER_X, MLX_ULPS_OF_ONE)."""
    return 2.0 * u * (MLX_ULPS_PER_X.get(op, 0.0) * np.abs(a) * np.abs(v) + MLX_ULPS_OF_ONE.get(op, 0.0))


def _ulps(op: Op, v: np.ndarray, u: float) -> np.ndarray:
    """k ulps of v; one ulp is at most 2u|v|."""
    return 2.0 * ULP_BOUND[op] * u * np.abs(v)


def _positive_part(a, ea):
    return np.maximum(np.abs(a) - ea, 0.0)


def _elementwise(n: Node, args, errs, v, u) -> np.ndarray:
    op = n.op
    a = args[0]
    ea = errs[0]
    if op in (Op.ADD, Op.SUB):
        return ea + errs[1] + u * np.abs(v)
    if op is Op.MUL:
        b, eb = args[1], errs[1]
        return np.abs(a) * eb + np.abs(b) * ea + ea * eb + u * np.abs(v)
    if op is Op.SQUARE:
        return 2 * np.abs(a) * ea + ea * ea + u * np.abs(v)
    if op in (Op.DIV, Op.RECIPROCAL):
        b, eb = (args[1], errs[1]) if op is Op.DIV else (a, ea)
        num_err = ea if op is Op.DIV else 0.0
        room = np.abs(b) - eb
        return np.where(room > 0, (num_err + np.abs(v) * eb) / np.where(room > 0, room, 1), INF) + u * np.abs(v)
    if op in (Op.NEG, Op.ABS, Op.MAX, Op.MIN):
        return np.maximum(ea, errs[1]) if len(errs) > 1 else ea
    if op is Op.SQRT:
        lo = np.maximum(a - ea, 0.0)
        slope = np.where(lo > 0, ea / (np.sqrt(lo) + np.sqrt(np.maximum(a, 0.0)) + (lo == 0)), np.sqrt(ea))
        return slope + u * np.abs(v)
    if op is Op.RSQRT:
        lo = a - ea
        prop = np.where(lo > 0, 0.5 * ea * np.where(lo > 0, lo, 1) ** -1.5, INF)
        return np.where(ea == 0, 0.0, prop) + _ulps(op, v, u)
    if op is Op.EXP:
        return np.abs(v) * np.expm1(ea) + _ulps(op, v, u)
    if op is Op.EXPM1:
        return np.exp(a + ea) * ea + _ulps(op, v, u)
    if op in (Op.LOG, Op.LOG1P):
        base = a if op is Op.LOG else 1.0 + a
        lo = base - ea
        prop = np.where(lo > 0, -np.log1p(-ea / np.where(base > 0, base, 1)), INF)
        return np.where(ea == 0, 0.0, prop) + _ulps(op, v, u)
    if op is Op.TANH:
        return ea * (1 - np.tanh(_positive_part(a, ea)) ** 2) + _ulps(op, v, u)
    if op is Op.SIGMOID:
        return ea * 0.25 + _ulps(op, v, u)
    if op is Op.ERF:
        return ea * (2 / math.sqrt(math.pi)) + _ulps(op, v, u)
    if op in (Op.SIN, Op.COS):
        return ea + _ulps(op, v, u) + 2 * u  # |derivative| <= 1; results near 0 keep an absolute term
    if op is Op.POW:
        b, eb = args[1], errs[1]
        lo = a - ea
        rel = np.where(lo > 0, np.abs(b) * ea / np.where(lo > 0, lo, 1) + np.abs(np.log(np.abs(a) + (a == 0))) * eb, INF)
        rel = np.where((ea == 0) & (eb == 0), 0.0, rel)
        return np.abs(v) * np.expm1(rel) + _ulps(op, v, u)
    if op in (Op.FLOOR, Op.CEIL, Op.SIGN):
        jump = 2.0 if op is Op.SIGN else 1.0
        return np.where(ea == 0, 0.0, jump + ea)
    if op is Op.WHERE:
        c, x, y = args
        ec, ex, ey = errs
        either = np.maximum(ex, ey) + np.abs(x - y)
        return np.where(ec > 0, either, np.where(c, ex, ey))
    raise NotImplementedError(f"no error rule for {op.value}")


def _predicate(n: Node, args, errs) -> np.ndarray:
    """0 where the boolean is certain, inf where the inputs' error could flip it."""
    op = n.op
    if op in (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE):
        close = np.abs(args[0] - args[1]) <= errs[0] + errs[1]
        return np.where(close & ((errs[0] + errs[1]) > 0), INF, 0.0)
    if op in (Op.ISNAN, Op.ISINF):
        return np.where(np.isfinite(errs[0]), 0.0, INF)
    return np.maximum.reduce([np.broadcast_to(e, n.shape) for e in errs]).astype(np.float64)


def _cast(n: Node, ea: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A cast's bound. To an integer type: exact where its source is, else unbounded (a truncation
    within error of an integer may land on either side). To a float type the reference rounds too
    (rounding is what a cast asks for), so where the source carries error the kernel's value and the
    exact one may lie on either side of a rounding midpoint and round to neighbours a whole ulp
    apart: the source's error plus the rounding of each (at most u|v|, or half the dtype's smallest
    step among subnormals), not one rounding only. A bfloat16 RMSNorm computed in float32 and cast
    back, as models write it, has elements that round so (tests/test_judge.py; counted by
    docs/experiments/2026-12-06e-cpu/rounding.py)."""
    if n.dtype not in dtypes.FLOATS:
        return np.where(ea > 0, INF, 0.0)
    u = dtypes.EPS[n.dtype]
    own = u * np.abs(v)
    return ea * (1 + u) + own + np.where(ea > 0, own + DENORM_MIN[n.dtype], 0.0)


def _reduce(n: Node, x: np.ndarray, ex: np.ndarray, v: np.ndarray, u: float, terms: np.ndarray | None) -> np.ndarray:
    axes, keep = n.attr("axes"), n.attr("keepdims")
    count = math.prod(x.shape[a] for a in axes)
    # Accumulators are at least float32 (as in MLX and every renderer): a 16-bit sum of 4096 terms
    # accumulated in its own type may be off by 16x its size, a bound that would let anything pass.
    # The result is then rounded once to the node's type.
    acc = min(u, dtypes.EPS["float32"])
    if n.op is Op.SUM:
        # any summation order: |error| <= sum of carried errors + count*acc*sum|x_i| + final rounding
        return np.sum(ex, axis=axes, keepdims=keep) + count * acc * terms + (u - acc) * np.abs(v)
    if n.op is Op.PROD:
        rel = np.sum(ex / np.where(x != 0, np.abs(x), 1), axis=axes, keepdims=keep) + count * acc + (u - acc)
        return np.abs(v) * np.expm1(rel)
    # max/min round nothing: the true extreme lies between the extremes of v - e and v + e
    pick = np.max if n.op is Op.RMAX else np.min
    hi = pick(x + ex, axis=axes, keepdims=keep)
    lo = pick(x - ex, axis=axes, keepdims=keep)
    return np.maximum(hi - v, v - lo)


def propagate(graph: Graph, inputs, keep: bool = False,
              mlx: bool = False) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Float64 values and error bounds of the outputs of a canonical graph (of every node, with
    `keep`; without it a node's are dropped after their last reader, `Graph.dead_after`). With
    `mlx`, any function may be MLX's, whose exp, sigmoid and erf are held to wider bounds
    (MLX_ULPS_PER_X, MLX_ULPS_OF_ONE).

    Infinities and NaNs that float64 computes are exact (bound 0: a kernel must reproduce them),
    unless the node's own dtype overflowed on the way, in which case the bound is NaN: anything goes.
    """
    vals: dict[int, np.ndarray] = {}
    errs: dict[int, np.ndarray] = {}
    unsure: dict[int, np.ndarray] = {}
    dead = {} if keep else graph.dead_after()
    with np.errstate(all="ignore"):
        for n in graph.nodes:
            if n.op in (Op.INPUT, Op.CONST):
                v = np.asarray(inputs[n.attr("index")]) if n.op is Op.INPUT else const_array(n, "float64")
                vals[n.id], errs[n.id] = _held(v), np.zeros(n.shape)
                unsure[n.id] = None
                continue
            args = [np.asarray(vals[s], np.float64) for s in n.srcs]  # no copy of a float64 value
            ea = [errs[s] for s in n.srcs]
            held = _held(apply(n, [vals[s] for s in n.srcs], "float64"))
            v = np.asarray(held, np.float64)
            terms = _magnitudes(n, args)
            if n.op in PREDICATE or n.dtype == "bool":
                e = _predicate(n, args, ea)
            elif n.op is Op.CAST:
                e = _cast(n, ea[0], v)
            elif n.op in REDUCE:
                e = _reduce(n, args[0], ea[0], v, dtypes.EPS[n.dtype], terms)
            elif n.op in (Op.RESHAPE, Op.TRANSPOSE, Op.BROADCAST):
                e = apply(n, [np.broadcast_to(ea[0], graph.nodes[n.srcs[0]].shape)], "float64")
            elif n.op in OPAQUE:
                e = _opaque(n, args, ea, v, terms)
            else:
                u = dtypes.EPS[n.dtype]
                e = _elementwise(n, args, ea, v, u) + DENORM_MIN[n.dtype]
                if n.op in ULP_BOUND:  # an approximated function may flush a subnormal result to zero
                    e = e + np.where(np.abs(v) < TINY[n.dtype], np.abs(v), 0.0)
                    if mlx:
                        e = e + _mlx_allowance(n.op, args[0], v, u)
            flag = None  # the elements whose bound is unsure (None: none, the common case)
            for s in n.srcs:
                if unsure[s] is not None:
                    carried = _carried(unsure[s], graph.nodes[s], n)
                    flag = carried if flag is None else flag | carried
            if n.op is Op.MATMUL:  # a BLAS sums in its own order: inf - inf may or may not meet
                bad_a, bad_b = (~np.isfinite(a) for a in args)
                flag = _either(flag, (bad_a.astype(float) @ np.ones(args[1].shape)
                                      + np.ones(args[0].shape) @ bad_b.astype(float)) > 0)
            if n.dtype in FMAX:
                # past the dtype's largest finite value a correct kernel may hold inf
                flag = _either(flag, _past(v, e, FMAX[n.dtype]))
                if terms is not None:
                    flag = _either(flag, _partials_overflow(n, terms, v))
            if not (np.shape(e) == n.shape and np.asarray(e).dtype == np.float64 and np.isfinite(np.sum(v))
                    and not np.isnan(np.sum(e))):
                e = np.where(np.isfinite(v), np.where(np.isnan(e), INF, e), 0.0)
            # (else every value is finite and no bound NaN: a sum is NaN or infinite where a term is)
            vals[n.id], unsure[n.id] = held, None if flag is None else np.broadcast_to(flag, n.shape)
            e = np.broadcast_to(e, n.shape)
            errs[n.id] = e if flag is None else np.where(unsure[n.id], np.nan, e)
            for s in dead.get(n.id, ()):
                del vals[s], errs[s], unsure[s]
    return vals, errs


def _either(flag: np.ndarray | None, more: np.ndarray | None) -> np.ndarray | None:
    return more if flag is None else flag if more is None else flag | more


def _past(v: np.ndarray, e: np.ndarray, fmax: float) -> np.ndarray | None:
    """Where a finite value and its finite bound together pass `fmax`; None where the largest
    magnitude and the largest bound together do not (rounding is monotonic: no element then can),
    so most nodes take one pass over each instead of five."""
    top = max(np.max(v, initial=-INF), -np.min(v, initial=INF))
    if top + np.max(e, initial=0.0) <= fmax:  # False where either holds a NaN or an infinity
        return None
    return np.isfinite(v) & (np.abs(v) + np.where(np.isfinite(e), e, 0.0) > fmax)


def _magnitudes(n: Node, args) -> np.ndarray | None:
    """The sum of its terms' magnitudes, for a sum (Σ|x|) or a matmul (|a| @ |b|); None elsewhere."""
    if n.op is Op.MATMUL:
        return np.abs(args[0]) @ np.abs(args[1])
    if n.op is Op.SUM:
        return np.sum(np.abs(args[0]), axis=n.attr("axes"), keepdims=n.attr("keepdims"))
    return None


def _partials_overflow(n: Node, terms: np.ndarray | None, v: np.ndarray) -> np.ndarray:
    """Where a sum in some order may pass the largest finite value on the way although the sum
    itself is finite: its terms' magnitudes (`_magnitudes`) add up past it, so partial sums can
    overflow before the terms that cancel them come (a matmul's row of 0.9x float32's largest
    values against a column of ones and minus ones took MLX's float32 matmul to -inf where float64
    held -1.5e38). A reduction accumulates in float32 at least (`_reduce`); a matmul, which MLX
    runs, in its type."""
    if terms is None:
        return np.zeros(np.shape(v), bool)
    return np.isfinite(v) & (terms > FMAX["float32" if n.op is Op.SUM else n.dtype])


def _held(value) -> np.ndarray:
    """Values as the interpreter holds them: floats in float64; integers and booleans as they are
    (indices must stay integers)."""
    value = np.asarray(value)
    return value if value.dtype.kind in "iub" else np.asarray(value, np.float64)


def _opaque(n: Node, args, errs, v: np.ndarray, terms: np.ndarray | None) -> np.ndarray:
    """Bounds for what MLX runs between kernels (matmul, scans, indexing)."""
    u = dtypes.EPS.get(n.dtype, 0.0)
    if n.op is Op.MATMUL:  # k products summed in any order, like a sum of k terms
        (a, b), (ea, eb) = args, [np.broadcast_to(e, x.shape) for e, x in zip(errs, args)]
        k = a.shape[-1]
        # terms: |a| @ |b|; a product below the normal range rounds to the subnormals' spacing, an
        # absolute error no relative term covers (tiny inputs: MLX's matmul 2 spacings from float64's)
        return np.abs(a) @ eb + ea @ np.abs(b) + ea @ eb + k * u * terms + k * DENORM_MIN.get(n.dtype, 0.0)
    if n.op in (Op.CUMSUM, Op.CUMPROD):
        x, ex = args[0], np.broadcast_to(errs[0], args[0].shape)
        count = x.shape[n.attr("axis")]
        if n.op is Op.CUMSUM:
            return apply(n, [ex], "float64") + count * u * apply(n, [np.abs(x)], "float64")
        rel = apply(replace(n, op=Op.CUMSUM), [ex / np.where(x != 0, np.abs(x), 1)], "float64")
        return np.abs(v) * np.expm1(rel + count * u)
    if n.op in (Op.ARGMAX, Op.ARGMIN):  # exact unless another element could be the extreme
        x, ex = args[0], np.broadcast_to(errs[0], args[0].shape)
        (axis,) = n.attr("axes")
        sign = 1.0 if n.op is Op.ARGMAX else -1.0
        floor = np.max(sign * x - ex, axis=axis, keepdims=True)
        rivals = np.sum(sign * x + ex >= floor, axis=axis, keepdims=n.attr("keepdims"))
        return np.where(rivals > 1, INF, 0.0)
    moved = [np.broadcast_to(errs[0], args[0].shape)] + [a.astype(np.int64) for a in args[1:]]  # indices
    if n.op is Op.CONCATENATE:
        moved = [np.broadcast_to(e, a.shape) for e, a in zip(errs, args)]
    return apply(n, moved, "float64")  # slicing and gathers move values, and their errors, exactly


def _carried(flag: np.ndarray, src: Node, n: Node) -> np.ndarray:
    """A source's unsure elements, as seen by node n (reductions spread them over their row)."""
    if n.op in OPAQUE:
        return np.broadcast_to(np.any(flag), n.shape)  # conservative: any doubt anywhere spreads
    if n.op in REDUCE:
        return np.any(flag, axis=n.attr("axes"), keepdims=n.attr("keepdims"))
    if n.op in (Op.RESHAPE, Op.TRANSPOSE, Op.BROADCAST):
        return apply(n, [np.broadcast_to(flag, src.shape)], "float64").astype(bool)
    return flag
