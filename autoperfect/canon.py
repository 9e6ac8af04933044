"""Canonicalization: GraphIR -> GraphIR over primitive ops only.

Each pass is a pure function graph -> graph. Rewrites are small rules with a one-line reason, applied
by one driver (`rewrite`) that rebuilds the graph in SSA order with common subexpressions shared.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from . import dtypes
from .graph import Builder, Graph, Node, reduced_shape, validate
from .interp import apply, const_array
from .ops import COMPOSITE, ELEMENTWISE, PREDICATE, REDUCE, Op
from .trace import const_attr


class Emitter:
    """What a rule may do: add nodes to the graph being rebuilt (sources are new ids)."""

    def __init__(self, builder: Builder, old: Node):
        self.b, self.old = builder, old

    def node(self, i: int) -> Node:
        return self.b.node(i)

    def emit(self, op: Op, srcs, dtype: str | None = None, shape=None, **attrs) -> int:
        srcs = list(srcs)
        if shape is None:
            from .graph import broadcast_shapes
            shape = broadcast_shapes(*(self.node(s).shape for s in srcs))
        if dtype is None:  # predicates are bool; where takes its branches' type; the rest their source's
            dtype = "bool" if op in PREDICATE else self.node(srcs[1 if op is Op.WHERE else 0]).dtype
        return self.b.add(op, dtype, shape, srcs, attrs, self.old.loc)

    def const(self, value, dtype: str, **attrs) -> int:
        return self.b.add(Op.CONST, dtype, (), (), {"value": const_attr(value), **attrs}, self.old.loc)

    def count(self, x: int, axes, dtype: str, minus: int = 0) -> int:
        """The number of elements reduced over `axes`, less `minus`: marked so a kernel can read it
        from its launch sizes instead of baking in today's shape."""
        n = math.prod(self.node(x).shape[a] for a in axes)
        return self.const(max(n - minus, 0), dtype, size_of=tuple(axes), minus=minus)

    def cast(self, x: int, dtype: str) -> int:
        return self.b.add(Op.CAST, dtype, self.node(x).shape, [x], {"dtype": dtype}, self.old.loc)

    def reduce(self, op: Op, x: int, axes, keepdims: bool) -> int:
        """One reduction per axis, innermost first: every kernel then reduces one axis (the last
        one in parallel over rows), and the sizes a kernel divides by stay per-axis. A 16-bit sum or
        product over several axes keeps its partial results in float32 (`widened`), as MLX's one
        reduction accumulates, and rounds once."""
        shape = self.node(x).shape
        x, narrow = self.widened(x, len(axes) > 1 and op in (Op.SUM, Op.PROD))
        for a in sorted(axes, reverse=True):
            x = self.emit(op, [x], shape=reduced_shape(self.node(x).shape, (a,), True), axes=(a,), keepdims=True)
        x = self.cast(x, narrow) if narrow else x
        return x if keepdims else self.drop_axes(x, reduced_shape(shape, axes, False))

    def widened(self, x: int, several: bool) -> tuple[int, str | None]:
        """`x` in float32 where it is a 16-bit float whose reduction is split over `several` axes
        (with the type to round back to), else `x` as it is: rounded to 16 bits between the axes, a
        bfloat16 sum of rows that cancel (65281 and -65280, each row rounded) lost the whole result."""
        dtype = self.node(x).dtype
        if several and dtype in ("float16", "bfloat16"):
            return self.cast(x, "float32"), dtype
        return x, None

    def drop_axes(self, x: int, shape) -> int:
        shape = tuple(shape)
        if self.node(x).shape == shape:
            return x
        return self.b.add(Op.RESHAPE, self.node(x).dtype, shape, [x], {"shape": shape}, self.old.loc)


# A rule gets the emitter, the node being rewritten and its (already rewritten) sources; it returns
# the id that replaces the node, or None to keep the node as it is.
Rule = Callable[[Emitter, Node, list], Optional[int]]


def rewrite(graph: Graph, rules: list[Rule], cse: bool = True) -> Graph:
    """Rebuild `graph`, offering every node to each rule in order; the first that answers wins."""
    b = Builder(graph.name, cse=cse)
    new: dict[int, int] = {}
    for node in graph.nodes:
        srcs = [new[s] for s in node.srcs]
        e = Emitter(b, node)
        for rule in rules:
            out = rule(e, node, srcs)
            if out is not None:
                break
        else:
            out = b.add(node.op, node.dtype, node.shape, srcs, dict(node.attrs), node.loc)
        new[node.id] = out
    return b.build(new[o] for o in graph.outputs)


