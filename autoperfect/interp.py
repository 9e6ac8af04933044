"""Reference interpreters for GraphIR.

`evaluate(graph, inputs, "float64")` is the answer key: every floating value is held in float64 (a
cast to a narrower type still rounds, because rounding is what the op asks for). `"native"` computes
each step in the node's own dtype, rounding after every op, the way an unfused kernel would.
`run_mlx` evaluates a graph with MLX itself (used for the parts of an op left to MLX).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from . import dtypes
from .graph import Graph, Node
from .ops import OPAQUE, Op

_erf = np.frompyfunc(math.erf, 1, 1)


def _sign(x):
    return np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype)  # as MLX: sign(NaN) is 0


def _sigmoid(x):
    # exp of a large positive argument overflows to inf: 1/(1+inf) = 0, the correct limit
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _power(x, y):
    """C's pow (and MLX's): numpy takes x**0.5 for sqrt(x), which gives NaN at -inf and -0 at -0,
    where pow gives +inf and +0 (C99 F.9.4.4)."""
    out = np.power(x, y)
    half = np.asarray(y) == 0.5
    if half.any():
        out = np.where(half & (x == -np.inf), np.inf, np.where(half & (x == 0), 0.0, out)).astype(out.dtype)
    return out


UNARY: dict[Op, Callable] = {
    Op.NEG: np.negative, Op.ABS: np.abs, Op.SQUARE: np.square, Op.SQRT: np.sqrt,
    Op.RSQRT: lambda x: 1.0 / np.sqrt(x), Op.RECIPROCAL: lambda x: 1.0 / x, Op.EXP: np.exp,
    Op.EXPM1: np.expm1, Op.LOG: np.log, Op.LOG1P: np.log1p, Op.TANH: np.tanh, Op.SIGMOID: _sigmoid,
    Op.ERF: lambda x: np.asarray(_erf(x), np.float64).astype(x.dtype), Op.SIN: np.sin, Op.COS: np.cos, Op.FLOOR: np.floor,
    Op.CEIL: np.ceil, Op.SIGN: _sign, Op.NOT: np.logical_not, Op.ISNAN: np.isnan, Op.ISINF: np.isinf,
}
BINARY: dict[Op, Callable] = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide, Op.POW: _power,
    Op.MAX: np.maximum, Op.MIN: np.minimum, Op.EQ: np.equal, Op.NE: np.not_equal, Op.LT: np.less,
    Op.LE: np.less_equal, Op.GT: np.greater, Op.GE: np.greater_equal, Op.AND: np.logical_and,
    Op.OR: np.logical_or,
}
REDUCE: dict[Op, Callable] = {Op.SUM: np.sum, Op.PROD: np.prod, Op.RMAX: np.max, Op.RMIN: np.min}


def _container(dtype: str, mode: str):
    if mode == "float64" and dtype in dtypes.FLOATS:
        return np.float64
    if dtype in ("float16", "bfloat16"):
        return np.float32  # computed in float32, then rounded to the 16-bit type
    return dtypes.to_numpy(dtype)


def _finish(value, node: Node, mode: str) -> np.ndarray:
    value = np.asarray(value)
    if node.dtype in dtypes.FLOATS:
        if mode == "native" and node.dtype != "float32":
            value = dtypes.round_to(value.astype(np.float32), node.dtype).astype(np.float32)
        else:
            value = value.astype(_container(node.dtype, mode), copy=False)
    else:
        value = value.astype(dtypes.to_numpy(node.dtype), copy=False)
    return np.broadcast_to(value, node.shape) if value.shape != node.shape else value


def const_value(node: Node) -> float | int | bool:
    """The constant as written (a Python scalar); non-finite values are stored by name."""
    v = node.attr("value")
    return float(v) if isinstance(v, str) else v


def const_array(node: Node, mode: str) -> np.ndarray:
    """The constant's value as the program uses it: rounded to its dtype, in both modes."""
    v = const_value(node)
    if node.dtype in dtypes.FLOATS:
        return np.asarray(dtypes.round_to(np.float64(v), node.dtype), dtype=_container(node.dtype, mode))
    return np.asarray(v, dtype=dtypes.to_numpy(node.dtype))


