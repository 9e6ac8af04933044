"""Reverse mode over GraphIR: the vector-Jacobian product of a canonical graph, as another graph.

`vjp(graph)` takes a canonical graph with inputs x_0..x_{n-1} and outputs y_0..y_{m-1} and returns a
graph whose inputs are x_0..x_{n-1} followed by one cotangent per output (`cotangent0`, ...) and
whose outputs are the cotangents of the inputs: what `mx.vjp(fn, xs, cotangents)[1]` computes, in
GraphIR, so that the backward pass is canonicalized, fused, lowered, judged and timed like any
traced function (runtime.transformable runs it under mx.grad). The forward values the backward
reads are the forward graph's own nodes, copied in: fusion recomputes them inside the backward
kernels where that is cheaper than reading them back.

Each op's rule follows MLX's own vjp where MLX defines a convention: a maximum or minimum gives a
tie to its second operand, a max or min over an axis shares the cotangent equally among the
elements equal to it, abs has 0 at 0. A cotangent may stay smaller than its node (broadcasting to
it, as a row sum's does across its row) until an op needs it whole; a contribution to a broadcast
operand is summed over the axes it was broadcast along. Ops without a rule here (scans, indexing,
products over an axis) raise NotDifferentiable, and the caller keeps MLX's own derivative.
"""

from __future__ import annotations

import math
from typing import Sequence

from . import dtypes
from .canon import Emitter
from .graph import Builder, Graph, Node, broadcast_shapes, reduced_shape
from .ops import ELEMENTWISE, PREDICATE, Op


class NotDifferentiable(Exception):
    """The graph holds an op whose derivative this module does not write (the message names it)."""


def vjp(graph: Graph, wrt: Sequence[int] | None = None, values: bool = False) -> Graph:
    """The reverse-mode derivative of canonical `graph`: inputs (x..., cotangent0...), outputs the
    cotangent of each input x whose index is in `wrt` (default: every input; each floating), after
    the graph's own outputs where `values` (mx.value_and_grad's)."""
    wrt = range(len(graph.inputs)) if wrt is None else wrt
    for n in (graph.inputs[i] for i in wrt):
        if n.dtype not in dtypes.FLOATS:
            raise NotDifferentiable(f"input {n.attr('name')} is {n.dtype}, not a floating type")
    for o in graph.outputs:
        if graph.nodes[o].dtype not in dtypes.FLOATS:
            raise NotDifferentiable(f"output %{o} is {graph.nodes[o].dtype}, not a floating type")
    b = Builder(f"{graph.name}_vjp")
    new = b.inline(graph)  # the forward values, read by the rules
    cts: dict[int, int] = {}
    for j, o in enumerate(graph.outputs):
        out = graph.nodes[o]
        ct = b.add(Op.INPUT, out.dtype, out.shape, (), {"name": f"cotangent{j}", "index": len(graph.inputs) + j})
        _accumulate(Emitter(b, out), cts, o, ct)
    for n in reversed(graph.nodes):
        if n.id in cts and n.op not in (Op.INPUT, Op.CONST):
            e = _Rules(b, n, new)
            for src, ct in _rule(e, n, cts[n.id]):
                shape = graph.nodes[src].shape
                if graph.nodes[src].dtype in dtypes.FLOATS:
                    # what the contribution stands for: the node's shape where the op broadcasts
                    # its operands to it, else the operand's own (a reduction's, reshaped, ...)
                    whole = n.shape if n.op in ELEMENTWISE or n.op is Op.BROADCAST else \
                        broadcast_shapes(e.node(ct).shape, shape)
                    _accumulate(e, cts, src, e.unbroadcast(ct, whole, shape))
    grads = []
    for x in (graph.inputs[i] for i in wrt):
        e = Emitter(b, x)
        grads.append(_whole(e, cts[x.id], x.shape) if x.id in cts else _whole(e, e.const(0.0, x.dtype), x.shape))
    return b.build(([new[o] for o in graph.outputs] if values else []) + grads)


def _accumulate(e: Emitter, cts: dict[int, int], node: int, ct: int) -> None:
    cts[node] = e.emit(Op.ADD, [cts[node], ct]) if node in cts else ct


def _whole(e: Emitter, x: int, shape: tuple[int, ...]) -> int:
    """`x` broadcast to `shape` (a cotangent kept smaller than its node, made whole)."""
    if e.node(x).shape == tuple(shape):
        return x
    return e.b.add(Op.BROADCAST, e.node(x).dtype, shape, [x], {"shape": tuple(shape)}, e.old.loc)