# -- decomposition: composite ops -> primitives, in numerically stable forms -------------------------


def _mean(e: Emitter, x: int, axes, keepdims: bool) -> int:
    # sum / n per axis: dividing by n rounds once (multiplying by 1/n rounds twice), and a mean of
    # means keeps every divisor one axis's size, which a size-generic kernel reads at launch
    shape = e.node(x).shape
    x, narrow = e.widened(x, len(axes) > 1)
    for a in sorted(axes, reverse=True):
        s = e.reduce(Op.SUM, x, (a,), True)
        x = e.emit(Op.DIV, [s, e.count(x, (a,), e.node(s).dtype)])
    x = e.cast(x, narrow) if narrow else x
    return x if keepdims else e.drop_axes(x, reduced_shape(shape, axes, False))


def _var(e: Emitter, x: int, axes, keepdims: bool, ddof: int) -> int:
    # two passes, mean((x - mean)^2): the one-pass E[x^2] - E[x]^2 cancels catastrophically
    d = e.emit(Op.SUB, [x, _mean(e, x, axes, True)])
    if ddof == 0:
        return _mean(e, e.emit(Op.MUL, [d, d]), axes, keepdims)
    ss = e.reduce(Op.SUM, e.emit(Op.MUL, [d, d]), axes, keepdims)
    return e.emit(Op.DIV, [ss, e.count(x, axes, e.node(ss).dtype, minus=ddof)])


def _lse(e: Emitter, x: int, axes, keepdims: bool) -> int:
    # subtract the max so exp never overflows; an infinite max is replaced by 0 so inf - inf can't occur
    m = e.reduce(Op.RMAX, x, axes, True)
    dt = e.node(m).dtype
    safe = e.emit(Op.WHERE, [e.emit(Op.ISINF, [m], dtype="bool"), e.const(0.0, dt), m])
    s = e.reduce(Op.SUM, e.emit(Op.EXP, [e.emit(Op.SUB, [x, safe])]), axes, True)
    out = e.emit(Op.ADD, [e.emit(Op.LOG, [s]), safe])
    return out if keepdims else e.drop_axes(out, e.old.shape)


def decompose(e: Emitter, node: Node, srcs: list) -> int | None:
    """mean, var, std, logsumexp, softmax and log_softmax become sums, maxes and elementwise ops."""
    if node.op not in COMPOSITE:
        return None
    x, axes = srcs[0], node.attr("axes")
    if node.op in (Op.ALL, Op.ANY):
        # the min (all) or max (any) of 0/1 values, as float so every backend's reductions apply
        truth = x if e.node(x).dtype == "bool" else e.emit(Op.NE, [x, e.const(0, e.node(x).dtype)])
        found = e.reduce(Op.RMIN if node.op is Op.ALL else Op.RMAX, e.cast(truth, "float32"), axes,
                         node.attr("keepdims"))
        return e.cast(found, "bool")
    if e.node(x).dtype != node.dtype:  # mean of int32 is float32: compute in the result's type
        x = e.cast(x, node.dtype)
    if node.op is Op.MEAN:
        return _mean(e, x, axes, node.attr("keepdims"))
    if node.op is Op.VAR:
        return _var(e, x, axes, node.attr("keepdims"), node.attr("ddof"))
    if node.op is Op.STD:
        return e.emit(Op.SQRT, [_var(e, x, axes, node.attr("keepdims"), node.attr("ddof"))])
    if node.op is Op.LOGSUMEXP:
        return _lse(e, x, axes, node.attr("keepdims"))
    if node.op is Op.SOFTMAX:
        # exp(x - max) / sum: the max subtraction keeps exp finite
        m = e.reduce(Op.RMAX, x, axes, True)
        ex = e.emit(Op.EXP, [e.emit(Op.SUB, [x, m])])
        return e.emit(Op.DIV, [ex, e.reduce(Op.SUM, ex, axes, True)])
    if node.op is Op.LOG_SOFTMAX:
        return e.emit(Op.SUB, [x, _lse(e, x, axes, True)])
    return None