def _stable_logsumexp(x, axes, keepdims):
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    s = np.sum(np.exp(x - m), axis=axes, keepdims=True)
    with np.errstate(divide="ignore"):
        out = np.log(s) + m
    return out if keepdims else np.squeeze(out, axis=axes)


def slices(node: Node) -> tuple[slice, ...]:
    """A SLICE node's index (a normalized negative stop means "past the front", not "from the end")."""
    return tuple(slice(a, b if b >= 0 else None, c)
                 for a, b, c in zip(node.attr("starts"), node.attr("stops"), node.attr("steps")))


def _scan(node: Node, x: np.ndarray) -> np.ndarray:
    axis = node.attr("axis")
    step, unit = (np.cumsum, 0) if node.op is Op.CUMSUM else (np.cumprod, 1)
    if node.attr("reverse"):
        x = np.flip(x, axis)
    out = step(x, axis=axis)
    if not node.attr("inclusive"):  # shift by one: the first element is the identity
        first = np.full_like(np.take(out, [0], axis=axis), unit)
        out = np.concatenate([first, np.delete(out, -1, axis=axis)], axis=axis)
    return np.flip(out, axis) if node.attr("reverse") else out


def _opaque(node: Node, args: Sequence[np.ndarray], cont) -> np.ndarray:
    """The ops fusion leaves to MLX, in numpy."""
    op = node.op
    floats = [a.astype(cont, copy=False) if a.dtype.kind == "f" and node.dtype in dtypes.FLOATS else a
              for a in args]
    if op is Op.MATMUL:
        return np.matmul(*floats)
    if op in (Op.CUMSUM, Op.CUMPROD):
        return _scan(node, floats[0])
    if op in (Op.ARGMAX, Op.ARGMIN):
        (axis,) = node.attr("axes")
        out = (np.argmax if op is Op.ARGMAX else np.argmin)(args[0], axis=axis)
        return np.expand_dims(out, axis) if node.attr("keepdims") else out
    if op is Op.SLICE:
        return args[0][slices(node)]
    if op is Op.CONCATENATE:
        return np.concatenate(floats, axis=node.attr("axis"))
    if op is Op.TAKE:
        return np.take(floats[0], args[1], axis=node.attr("axis"))
    shape = list(np.broadcast_shapes(args[0].shape, args[1].shape))
    shape[node.attr("axis")] = args[1].shape[node.attr("axis")]
    idx = np.broadcast_to(args[1], shape)
    data_shape = list(shape)
    data_shape[node.attr("axis")] = args[0].shape[node.attr("axis")]
    return np.take_along_axis(np.broadcast_to(floats[0], data_shape), idx, axis=node.attr("axis"))


