"""Trace an MLX function into GraphIR, the JAX way.

The user's function runs with `mx` bound to a namespace of tracing rules. Each rule checks its
arguments, computes the output shape and dtype, and appends one SSA equation. Anything the tracer
cannot represent raises `TraceError` naming the MLX call and the line of user code. `mx.grad`,
`mx.value_and_grad` and `mx.vjp` inside the function are rules too: the function they differentiate
is traced on its own and its reverse mode (autodiff.vjp) inlined (`_Context.derivative`).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import linecache
import math
import os
import threading
import types
from typing import Any, Callable, Sequence

from . import dtypes
from .graph import Builder, Graph, GraphError, broadcast_shapes, reduced_shape
from .ops import BINARY, PREDICATE, UNARY, Op

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class TraceError(Exception):
    """A function could not be traced; the message names the MLX call and the user's line."""


def user_line() -> str:
    """`file:line: code` of the innermost frame outside this package (the user's code)."""
    frame = inspect.currentframe()
    while frame is not None:
        fname = frame.f_code.co_filename
        if not os.path.abspath(fname).startswith(_PACKAGE_DIR):
            code = linecache.getline(fname, frame.f_lineno).strip()
            return f"{fname}:{frame.f_lineno}: {code}" if code else f"{fname}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


_ACTIVE = threading.local()  # the traces running on this thread, innermost last (_traced)


def _at(ctx: "_Context") -> "_Context":
    """Where an operation on arrays is recorded: the innermost trace running (a function traced for
    mx.grad inside another records there, whatever namespace or array it reaches the op through),
    else the array's own."""
    stack = getattr(_ACTIVE, "stack", None)
    return stack[-1] if stack else ctx


class Tracer:
    """A symbolic array: shape and dtype of one SSA value, with MLX's array methods and operators."""

    __slots__ = ("_ctx", "id", "shape", "dtype")
    __array_priority__ = 1000  # numpy scalars on the left defer to our reflected operators

    def __init__(self, ctx: "_Context", node_id: int):
        self._ctx, self.id = ctx, node_id
        n = ctx.builder.node(node_id)
        self.shape, self.dtype = n.shape, _DtypeName(n.dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    T = property(lambda self: _at(self._ctx).ns.transpose(self))

    def __repr__(self) -> str:
        return f"Tracer(%{self.id}: {self.dtype}{list(self.shape)})"

    def __bool__(self):
        raise TraceError(f"data-dependent Python control flow on a traced array at {user_line()}")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __getitem__(self, key):
        return _at(self._ctx).index(self, key)

    def __getattr__(self, name: str):
        method = _METHODS.get(name)
        if method is None:
            raise TraceError(f"array method .{name} is not supported by the tracer at {user_line()}")
        fn = getattr(_at(self._ctx).ns, method)
        return lambda *a, **k: fn(self, *a, **k)


class _DtypeName(str):
    """A dtype name that also compares equal to the matching `mx.<dtype>` object."""

    def __eq__(self, other):
        return str.__eq__(self, _dtype_name(other)) if not isinstance(other, str) else str.__eq__(self, other)

    __hash__ = str.__hash__


def _dtype_name(d: Any) -> str:
    if isinstance(d, str):
        return dtypes.check(d)
    try:
        return dtypes.from_mlx(d)
    except ValueError:
        raise TraceError(f"unsupported dtype {d!r} at {user_line()}") from None


def _binary_rule(op: Op, swap: bool = False):
    if swap:
        return lambda self, other: _at(self._ctx).binary(op, other, self)
    return lambda self, other: _at(self._ctx).binary(op, self, other)


for _name, _op in {"add": Op.ADD, "sub": Op.SUB, "mul": Op.MUL, "truediv": Op.DIV, "pow": Op.POW}.items():
    setattr(Tracer, f"__{_name}__", _binary_rule(_op))
    setattr(Tracer, f"__r{_name}__", _binary_rule(_op, swap=True))
for _name, _op in {"lt": Op.LT, "le": Op.LE, "gt": Op.GT, "ge": Op.GE, "eq": Op.EQ, "ne": Op.NE,
                   "and": Op.AND, "or": Op.OR}.items():
    setattr(Tracer, f"__{_name}__", _binary_rule(_op))
Tracer.__rand__ = _binary_rule(Op.AND, swap=True)
Tracer.__ror__ = _binary_rule(Op.OR, swap=True)
Tracer.__matmul__ = lambda self, other: _at(self._ctx).matmul(self, other)
Tracer.__rmatmul__ = lambda self, other: _at(self._ctx).matmul(other, self)
Tracer.__neg__ = lambda self: _at(self._ctx).unary(Op.NEG, self)
Tracer.__pos__ = lambda self: self
Tracer.__abs__ = lambda self: _at(self._ctx).unary(Op.ABS, self)
Tracer.__invert__ = lambda self: _at(self._ctx).unary(Op.NOT, self)
Tracer.__hash__ = object.__hash__

_METHODS = {m: m for m in (
    "astype", "reshape", "transpose", "sum", "mean", "max", "min", "prod", "var", "std", "logsumexp",
    "exp", "log", "sqrt", "rsqrt", "square", "abs", "reciprocal", "sin", "cos", "flatten",
    "swapaxes", "squeeze", "broadcast_to", "all", "any", "argmax", "argmin", "cumsum", "cumprod",
    "moveaxis", "split")}

# mx function name -> unary op; every name here is traced by one generic rule.
UNARY_FUNCTIONS = {
    "negative": Op.NEG, "abs": Op.ABS, "square": Op.SQUARE, "sqrt": Op.SQRT, "rsqrt": Op.RSQRT,
    "reciprocal": Op.RECIPROCAL, "exp": Op.EXP, "expm1": Op.EXPM1, "log": Op.LOG, "log1p": Op.LOG1P,
    "tanh": Op.TANH, "sigmoid": Op.SIGMOID, "erf": Op.ERF, "sin": Op.SIN, "cos": Op.COS,
    "floor": Op.FLOOR, "ceil": Op.CEIL, "sign": Op.SIGN, "logical_not": Op.NOT, "isnan": Op.ISNAN,
    "isinf": Op.ISINF,
}
BINARY_FUNCTIONS = {
    "add": Op.ADD, "subtract": Op.SUB, "multiply": Op.MUL, "divide": Op.DIV, "power": Op.POW,
    "maximum": Op.MAX, "minimum": Op.MIN, "equal": Op.EQ, "not_equal": Op.NE, "less": Op.LT,
    "less_equal": Op.LE, "greater": Op.GT, "greater_equal": Op.GE, "logical_and": Op.AND,
    "logical_or": Op.OR,
}
REDUCE_FUNCTIONS = {"sum": Op.SUM, "prod": Op.PROD, "max": Op.RMAX, "min": Op.RMIN, "mean": Op.MEAN,
                    "logsumexp": Op.LOGSUMEXP, "all": Op.ALL, "any": Op.ANY}
assert set(UNARY_FUNCTIONS.values()) | {Op.CAST} == UNARY and set(BINARY_FUNCTIONS.values()) == BINARY
CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan, "newaxis": None}


