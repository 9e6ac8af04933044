"""How a row kernel's instructions split into passes over a row (shared by every C-family target).

A reduction needs its whole row before anything that uses it can run, so a row kernel makes one
pass per *level*: pass p accumulates every reduction whose inputs depend only on row values of
levels < p; per-row math at level p runs between passes; a last pass computes and stores the
per-element outputs. Per-element values are recomputed in each pass that needs them (the row is in
cache; recomputing is cheaper than a round trip through memory).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kernel_ir import KernelIR
from ..ops import REDUCE, Op


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


def cone(k: KernelIR, roots: list[int]) -> tuple[int, ...]:
    """The elem instructions `roots` need, in program order (row values are inputs to the cone)."""
    need, stack = set(), list(roots)
    while stack:
        i = stack.pop()
        ins = k.body[i]
        if ins.space != "elem" or i in need:
            continue
        need.add(i)
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
