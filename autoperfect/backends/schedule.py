"""How a row kernel's instructions split into passes over a row (shared by every C-family target).

A reduction needs its whole row before anything that uses it can run, so a row kernel makes one
pass per *level*: pass p accumulates every reduction whose inputs depend only on row values of
levels < p; per-row math at level p runs between passes; a last pass computes and stores the
per-element outputs. Per-element values are recomputed in each pass that needs them (the row is in
cache; recomputing is cheaper than a round trip through memory).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..kernel_ir import KernelIR
from ..ops import REDUCE, ULP_BOUND, Op


@dataclass(frozen=True)
class RowPass:
    reduces: tuple[int, ...]      # reductions accumulated in this pass
    elem: tuple[int, ...]         # per-element instructions computed in the loop (in order)
    row_after: tuple[int, ...]    # per-row instructions computed after the loop


@dataclass(frozen=True)
class Plan:
    row_before: tuple[int, ...]   # per-row instructions needed before the first pass
    passes: tuple[RowPass, ...]
    final_elem: tuple[int, ...]   # per-element instructions of the last pass (stores included)
    row_stores: tuple[int, ...]


def cone(k: KernelIR, roots: list[int], leaves: frozenset[int] = frozenset()) -> tuple[int, ...]:
    """The elem instructions `roots` need, in program order (row values are inputs to the cone;
    so are `leaves`, values the caller already has: their own inputs are not needed for them)."""
    need, stack = set(), list(roots)
    while stack:
        i = stack.pop()
        ins = k.body[i]
        if ins.space != "elem" or i in need:
            continue
        need.add(i)
        if i not in leaves:
            stack.extend(ins.srcs)
    return tuple(sorted(need))


def levels(k: KernelIR) -> dict[int, int]:
    """Row level of every instruction: 0 for what is known before any pass, p for what pass p yields."""
    lvl: dict[int, int] = {}
    for ins in k.body:
        below = max((lvl[s] for s in ins.srcs), default=0)
        lvl[ins.id] = below + 1 if ins.op in REDUCE else below
    return lvl


def plan(k: KernelIR) -> Plan:
    lvl = levels(k)
    row = [i for i in k.body if i.space == "row" and i.op not in REDUCE and i.op is not Op.STORE]
    top = max((lvl[i.id] for i in k.body if i.op in REDUCE), default=0)
    passes = []
    for p in range(1, top + 1):
        reduces = tuple(i.id for i in k.body if i.op in REDUCE and lvl[i.id] == p)
        elem = cone(k, [k.body[r].srcs[0] for r in reduces])
        after = tuple(i.id for i in row if lvl[i.id] == p)
        passes.append(RowPass(reduces, elem, after))
    elem_stores = [i.id for i in k.body if i.op is Op.STORE and i.space == "elem"]
    final = cone(k, [k.body[s].srcs[0] for s in elem_stores]) + tuple(elem_stores)
    return Plan(tuple(i.id for i in row if lvl[i.id] == 0), tuple(passes), final,
                tuple(i.id for i in k.body if i.op is Op.STORE and i.space == "row"))


# Ops whose result is NaN wherever an operand is, in every C-family rendering: IEEE arithmetic, and
# libm's, libmvec's and our own functions (vmath.c passes NaN through its clamp); a row sum of terms
# of which one is NaN is NaN, its compensated and folded forms included.
NAN_CARRIERS = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.NEG, Op.ABS, Op.SQUARE, Op.SQRT,
                          Op.RSQRT, Op.RECIPROCAL, Op.EXP, Op.LOG, Op.SUM})


def nan_carried(k: KernelIR, r: int) -> bool:
    """Whether max or min reduction `r` may drop the NaN flag that makes its result NaN where one of
    its inputs is, changing no output: some row sum adds, for each element, a term that is NaN
    wherever r's input is (through NAN_CARRIERS alone), and every store carries that sum, so a row
    holding a NaN stores NaN everywhere with the flag or without it. Softmax is the case: x - max,
    exp, summed, and every output divided by the sum. The flag costs a compare and an or per
    element and lane: softmax's kernel ran 1.09-1.14x slower with it in cache and 1.03-1.05x read
    from memory (docs/experiments/2026-12-04f-cpu)."""
    body = k.body
    lanes = {body[r].srcs[0]}   # elem values NaN wherever r's input element is
    rows = set()                # values NaN for every element wherever any of r's inputs is
    for ins in body:
        if ins.op not in NAN_CARRIERS:
            continue
        if any(s in rows for s in ins.srcs) or (ins.op is Op.SUM and ins.srcs[0] in lanes):
            rows.add(ins.id)
        elif ins.space == "elem" and any(s in lanes for s in ins.srcs):
            lanes.add(ins.id)
    stores = [ins for ins in body if ins.op is Op.STORE]
    return bool(stores) and all(s.srcs[0] in rows for s in stores)


@dataclass(frozen=True)
class Stash:
    """Keep one per-element value of the last reducing pass in an output row instead of recomputing it
    in the final pass (softmax's exp: one exp per element instead of two). The value is a float (an
    inexact kernel keeps its 16-bit values in float32: CRenderer.rounded) and is kept as a float, in
    a float32 output's row or in a buffer on the stack, so the final pass reads back exactly what it
    would have computed. Where no output is float32 (`arg` None) only the stack's buffer holds it:
    longer rows than it holds recompute the value (CRenderer.render_row)."""
    value: int                    # the elem instruction stored by the last reducing pass
    arg: int | None               # the float32 elem output whose row holds it until overwritten
    final_elem: tuple[int, ...]   # the final pass with `value` read back instead of recomputed


def stash(k: KernelIR, p: Plan) -> Stash | None:
    """The stash worth making, if any: the latest value the last reducing pass and the final pass
    both compute whose cone calls an approximated function (recomputing plain arithmetic is cheaper
    than a round trip through L1)."""
    if not p.passes or k.kind != "row":
        return None
    stores = [k.body[i] for i in p.final_elem if k.body[i].op is Op.STORE]
    outs = [s.attr("arg") for s in stores if k.args[s.attr("arg")].dtype == "float32"]
    shared = set(p.passes[-1].elem) & set(p.final_elem)
    costly = [i for i in sorted(shared) if k.body[i].dtype in dtypes.FLOATS
              and any(k.body[c].op in ULP_BOUND for c in cone(k, [i]))]
    if not costly:
        return None
    value = costly[-1]
    roots = [s.srcs[0] for s in stores]
    final = cone(k, roots, frozenset({value})) + tuple(s.id for s in stores)
    return Stash(value, outs[0] if outs else None, final)


@dataclass(frozen=True)
class Shifted:
    """Two passes that may become one: pass `first` sums `value` (a per-element float32 value),
    whose row mean the next pass subtracts from the same value, squares and sums into `spread`,
    which is all that pass does. One pass can sum the shifted value d = value - K and its square
    beside the total, and take the spread as sum(d^2) - sum(d)^2 / n (CRenderer.shifted_sums picks
    K, cfamily.shifted_from says when the kernel trusts the result)."""
    first: int                    # index into Plan.passes of the pass that sums the total
    value: int                    # the elem value summed (x, or x + r)
    spread: int                   # the next pass's only reduction: SUM((value - mean)^2)
    total: int                    # the first pass's SUM(value), whose mean the spread is about


def shifted(k: KernelIR, p: Plan) -> Shifted | None:
    """The first pair of passes whose second only sums the squared deviations from the first's mean
    (a variance, a LayerNorm), all in float32 over whole rows, if any."""
    body = k.body
    for first, (rp, nxt) in enumerate(zip(p.passes, p.passes[1:])):
        if len(nxt.reduces) != 1 or body[nxt.reduces[0]].op is not Op.SUM:
            continue
        spread = body[nxt.reduces[0]]
        square = body[spread.srcs[0]]
        if not (square.op is Op.SQUARE or (square.op is Op.MUL and square.srcs[0] == square.srcs[1])):
            continue
        dev = body[square.srcs[0]]
        if dev.op is not Op.SUB or dev.space != "elem":
            continue
        value, mean = (body[s] for s in dev.srcs)
        if value.space != "elem" or mean.op is not Op.DIV or mean.space != "row":
            continue
        total, count = (body[s] for s in mean.srcs)
        whole_row = count.op is Op.CONST and count.attr("size") == "last" and count.attr("minus") == 0
        if not (whole_row and total.op is Op.SUM and total.id in rp.reduces and total.srcs[0] == value.id):
            continue
        if any(body[i].dtype != "float32" for i in (value.id, total.id, mean.id, dev.id, square.id, spread.id)):
            continue
        if set(nxt.elem) != set(cone(k, [value.id])) | {dev.id, square.id}:
            continue
        return Shifted(first, value.id, spread.id, total.id)
    return None