def const_attr(value: float | int | bool) -> float | int | bool | str:
    """JSON has no inf or NaN: non-finite constants are stored by name."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'inf', '-inf', 'nan'
    return value


class _Context:
    def __init__(self, name: str, parent: "_Context | None" = None):
        self.builder = Builder(name, cse=False)
        self.ns = Namespace(self)
        # a function traced for mx.grad inside another (`derivative`): the arrays of the trace
        # around it that it closes over become inputs of its own, after its arguments
        self.parent, self.captured, self.arguments = parent, {}, 0

    def own(self, t: Tracer) -> int:
        """The id of `t` in this trace: an array of an enclosing trace is captured as an input."""
        if t._ctx is self:
            return t.id
        if self.parent is None:
            raise TraceError(f"an array of another trace at {user_line()}")
        outer = self.parent.own(t)
        if outer not in self.captured:
            self.captured[outer] = self.builder.add(
                Op.INPUT, str(t.dtype), t.shape, (),
                {"name": f"captured{len(self.captured)}", "index": self.arguments + len(self.captured)})
        return self.captured[outer]

    def derivative(self, fun: Callable, args: Sequence[Any], argnums, cotangents=None):
        """mx.grad, mx.value_and_grad and mx.vjp inside a traced function, the JAX way: `fun` traced
        on its own (its Python arguments as constants, the arrays it closes over as inputs),
        canonicalized, its reverse mode written (autodiff.vjp, the outputs beside) and inlined here.
        Returns the outputs and the cotangents of the arguments `argnums`; without `cotangents`, the
        first output (a scalar) is differentiated with cotangent 1 and the others with 0 (mx.grad's)."""
        from .autodiff import NotDifferentiable, vjp
        from .canon import canonicalize

        arrays = [i for i, a in enumerate(args) if isinstance(a, Tracer)]
        for i in argnums:
            if i >= len(args) or i not in arrays:
                raise TraceError(f"mx.grad: argument {i} is not an array at {user_line()}")
        inner = _Context(getattr(fun, "__name__", "fn"), self)
        graph = _traced(inner, fun, [(f"x{i}", args[i].shape, str(args[i].dtype)) for i in arrays],
                        {i: a for i, a in enumerate(args) if i not in arrays})
        forward = canonicalize(graph)
        outs = [forward.nodes[o] for o in forward.outputs]
        if cotangents is None:
            if outs[0].shape != ():
                raise TraceError(f"mx.grad: the function must return a scalar first, not shape "
                                 f"{list(outs[0].shape)} at {user_line()}")
            cotangents = [self.const(1.0 if j == 0 else 0.0, o.dtype) for j, o in enumerate(outs)]
            cotangents = [c if o.shape == () else self.add(Op.BROADCAST, o.dtype, o.shape, [c], {"shape": o.shape})
                          for c, o in zip(cotangents, outs)]
        inputs = [self.own(args[i]) for i in arrays] + list(inner.captured)  # captured: ids here
        try:
            back = vjp(forward, [arrays.index(i) for i in argnums], values=True)
        except NotDifferentiable as e:
            raise TraceError(f"mx.grad: {e} at {user_line()}") from None
        new = self.builder.inline(back, inputs + [self.own(self.lift(c)) for c in cotangents], user_line())
        out = [self.tracer(new[o]) for o in back.outputs]
        return out[:len(outs)], out[len(outs):]

    # -- values ------------------------------------------------------------------------------
    def tracer(self, node_id: int) -> Tracer:
        return Tracer(self, node_id)

    def const(self, value: Any, dtype: str) -> Tracer:
        value = bool(value) if dtype == "bool" else int(value) if dtype == "int32" else float(value)
        return self.tracer(self.builder.add(Op.CONST, dtype, (), (), {"value": const_attr(value)},
                                            user_line()))

    def lift(self, x: Any, like: str | None = None) -> Tracer:
        """A Tracer for `x`; a Python scalar takes the dtype of the array it meets (MLX's weak typing)."""
        if isinstance(x, Tracer):
            return x
        if isinstance(x, (bool, int, float)) or _is_numpy_scalar(x):
            if isinstance(x, bool):
                kind = "bool"
            elif isinstance(x, int) or (hasattr(x, "dtype") and x.dtype.kind in "iu"):
                kind = "int32"
            else:
                kind = "float32"
            dtype = _weak_dtype(kind, like)
            return self.const(x, dtype)
        raise TraceError(f"cannot trace a value of type {type(x).__name__} at {user_line()}")

    def add(self, op: Op, dtype: str, shape, srcs: Sequence[Tracer], attrs: dict | None = None) -> Tracer:
        return self.tracer(self.builder.add(op, dtype, shape, [self.own(s) for s in srcs], attrs, user_line()))

    # -- rules ---------------------------------------------------------------------------------
    def unary(self, op: Op, x: Any) -> Tracer:
        if not isinstance(x, Tracer):
            x = self.lift(x, "float32")  # mx.exp(2.0) is a float32 array
        dtype = "bool" if op in PREDICATE else x.dtype
        if op not in PREDICATE and op not in (Op.NEG, Op.ABS, Op.SQUARE, Op.SIGN, Op.FLOOR, Op.CEIL) \
                and dtype not in dtypes.FLOATS:
            dtype = "float32"  # MLX promotes integer inputs of transcendental functions
        if op is Op.NOT and x.dtype != "bool":
            x = self.cast(x, "bool")
        return self.add(op, dtype, x.shape, [x])

    def binary(self, op: Op, a: Any, b: Any) -> Tracer:
        if not isinstance(a, Tracer) and not isinstance(b, Tracer):
            a = self.lift(a, "float32" if isinstance(a, float) or isinstance(b, float) else None)
        a = self.lift(a, b.dtype if isinstance(b, Tracer) else None)
        b = self.lift(b, a.dtype)
        try:
            shape = broadcast_shapes(a.shape, b.shape)
        except GraphError as e:
            raise TraceError(f"{op.value}: {e} at {user_line()}") from None
        dtype = dtypes.promote(a.dtype, b.dtype)
        if op is Op.DIV and dtype not in dtypes.FLOATS:
            dtype = "float32"
        if op in (Op.AND, Op.OR):
            a, b, dtype = self.cast(a, "bool"), self.cast(b, "bool"), "bool"
        else:
            a, b = self.cast(a, dtype), self.cast(b, dtype)
        return self.add(op, "bool" if op in PREDICATE else dtype, shape, [a, b])

    def where(self, cond: Any, a: Any, b: Any) -> Tracer:
        cond = self.cast(self.lift(cond), "bool")
        if not isinstance(a, Tracer) and not isinstance(b, Tracer):
            a = self.lift(a, "float32" if isinstance(a, float) or isinstance(b, float) else None)
        a = self.lift(a, b.dtype if isinstance(b, Tracer) else None)
        b = self.lift(b, a.dtype)
        try:
            shape = broadcast_shapes(cond.shape, a.shape, b.shape)
        except GraphError as e:
            raise TraceError(f"where: {e} at {user_line()}") from None
        dtype = dtypes.promote(a.dtype, b.dtype)
        return self.add(Op.WHERE, dtype, shape, [cond, self.cast(a, dtype), self.cast(b, dtype)])

    def cast(self, x: Tracer, dtype: str) -> Tracer:
        if x.dtype == dtype:
            return x
        return self.add(Op.CAST, dtype, x.shape, [x], {"dtype": dtype})

    def axes(self, x: Tracer, axis: Any) -> tuple[int, ...]:
        if axis is None:
            return tuple(range(x.ndim))
        axis_list = [axis] if isinstance(axis, int) else list(axis)
        out = []
        for a in axis_list:
            if not isinstance(a, int) or not -x.ndim <= a < max(x.ndim, 1):
                raise TraceError(f"axis {a} is out of range for an array of shape {list(x.shape)} "
                                 f"at {user_line()}")
            out.append(a % x.ndim)
        if len(set(out)) != len(out):
            raise TraceError(f"repeated axis in {axis} at {user_line()}")
        return tuple(sorted(out))

    def reduce(self, op: Op, x: Any, axis: Any = None, keepdims: bool = False, **extra) -> Tracer:
        x = self.lift(x, "float32")
        axes = self.axes(x, axis)
        dtype = x.dtype
        if op in (Op.MEAN, Op.VAR, Op.STD, Op.LOGSUMEXP) and dtype not in dtypes.FLOATS:
            dtype = "float32"
        if op in (Op.SUM, Op.PROD) and dtype == "bool":
            dtype = "int32"
        if op in (Op.ALL, Op.ANY):
            dtype = "bool"
        attrs = {"axes": axes, "keepdims": bool(keepdims), **extra}
        return self.add(op, dtype, reduced_shape(x.shape, axes, bool(keepdims)), [x], attrs)

    def reshape(self, x: Tracer, shape: Sequence[int]) -> Tracer:
        shape = [int(d) for d in shape]
        if shape.count(-1) > 1:
            raise TraceError(f"reshape to {shape}: at most one -1 at {user_line()}")
        if -1 in shape:
            known = math.prod(d for d in shape if d != -1)
            shape[shape.index(-1)] = x.size // known if known else 0
        if math.prod(shape) != x.size:
            raise TraceError(f"cannot reshape {list(x.shape)} to {shape} at {user_line()}")
        if tuple(shape) == x.shape:
            return x
        return self.add(Op.RESHAPE, x.dtype, shape, [x], {"shape": tuple(shape)})

    def matmul(self, a: Any, b: Any) -> Tracer:
        a, b = self.lift(a), self.lift(b)
        try:
            shape = _matmul_shape(a.shape, b.shape)
        except GraphError as e:
            raise TraceError(f"matmul: {e} at {user_line()}") from None
        dtype = dtypes.promote(a.dtype, b.dtype)
        return self.add(Op.MATMUL, dtype, shape, [self.cast(a, dtype), self.cast(b, dtype)])

    def index(self, x: Tracer, key: Any) -> Tracer:
        """Static basic indexing: ints, slices, None and one Ellipsis (a SLICE, then a reshape)."""
        key = key if isinstance(key, tuple) else (key,)
        if any(k is not None and k is not Ellipsis and not isinstance(k, (int, slice)) for k in key):
            raise TraceError(f"only static indexing (ints, slices, None, ...) is supported at {user_line()}")
        if sum(k is Ellipsis for k in key) > 1:
            raise TraceError(f"an index can have only one Ellipsis at {user_line()}")
        used = sum(k is not None and k is not Ellipsis for k in key)
        if used > x.ndim:
            raise TraceError(f"too many indices for an array of shape {list(x.shape)} at {user_line()}")
        if Ellipsis in key:
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (x.ndim - used) + key[at + 1:]
        key = key + (slice(None),) * (x.ndim - used)
        starts, stops, steps, shape, axis = [], [], [], [], 0
        for k in key:
            if k is None:
                shape.append(1)
                continue
            size = x.shape[axis]
            if isinstance(k, int):
                if not -size <= k < size:
                    raise TraceError(f"index {k} is out of bounds for axis {axis} of size {size} at {user_line()}")
                k = k % size
                starts.append(k), stops.append(k + 1), steps.append(1)
            else:
                start, stop, step = k.indices(size)
                starts.append(start), stops.append(stop), steps.append(step)
                shape.append(len(range(start, stop, step)))
            axis += 1
        sliced_shape = tuple(len(range(a, b, c)) for a, b, c in zip(starts, stops, steps))
        out = x
        if (tuple(starts), tuple(stops), tuple(steps)) != ((0,) * x.ndim, x.shape, (1,) * x.ndim):
            out = self.add(Op.SLICE, x.dtype, sliced_shape, [x],
                           {"starts": tuple(starts), "stops": tuple(stops), "steps": tuple(steps)})
        return self.reshape(out, shape)

    def concatenate(self, arrays: Sequence[Any], axis: int) -> Tracer:
        xs = [self.lift(a, "float32") for a in arrays]
        if not xs:
            raise TraceError(f"concatenate of nothing at {user_line()}")
        rank = xs[0].ndim
        axis = axis % rank if rank else 0
        if any(t.ndim != rank or t.shape[:axis] + t.shape[axis + 1:] != xs[0].shape[:axis] + xs[0].shape[axis + 1:]
               for t in xs):
            raise TraceError(f"concatenate: shapes {[list(t.shape) for t in xs]} differ off axis {axis} "
                             f"at {user_line()}")
        dtype = xs[0].dtype
        for t in xs[1:]:
            dtype = dtypes.promote(dtype, t.dtype)
        shape = xs[0].shape[:axis] + (sum(t.shape[axis] for t in xs),) + xs[0].shape[axis + 1:]
        return self.add(Op.CONCATENATE, dtype, shape, [self.cast(t, dtype) for t in xs], {"axis": axis})

    def scan(self, op: Op, x: Any, axis: Any, reverse: bool, inclusive: bool) -> Tracer:
        x = self.lift(x, "float32")
        if axis is None:
            x, axis = self.reshape(x, (x.size,)), 0
        (axis,) = self.axes(x, axis)
        dtype = "int32" if x.dtype == "bool" else x.dtype
        return self.add(op, dtype, x.shape, [self.cast(x, dtype)],
                        {"axis": axis, "reverse": bool(reverse), "inclusive": bool(inclusive)})

    def arg_reduce(self, op: Op, x: Any, axis: Any, keepdims: bool) -> Tracer:
        x = self.lift(x, "float32")
        if axis is None:
            x, axis = self.reshape(x, (x.size,)), 0
        axes = self.axes(x, axis)
        return self.add(op, "uint32", reduced_shape(x.shape, axes, bool(keepdims)), [x],
                        {"axes": axes, "keepdims": bool(keepdims)})

    def take(self, x: Any, indices: Any, axis: Any) -> Tracer:
        x, idx = self.lift(x, "float32"), self.lift(indices, "int32")
        if idx.dtype not in ("int32", "uint32"):
            raise TraceError(f"take: indices must be integers, not {idx.dtype} at {user_line()}")
        if axis is None:
            x, axis = self.reshape(x, (x.size,)), 0
        (axis,) = self.axes(x, axis)
        shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
        return self.add(Op.TAKE, x.dtype, shape, [x, idx], {"axis": axis})

    def take_along_axis(self, x: Any, indices: Any, axis: Any) -> Tracer:
        x, idx = self.lift(x, "float32"), self.lift(indices, "int32")
        if axis is None:
            x, axis = self.reshape(x, (x.size,)), 0
            idx = self.reshape(idx, (idx.size,))
        (axis,) = self.axes(x, axis)
        if idx.ndim != x.ndim:
            raise TraceError(f"take_along_axis: indices of rank {idx.ndim} for an array of rank {x.ndim} "
                             f"at {user_line()}")
        try:
            others = broadcast_shapes(x.shape[:axis] + (1,) + x.shape[axis + 1:],
                                      idx.shape[:axis] + (1,) + idx.shape[axis + 1:])
        except GraphError as e:
            raise TraceError(f"take_along_axis: {e} at {user_line()}") from None
        shape = others[:axis] + (idx.shape[axis],) + others[axis + 1:]
        return self.add(Op.TAKE_ALONG_AXIS, x.dtype, shape, [x, idx], {"axis": axis})

    def transpose(self, x: Tracer, perm: Sequence[int] | None = None) -> Tracer:
        perm = tuple(reversed(range(x.ndim))) if perm is None else tuple(p % x.ndim for p in perm)
        if sorted(perm) != list(range(x.ndim)):
            raise TraceError(f"transpose axes {list(perm)} are not a permutation at {user_line()}")
        if perm == tuple(range(x.ndim)):
            return x
        return self.add(Op.TRANSPOSE, x.dtype, [x.shape[p] for p in perm], [x], {"perm": perm})


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if not a or not b:
        raise GraphError("matmul of a 0-d array")
    a2, b2 = (1,) + a if len(a) == 1 else a, b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise GraphError(f"matmul of {list(a)} and {list(b)}: inner sizes {a2[-1]} and {b2[-2]} differ")
    out = broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _weak_dtype(kind: str, like: str | None) -> str:
    if like is None:
        return kind
    if like in dtypes.FLOATS:
        return like
    if kind == "float32":
        return "float32"
    return like if (like, kind) != ("bool", "int32") else "int32"


def _is_numpy_scalar(x: Any) -> bool:
    return type(x).__module__ == "numpy" and getattr(x, "shape", None) == ()


class Namespace:
    """Stands in for `mlx.core` while a function is traced: one rule per supported MLX function."""

    def __init__(self, ctx: _Context):
        self._home = ctx
        for name, op in UNARY_FUNCTIONS.items():
            setattr(self, name, lambda x, *, stream=None, _op=op: self._ctx.unary(_op, x))
        for name, op in BINARY_FUNCTIONS.items():
            setattr(self, name, lambda a, b, *, stream=None, _op=op: self._ctx.binary(_op, a, b))
        for name, op in REDUCE_FUNCTIONS.items():
            setattr(self, name, lambda x, axis=None, keepdims=False, *, stream=None, _op=op:
                    self._ctx.reduce(_op, x, axis, keepdims))
        for name in dtypes.DTYPES:
            setattr(self, name, name)
        for name, value in CONSTANTS.items():
            setattr(self, name, value)

    @property
    def _ctx(self) -> _Context:
        """The innermost trace running (`_at`): a function traced for mx.grad inside another may
        reach the ops through the outer one's namespace."""
        return _at(self._home)

    def __getattr__(self, name: str):
        import mlx.core as mx_real
        if not hasattr(mx_real, name):
            raise TraceError(f"mx.{name} does not exist in mlx.core at {user_line()}")
        raise TraceError(f"mx.{name} is not supported by the tracer at {user_line()}")

    def grad(self, fun, argnums=0, argnames=()):
        return self._derivative(fun, argnums, argnames, value=False)

    def value_and_grad(self, fun, argnums=0, argnames=()):
        return self._derivative(fun, argnums, argnames, value=True)

    def _derivative(self, fun, argnums, argnames, value: bool):
        if argnames:
            raise TraceError(f"mx.grad with argnames is not supported by the tracer at {user_line()}")
        many = isinstance(argnums, (tuple, list))
        wrt = [int(i) for i in argnums] if many else [int(argnums)]

        def call(*args):
            values, grads = self._ctx.derivative(fun, args, wrt)
            grads = tuple(grads) if many else grads[0]
            if not value:
                return grads
            return (values[0] if len(values) == 1 else tuple(values)), grads
        return call

    def vjp(self, fun, primals, cotangents):
        primals = list(primals)
        return self._ctx.derivative(fun, primals, list(range(len(primals))), list(cotangents))

    def where(self, cond, x, y, *, stream=None):
        return self._ctx.where(cond, x, y)

    def var(self, x, axis=None, keepdims=False, ddof=0, *, stream=None):
        return self._ctx.reduce(Op.VAR, x, axis, keepdims, ddof=int(ddof))

    def std(self, x, axis=None, keepdims=False, ddof=0, *, stream=None):
        return self._ctx.reduce(Op.STD, x, axis, keepdims, ddof=int(ddof))

    def softmax(self, x, axis=None, *, precise=False, stream=None):
        """With `precise`, MLX computes a 16-bit input's softmax in float32 and rounds the result
        back to the input's type once: so does the traced graph."""
        x = self._ctx.lift(x, "float32")
        if precise and x.dtype in ("float16", "bfloat16"):
            return self._ctx.cast(self._softmax(Op.SOFTMAX, self._ctx.cast(x, "float32"), axis), x.dtype)
        return self._softmax(Op.SOFTMAX, x, axis)

    def _softmax(self, op: Op, x, axis):
        x = self._ctx.lift(x, "float32")
        axes = self._ctx.axes(x, axis)
        dtype = x.dtype if x.dtype in dtypes.FLOATS else "float32"
        return self._ctx.add(op, dtype, x.shape, [x], {"axes": axes})

    def matmul(self, a, b, *, stream=None):
        return self._ctx.matmul(a, b)

    def cumsum(self, x, axis=None, *, reverse=False, inclusive=True, stream=None):
        return self._ctx.scan(Op.CUMSUM, x, axis, reverse, inclusive)

    def cumprod(self, x, axis=None, *, reverse=False, inclusive=True, stream=None):
        return self._ctx.scan(Op.CUMPROD, x, axis, reverse, inclusive)

    def argmax(self, x, axis=None, keepdims=False, *, stream=None):
        return self._ctx.arg_reduce(Op.ARGMAX, x, axis, keepdims)

    def argmin(self, x, axis=None, keepdims=False, *, stream=None):
        return self._ctx.arg_reduce(Op.ARGMIN, x, axis, keepdims)

    def concatenate(self, arrays, axis=0, *, stream=None):
        return self._ctx.concatenate(arrays, axis)

    def stack(self, arrays, axis=0, *, stream=None):
        return self._ctx.concatenate([self.expand_dims(a, axis) for a in arrays], axis)

    def split(self, x, indices_or_sections, axis=0, *, stream=None):
        x = self._ctx.lift(x)
        (axis,) = self._ctx.axes(x, axis)
        size = x.shape[axis]
        if isinstance(indices_or_sections, int):
            if size % indices_or_sections:
                raise TraceError(f"split: {size} is not divisible into {indices_or_sections} at {user_line()}")
            step = size // indices_or_sections
            bounds = list(range(step, size, step))
        else:
            bounds = [int(i) for i in indices_or_sections]
        edges = [0] + bounds + [size]
        index = [slice(None)] * x.ndim
        parts = []
        for lo, hi in zip(edges, edges[1:]):
            index[axis] = slice(lo, hi)
            parts.append(self._ctx.index(x, tuple(index)))
        return parts

    def take(self, x, indices, axis=None, *, stream=None):
        return self._ctx.take(x, indices, axis)

    def take_along_axis(self, x, indices, axis=None, *, stream=None):
        return self._ctx.take_along_axis(x, indices, axis)

    def moveaxis(self, x, source, destination, *, stream=None):
        x = self._ctx.lift(x)
        perm = [a for a in range(x.ndim) if a != source % x.ndim]
        perm.insert(destination % x.ndim, source % x.ndim)
        return self._ctx.transpose(x, perm)

    def clip(self, x, a_min, a_max, *, stream=None):
        if a_min is not None:
            x = self._ctx.binary(Op.MAX, x, a_min)
        if a_max is not None:
            x = self._ctx.binary(Op.MIN, x, a_max)
        return x

    def astype(self, x, dtype, *, stream=None):
        return self._ctx.cast(self._ctx.lift(x), _dtype_name(dtype))

    def reshape(self, x, *shape, stream=None):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self._ctx.reshape(self._ctx.lift(x), shape)

    def flatten(self, x, start_axis=0, end_axis=-1, *, stream=None):
        x = self._ctx.lift(x)
        if x.ndim == 0:
            return self._ctx.reshape(x, (1,))
        s, e = start_axis % x.ndim, end_axis % x.ndim
        return self._ctx.reshape(x, x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:])

    def transpose(self, x, *axes, stream=None):
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)
        return self._ctx.transpose(self._ctx.lift(x), axes)

    def swapaxes(self, x, axis1, axis2, *, stream=None):
        x = self._ctx.lift(x)
        perm = list(range(x.ndim))
        perm[axis1 % x.ndim], perm[axis2 % x.ndim] = perm[axis2 % x.ndim], perm[axis1 % x.ndim]
        return self._ctx.transpose(x, perm)

    def expand_dims(self, x, axis, *, stream=None):
        x = self._ctx.lift(x)
        axes = [axis] if isinstance(axis, int) else list(axis)
        rank = x.ndim + len(axes)
        axes = sorted(a % rank for a in axes)
        shape = list(x.shape)
        for a in axes:
            shape.insert(a, 1)
        return self._ctx.reshape(x, shape)

    def squeeze(self, x, axis=None, *, stream=None):
        x = self._ctx.lift(x)
        axes = [i for i, d in enumerate(x.shape) if d == 1] if axis is None else self._ctx.axes(x, axis)
        if any(x.shape[a] != 1 for a in axes):
            raise TraceError(f"squeeze of an axis whose size is not 1 at {user_line()}")
        return self._ctx.reshape(x, [d for i, d in enumerate(x.shape) if i not in axes])

    def broadcast_to(self, x, shape, *, stream=None):
        x = self._ctx.lift(x, "float32")
        shape = tuple(int(d) for d in shape)
        try:
            if broadcast_shapes(x.shape, shape) != shape:
                raise GraphError(f"shape {list(x.shape)} does not broadcast to {list(shape)}")
        except GraphError as e:
            raise TraceError(f"broadcast_to: {e} at {user_line()}") from None
        if shape == x.shape:
            return x
        return self._ctx.add(Op.BROADCAST, x.dtype, shape, [x], {"shape": shape})

    def array(self, value, dtype=None):
        if isinstance(value, Tracer):
            return value if dtype is None else self.astype(value, dtype)
        if isinstance(value, (bool, int, float)):
            kind = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
            return self._ctx.const(value, _dtype_name(dtype) if dtype is not None else kind)
        raise TraceError(f"mx.array of a {type(value).__name__} is not supported at {user_line()}")