def apply(node: Node, args: Sequence[np.ndarray], mode: str) -> np.ndarray:
    """One node's value from its sources' values, in `mode` ("float64" or "native")."""
    op = node.op
    cont = _container(node.dtype, mode)
    with np.errstate(all="ignore"):
        if op in OPAQUE:
            return _finish(_opaque(node, args, cont), node, mode)
        if op in (Op.ALL, Op.ANY):
            reduce = np.all if op is Op.ALL else np.any
            return _finish(reduce(args[0] != 0, axis=node.attr("axes"), keepdims=node.attr("keepdims")), node,
                           mode)
        if op is Op.CAST:
            x = args[0]
            if node.dtype in dtypes.FLOATS:
                value = dtypes.round_to(x, node.dtype) if node.dtype != "float32" or mode == "native" \
                    else np.asarray(x, np.float64).astype(np.float32)
            elif node.dtype == "bool":
                value = x != 0
            else:  # float -> int truncates toward zero, like C
                value = np.trunc(np.nan_to_num(x)).astype(np.int64)
            return _finish(value, node, mode)
        if op in UNARY:
            x = args[0]
            if x.dtype.kind == "f" or op in (Op.NOT, Op.ISNAN, Op.ISINF):
                x = x.astype(cont, copy=False) if node.dtype in dtypes.FLOATS else x
            else:
                x = x.astype(cont, copy=False)
            return _finish(UNARY[op](x), node, mode)
        if op in BINARY:
            a, b = args
            if node.dtype in dtypes.FLOATS:
                a, b = a.astype(cont, copy=False), b.astype(cont, copy=False)
            return _finish(BINARY[op](a, b), node, mode)
        if op is Op.WHERE:
            c, a, b = args
            return _finish(np.where(c, a.astype(cont, copy=False), b.astype(cont, copy=False)), node, mode)
        axes = node.attr("axes")
        keep = node.attr("keepdims")
        x = args[0].astype(cont, copy=False) if node.dtype in dtypes.FLOATS else args[0]
        if op in REDUCE:
            if x.dtype == np.bool_:
                x = x.astype(np.int64)
            return _finish(REDUCE[op](x, axis=axes, keepdims=keep), node, mode)
        if op is Op.MEAN:
            return _finish(np.sum(x, axis=axes, keepdims=keep) / _count(x.shape, axes), node, mode)
        if op in (Op.VAR, Op.STD):
            n = _count(x.shape, axes)
            mean = np.sum(x, axis=axes, keepdims=True) / n
            var = np.sum(np.square(x - mean), axis=axes, keepdims=keep) / max(n - node.attr("ddof"), 0)
            return _finish(np.sqrt(var) if op is Op.STD else var, node, mode)
        if op is Op.LOGSUMEXP:
            return _finish(_stable_logsumexp(x, axes, keep), node, mode)
        if op is Op.LOG_SOFTMAX:
            return _finish(x - _stable_logsumexp(x, axes, True), node, mode)
        if op is Op.SOFTMAX:  # as MLX: exp(x - max) / sum, so a row holding +inf is all NaN
            e = np.exp(x - np.max(x, axis=axes, keepdims=True))
            return _finish(e / np.sum(e, axis=axes, keepdims=True), node, mode)
        if op is Op.RESHAPE:
            return np.reshape(args[0], node.shape)
        if op is Op.TRANSPOSE:
            return np.transpose(args[0], node.attr("perm"))
        if op is Op.BROADCAST:
            return np.broadcast_to(args[0], node.shape)
    raise NotImplementedError(f"interpreter has no rule for {op.value}")


def _count(shape, axes) -> int:
    return math.prod(shape[a] for a in axes)


def evaluate(graph: Graph, inputs: Sequence[np.ndarray], mode: str = "float64",
             keep: bool = False) -> list[np.ndarray] | dict[int, np.ndarray]:
    """Values of the graph's outputs (or of every node, with `keep`) for the given inputs. Without
    `keep` a value is dropped after its last reader (`Graph.dead_after`): the float64 answer to a
    large graph holds its live values only."""
    if mode not in ("float64", "native"):
        raise ValueError(f"unknown mode {mode!r}")
    values: dict[int, np.ndarray] = {}
    dead = {} if keep else graph.dead_after()
    for node in graph.nodes:
        if node.op is Op.INPUT:
            x = np.asarray(inputs[node.attr("index")])
            values[node.id] = x.astype(_container(node.dtype, mode), copy=False)
        elif node.op is Op.CONST:
            values[node.id] = const_array(node, mode)
        else:
            values[node.id] = apply(node, [values[s] for s in node.srcs], mode)
        for s in dead.get(node.id, ()):
            del values[s]
    if keep:
        return values
    return [values[o] for o in graph.outputs]


# -- MLX execution ---------------------------------------------------------------------------------


def _mlx_table():
    import mlx.core as mx

    unary = {Op.NEG: mx.negative, Op.ABS: mx.abs, Op.SQUARE: mx.square, Op.SQRT: mx.sqrt,
             Op.RSQRT: mx.rsqrt, Op.RECIPROCAL: mx.reciprocal, Op.EXP: mx.exp, Op.EXPM1: mx.expm1,
             Op.LOG: mx.log, Op.LOG1P: mx.log1p, Op.TANH: mx.tanh, Op.SIGMOID: mx.sigmoid,
             Op.ERF: mx.erf, Op.SIN: mx.sin, Op.COS: mx.cos, Op.FLOOR: mx.floor, Op.CEIL: mx.ceil,
             Op.SIGN: mx.sign, Op.NOT: mx.logical_not, Op.ISNAN: mx.isnan, Op.ISINF: mx.isinf}
    binary = {Op.ADD: mx.add, Op.SUB: mx.subtract, Op.MUL: mx.multiply, Op.DIV: mx.divide,
              Op.POW: mx.power, Op.MAX: mx.maximum, Op.MIN: mx.minimum, Op.EQ: mx.equal,
              Op.NE: mx.not_equal, Op.LT: mx.less, Op.LE: mx.less_equal, Op.GT: mx.greater,
              Op.GE: mx.greater_equal, Op.AND: mx.logical_and, Op.OR: mx.logical_or}
    reduce = {Op.SUM: mx.sum, Op.PROD: mx.prod, Op.RMAX: mx.max, Op.RMIN: mx.min, Op.MEAN: mx.mean,
              Op.LOGSUMEXP: mx.logsumexp}
    return mx, unary, binary, reduce