class _Rules(Emitter):
    """An Emitter over the backward graph, with the forward node's values at hand."""

    def __init__(self, builder: Builder, old: Node, new: list[int]):
        super().__init__(builder, old)
        self.y = new[old.id]                          # the node's forward value
        self.x = [new[s] for s in old.srcs]           # its sources' forward values

    def k(self, value: float) -> int:
        return self.const(value, self.old.dtype)

    def mul(self, *xs: int) -> int:
        out = xs[0]
        for x in xs[1:]:
            out = self.emit(Op.MUL, [out, x])
        return out

    def where(self, cond: int, a: int, b: int) -> int:
        return self.emit(Op.WHERE, [cond, a, b])

    def unbroadcast(self, ct: int, whole: tuple[int, ...], shape: tuple[int, ...]) -> int:
        """A contribution `ct` standing for a value of shape `whole` (it may be smaller, broadcasting
        to it), carried to an operand of `shape` that was broadcast to `whole`: summed over the axes
        the operand was broadcast along (where `ct` is itself broadcast along one, multiplied by
        its length instead), so that it broadcasts to `shape` (it may stay smaller)."""
        have = self.node(ct).shape
        pad, lead = len(whole) - len(have), len(whole) - len(shape)
        axes, scale = [], 1
        for i, d in enumerate(whole):
            if d == 1 or (i >= lead and shape[i - lead] != 1):
                continue   # not an axis the operand was broadcast along
            if i >= pad and have[i - pad] != 1:
                axes.append(i - pad)
            else:
                scale *= d
        if scale != 1:
            ct = self.mul(ct, self.const(float(scale), self.node(ct).dtype))
        if axes:
            ct = self.reduce(Op.SUM, ct, axes, True)
        extra = len(have) - len(shape)
        if extra > 0:
            ct = self.drop_axes(ct, self.node(ct).shape[extra:])
        return ct


def _rule(e: _Rules, n: Node, g: int) -> list[tuple[int, int]]:
    """(source, contribution) pairs: the cotangent `g` of node `n` carried to its sources."""
    op, s, x, y = n.op, n.srcs, e.x, e.y
    if op in PREDICATE or op in (Op.FLOOR, Op.CEIL, Op.SIGN):
        return []   # piecewise constant: no derivative
    if op in _UNARY:
        return [(s[0], _UNARY[op](e, g, x[0], y))]
    if op is Op.CAST:
        return [(s[0], e.cast(g, e.node(x[0]).dtype))]
    if op is Op.ADD:
        return [(s[0], g), (s[1], g)]
    if op is Op.SUB:
        return [(s[0], g), (s[1], e.emit(Op.NEG, [g]))]
    if op is Op.MUL:
        return [(s[0], e.mul(g, x[1])), (s[1], e.mul(g, x[0]))]
    if op is Op.DIV:
        return [(s[0], e.emit(Op.DIV, [g, x[1]])), (s[1], e.emit(Op.NEG, [e.emit(Op.DIV, [e.mul(g, y), x[1]])]))]
    if op is Op.POW:
        base = e.mul(g, x[1], e.emit(Op.POW, [x[0], e.emit(Op.SUB, [x[1], e.k(1.0)])]))
        zero = e.emit(Op.EQ, [x[0], e.k(0.0)])  # MLX's: no derivative in the exponent at a zero base
        expo = e.where(zero, e.k(0.0), e.mul(g, y, e.emit(Op.LOG, [x[0]])))
        return [(s[0], base), (s[1], expo)]
    if op in (Op.MAX, Op.MIN):  # the first operand where it is strictly ahead, else the second (MLX's)
        first = e.emit(Op.GT if op is Op.MAX else Op.LT, [x[0], x[1]])
        return [(s[0], e.where(first, g, e.k(0.0))), (s[1], e.where(first, e.k(0.0), g))]
    if op is Op.WHERE:
        return [(s[1], e.where(x[0], g, e.k(0.0))), (s[2], e.where(x[0], e.k(0.0), g))]
    if op is Op.SUM:
        return [(s[0], _kept(e, g, n))]
    if op in (Op.RMAX, Op.RMIN):  # shared equally among the elements equal to the result (MLX's)
        hit = e.emit(Op.EQ, [x[0], _kept(e, y, n)])
        count = e.reduce(Op.SUM, e.cast(hit, n.dtype), n.attr("axes"), True)
        return [(s[0], e.where(hit, e.emit(Op.DIV, [_kept(e, g, n), count]), e.k(0.0)))]
    if op is Op.RESHAPE:
        return [(s[0], e.drop_axes(_whole(e, g, n.shape), e.node(x[0]).shape))]
    if op is Op.TRANSPOSE:
        perm = n.attr("perm")
        inverse = tuple(perm.index(i) for i in range(len(perm)))
        return [(s[0], _transpose(e, _whole(e, g, n.shape), inverse))]
    if op is Op.BROADCAST:
        return [(s[0], g)]   # summed over the broadcast axes by the caller (unbroadcast)
    if op is Op.MATMUL:
        a, b = (e.node(i) for i in x)
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise NotDifferentiable(f"matmul of a vector ({list(a.shape)} @ {list(b.shape)})")
        g = _whole(e, g, n.shape)
        return [(s[0], _matmul(e, g, _transpose(e, x[1], _swap(len(b.shape))))),
                (s[1], _matmul(e, _transpose(e, x[0], _swap(len(a.shape))), g))]
    raise NotDifferentiable(f"no derivative for {op.value}" + (f" at {n.loc}" if n.loc else ""))