# -- entry points ----------------------------------------------------------------------------------


def bind_mx(fn: Callable, ns: Any) -> Callable:
    """A copy of `fn` whose globals see the tracing namespace wherever they held `mlx.core`; the
    functions of its module that it may call (those sharing its globals) are copied onto the same
    globals, so a helper of the user's module traces too."""
    import mlx.core as mx_real

    if isinstance(fn, types.MethodType):  # a bound method: its function rebound, called on its object
        return types.MethodType(bind_mx(fn.__func__, ns), fn.__self__)
    if isinstance(fn, functools.partial):
        return functools.partial(bind_mx(fn.func, ns), *fn.args, **fn.keywords)
    if not isinstance(fn, types.FunctionType):
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType):  # an object whose class defines __call__: that method
            return bind_mx(types.MethodType(call, fn), ns)
        raise TraceError(f"{fn!r} is not a Python function, method or object with a __call__ method: "
                         "nothing to trace")
    module = fn.__globals__
    new_globals = dict(module)
    for key, value in module.items():
        if value is mx_real:
            new_globals[key] = ns
        elif isinstance(value, types.FunctionType) and value.__globals__ is module:
            new_globals[key] = _rebound(value, new_globals)
        elif isinstance(getattr(type(value), "traced_as", None), property):  # an autoperfect.jit: traced
            inner = value.traced_as  # as its function (asked of the type: a global may answer any
            # attribute by raising, as a tracing namespace does)
            new_globals[key] = (_rebound(inner, new_globals) if isinstance(inner, types.FunctionType)
                                and inner.__globals__ is module else bind_mx(inner, ns))
        elif callable(value) and getattr(mx_real, key, None) is value:
            new_globals[key] = getattr(ns, key)  # `from mlx.core import exp`
    new_globals.setdefault("mx", ns)
    return _rebound(fn, new_globals)