def mlx_apply(node: Node, args: list):
    mx, unary, binary, reduce = _mlx_table()
    op = node.op
    if op is Op.CONST:
        return mx.array(const_value(node), dtype=dtypes.to_mlx(node.dtype))
    if op is Op.CAST:
        return args[0].astype(dtypes.to_mlx(node.dtype))
    if op in unary:
        return unary[op](*args)
    if op in binary:
        return binary[op](*args)
    if op is Op.WHERE:
        return mx.where(*args)
    if op in reduce:
        return reduce[op](args[0], axis=list(node.attr("axes")), keepdims=node.attr("keepdims"))
    if op is Op.VAR:
        return mx.var(args[0], axis=list(node.attr("axes")), keepdims=node.attr("keepdims"), ddof=node.attr("ddof"))
    if op is Op.STD:
        return mx.std(args[0], axis=list(node.attr("axes")), keepdims=node.attr("keepdims"), ddof=node.attr("ddof"))
    if op is Op.SOFTMAX:
        return mx.softmax(args[0], axis=list(node.attr("axes")))
    if op is Op.LOG_SOFTMAX:
        x = args[0]
        return x - mx.logsumexp(x, axis=list(node.attr("axes")), keepdims=True)
    if op is Op.RESHAPE:
        return mx.reshape(args[0], node.shape)
    if op is Op.TRANSPOSE:
        return mx.transpose(args[0], node.attr("perm"))
    if op is Op.BROADCAST:
        return mx.broadcast_to(args[0], node.shape)
    return _mlx_opaque(mx, node, args)


def _mlx_opaque(mx, node: Node, args: list):
    op = node.op
    if op in (Op.ALL, Op.ANY):
        return (mx.all if op is Op.ALL else mx.any)(args[0], axis=list(node.attr("axes")),
                                                     keepdims=node.attr("keepdims"))
    if op is Op.MATMUL:
        return mx.matmul(*args)
    if op in (Op.CUMSUM, Op.CUMPROD):
        scan = mx.cumsum if op is Op.CUMSUM else mx.cumprod
        return scan(args[0], axis=node.attr("axis"), reverse=node.attr("reverse"), inclusive=node.attr("inclusive"))
    if op in (Op.ARGMAX, Op.ARGMIN):
        (axis,) = node.attr("axes")
        return (mx.argmax if op is Op.ARGMAX else mx.argmin)(args[0], axis=axis, keepdims=node.attr("keepdims"))
    if op is Op.SLICE:
        return args[0][slices(node)]
    if op is Op.CONCATENATE:
        return mx.concatenate(args, axis=node.attr("axis"))
    if op is Op.TAKE:
        return mx.take(args[0], args[1], axis=node.attr("axis"))
    if op is Op.TAKE_ALONG_AXIS:
        return mx.take_along_axis(args[0], args[1], axis=node.attr("axis"))
    raise NotImplementedError(f"no MLX rule for {op.value}")


def run_mlx(graph: Graph, inputs: Sequence) -> list:
    """The graph's outputs computed by MLX ops, lazily (the caller evaluates)."""
    values: dict[int, object] = {}
    for node in graph.nodes:
        if node.op is Op.INPUT:
            values[node.id] = inputs[node.attr("index")]
        else:
            values[node.id] = mlx_apply(node, [values[s] for s in node.srcs])
    return [values[o] for o in graph.outputs]