def _kept(e: _Rules, v: int, n: Node) -> int:
    """A reduction's value or cotangent `v` with its reduced axes kept (size 1)."""
    if n.attr("keepdims"):
        return v
    return e.drop_axes(_whole(e, v, n.shape), reduced_shape(e.node(e.x[0]).shape, n.attr("axes"), True))


def _swap(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 2)) + (rank - 1, rank - 2)


def _transpose(e: Emitter, x: int, perm: tuple[int, ...]) -> int:
    shape = e.node(x).shape
    return e.b.add(Op.TRANSPOSE, e.node(x).dtype, tuple(shape[p] for p in perm), [x], {"perm": tuple(perm)},
                   e.old.loc)


def _matmul(e: Emitter, a: int, b: int) -> int:
    sa, sb = e.node(a).shape, e.node(b).shape
    shape = broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    return e.b.add(Op.MATMUL, e.node(a).dtype, shape, [a, b], {}, e.old.loc)


# unary rules: (emitter, cotangent, x, y) -> the contribution to x
_UNARY = {
    Op.NEG: lambda e, g, x, y: e.emit(Op.NEG, [g]),
    Op.ABS: lambda e, g, x, y: e.mul(g, e.emit(Op.SIGN, [x])),
    Op.SQUARE: lambda e, g, x, y: e.mul(g, e.emit(Op.ADD, [x, x])),
    Op.SQRT: lambda e, g, x, y: e.emit(Op.DIV, [g, e.emit(Op.ADD, [y, y])]),
    Op.RSQRT: lambda e, g, x, y: e.mul(g, e.k(-0.5), e.emit(Op.DIV, [y, x])),
    Op.RECIPROCAL: lambda e, g, x, y: e.emit(Op.NEG, [e.mul(g, y, y)]),
    Op.EXP: lambda e, g, x, y: e.mul(g, y),
    Op.EXPM1: lambda e, g, x, y: e.mul(g, e.emit(Op.ADD, [y, e.k(1.0)])),
    Op.LOG: lambda e, g, x, y: e.emit(Op.DIV, [g, x]),
    Op.LOG1P: lambda e, g, x, y: e.emit(Op.DIV, [g, e.emit(Op.ADD, [x, e.k(1.0)])]),
    Op.TANH: lambda e, g, x, y: e.mul(g, e.emit(Op.SUB, [e.k(1.0), e.mul(y, y)])),
    Op.SIGMOID: lambda e, g, x, y: e.mul(g, y, e.emit(Op.SUB, [e.k(1.0), y])),
    Op.ERF: lambda e, g, x, y: e.mul(g, e.k(2.0 / math.sqrt(math.pi)), e.emit(Op.EXP, [e.emit(Op.NEG, [e.mul(x, x)])])),
    Op.SIN: lambda e, g, x, y: e.mul(g, e.emit(Op.COS, [x])),
    Op.COS: lambda e, g, x, y: e.emit(Op.NEG, [e.mul(g, e.emit(Op.SIN, [x]))]),
}