def _rebound(fn: types.FunctionType, globals_: dict) -> types.FunctionType:
    bound = types.FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__, fn.__closure__)
    bound.__kwdefaults__ = fn.__kwdefaults__
    return bound


def with_constants(constants: dict[int | str, Any], values: Sequence) -> tuple[list, dict]:
    """A call's positional and keyword arguments: `constants` by position (int) or keyword (str),
    `values` in order at the positions they leave free."""
    fill = iter(values)
    count = len(values) + sum(isinstance(k, int) for k in constants)
    return ([constants[i] if i in constants else next(fill) for i in range(count)],
            {k: v for k, v in constants.items() if isinstance(k, str)})


def trace(fn: Callable, inputs: Sequence[tuple[str, Sequence[int], str]], name: str | None = None,
          constants: dict[int | str, Any] | None = None) -> Graph:
    """Run `fn` on tracer values for `inputs` (name, shape, dtype) and return its GraphIR.

    `constants` are arguments passed as they are, Python values the graph is specialized on: by
    position (int; `inputs` fill the other positions in order) or by keyword (str)."""
    return _traced(_Context(name or getattr(getattr(fn, "func", fn), "__name__", "fn")), fn, inputs, constants)


def _traced(ctx: _Context, fn: Callable, inputs: Sequence[tuple[str, Sequence[int], str]],
            constants: dict[int | str, Any] | None) -> Graph:
    tracers = []
    for index, (arg, shape, dtype) in enumerate(inputs):
        node = ctx.builder.add(Op.INPUT, dtypes.check(dtype), tuple(int(d) for d in shape), (),
                               {"name": arg, "index": index})
        tracers.append(ctx.tracer(node))
    ctx.arguments = len(tracers)
    args, keywords = with_constants(constants or {}, tracers)
    traced = bind_mx(fn, ctx.ns)
    stack = _ACTIVE.__dict__.setdefault("stack", [])
    stack.append(ctx)
    try:
        result = traced(*args, **keywords)
    except TraceError:
        raise
    except Exception as e:  # the user's code failed on tracer values
        if "unsupported operand type" in str(e):
            reached = " (an operator the tracer does not have: the function runs as MLX)"
        elif "Tracer" in str(e) or "trees of arrays" in str(e):
            reached = (" (a traced value reached mlx itself: the tracer follows `mx` in the function's own module "
                       "and that module's functions, not `mlx.core.` spelled out, mlx.nn or another module's helpers)")
        else:
            reached = ""
        raise TraceError(f"{type(e).__name__}: {e} at {_failing_line(e)}{reached}") from e
    finally:
        stack.pop()
    results = result if isinstance(result, (tuple, list)) else (result,)
    outputs = []
    for r in results:
        if not isinstance(r, Tracer):
            raise TraceError(f"the function returned a {type(r).__name__}, not an array "
                             "computed from its inputs")
        outputs.append(ctx.own(r))
    return ctx.builder.build(outputs)


def _failing_line(e: BaseException) -> str:
    tb = e.__traceback__
    last = None
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR):
            last = tb
        tb = tb.tb_next
    if last is None:
        return "<unknown>"
    fname, lineno = last.tb_frame.f_code.co_filename, last.tb_lineno
    return f"{fname}:{lineno}: {linecache.getline(fname, lineno).strip()}"


def function_from_source(source: str, filename: str) -> Callable:
    """Exec spec source (with `mx` in scope) and return the one function it defines."""
    import mlx.core as mx_real

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"mx": mx_real, "__name__": filename, "__builtins__": builtins}
    exec(compile(source, filename, "exec"), namespace)
    fns = [v for v in namespace.values()
           if isinstance(v, types.FunctionType) and v.__code__.co_filename == filename]
    if len(fns) != 1:
        raise ValueError(f"defines {len(fns)} functions; exactly one is expected")
    return fns[0]