def split_axes(e: Emitter, node: Node, srcs: list) -> int | None:
    """A reduction over several axes becomes one reduction per axis (see Emitter.reduce)."""
    if node.op not in REDUCE or len(node.attr("axes")) < 2:
        return None
    return e.reduce(node.op, srcs[0], node.attr("axes"), node.attr("keepdims"))


# -- simplification ------------------------------------------------------------------------------


def _const_of(e: Emitter, i: int):
    n = e.node(i)
    return float(const_array(n, "native")) if n.op is Op.CONST and n.dtype in dtypes.FLOATS else None


def small_powers(e: Emitter, node: Node, srcs: list) -> int | None:
    """x**2 -> x*x and x**3 -> x*x*x: exact or within pow's ULP bound, and far cheaper than powf."""
    if node.op is not Op.POW or node.dtype not in dtypes.FLOATS:
        return None
    k = _const_of(e, srcs[1])
    x = srcs[0]
    if k == 1.0 and e.node(x).shape == node.shape:
        return x
    if k == 2.0:
        return e.emit(Op.MUL, [x, x], shape=node.shape)
    if k == 3.0:
        return e.emit(Op.MUL, [e.emit(Op.MUL, [x, x]), x], shape=node.shape)
    return None


def identities(e: Emitter, node: Node, srcs: list) -> int | None:
    """x*1, x/1, x-0, x+(-0) and same-type casts are x (bit-exact, NaN and -0 included)."""
    if node.op is Op.CAST and e.node(srcs[0]).dtype == node.dtype:
        return srcs[0]
    if node.op not in (Op.MUL, Op.DIV, Op.SUB, Op.ADD) or node.dtype not in dtypes.FLOATS:
        return None
    a, b = srcs
    cb = _const_of(e, b)
    same = e.node(a).shape == node.shape and e.node(a).dtype == node.dtype
    neg_zero = cb == 0.0 and cb is not None and math.copysign(1.0, cb) < 0
    if same and ((node.op in (Op.MUL, Op.DIV) and cb == 1.0) or (node.op is Op.SUB and cb == 0.0
                                                                  and not neg_zero)
                 or (node.op is Op.ADD and neg_zero)):
        return a
    if node.op is Op.MUL and _const_of(e, a) == 1.0 and e.node(b).shape == node.shape \
            and e.node(b).dtype == node.dtype:
        return b
    return None


def fold_constants(e: Emitter, node: Node, srcs: list) -> int | None:
    """An elementwise op of constants is computed now, in the node's own dtype."""
    if node.op not in ELEMENTWISE or not srcs or any(e.node(s).op is not Op.CONST for s in srcs):
        return None
    value = apply(node, [const_array(e.node(s), "native") for s in srcs], "native")
    scalar = np.asarray(value).reshape(-1)[0].item()
    return e.b.add(Op.CONST, node.dtype, node.shape, (), {"value": const_attr(scalar)}, node.loc) \
        if node.shape == () else None


def eliminate_dead_code(graph: Graph) -> Graph:
    """Keep what the outputs need (and every input, since they are the ABI)."""
    live = set(graph.outputs)
    for n in reversed(graph.nodes):
        if n.id in live or n.op is Op.INPUT:
            live.add(n.id)
            live.update(n.srcs)
    b = Builder(graph.name)
    new: dict[int, int] = {}
    for n in graph.nodes:
        if n.id in live:
            new[n.id] = b.add(n.op, n.dtype, n.shape, [new[s] for s in n.srcs], dict(n.attrs), n.loc)
    return b.build(new[o] for o in graph.outputs)


PASSES: list[tuple[str, Callable[[Graph], Graph]]] = [
    ("decompose", lambda g: rewrite(g, [decompose, split_axes])),
    ("small_powers", lambda g: rewrite(g, [small_powers])),
    ("fold_constants", lambda g: rewrite(g, [fold_constants])),
    ("identities", lambda g: rewrite(g, [identities])),
    ("cse", lambda g: rewrite(g, [])),
    ("dce", eliminate_dead_code),
]


def canonicalize(graph: Graph, log: list[str] | None = None) -> Graph:
    """Run every pass in order; `log` (if given) receives one line per pass that changed the graph."""
    for name, run in PASSES:
        before = len(graph.nodes)
        graph = validate(run(graph))
        if log is not None:
            log.append(f"{name}: {before} -> {len(graph.nodes)} nodes")
    return graph
