"""The cost model fusion reasons with: traffic, work and footprint of a region, from shapes alone.

Deterministic on purpose (regions.json must be byte-identical run to run): the machine's measured
ceilings are applied later, where an op's work (`kernel_work`) and traffic meet the roofline
(`roofline.bound`) and the op is classified memory- or compute-bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import dtypes
from .fuse import Partition, Region
from .graph import Graph
from .ops import ELEMENTWISE, REDUCE, ULP_BOUND, Op

# Relative cost of one evaluation, in flops: a transcendental costs a polynomial's worth.
TRANSCENDENTAL_FLOPS = 12


def node_flops(op: Op) -> int:
    if op in ULP_BOUND or op is Op.DIV or op is Op.SQRT:
        return TRANSCENDENTAL_FLOPS if op in ULP_BOUND else 4
    return 1


def _evaluations(op: Op, space: str, per_space: dict[str, int]) -> int:
    """How many times an operation of the given space runs: once per element or row of its space,
    a reduction once per element it reduces."""
    return per_space["elem"] if op in REDUCE else per_space[space]


def _bytes(g: Graph, nodes) -> int:
    return sum(math.prod(g.nodes[i].shape) * dtypes.ITEMSIZE[g.nodes[i].dtype] for i in nodes)


@dataclass(frozen=True)
class RegionCost:
    bytes: int            # ideal traffic: inputs read once, outputs written once
    flops: int            # per-element work, a reduction's once per element it reduces
    passes: int           # sweeps over a row: one per level of dependent reductions, and one after
                          # the last for the per-element work that needs it
    row_bytes: int        # one row of every per-element input: what each pass re-reads from cache
    saved_bytes: int      # traffic fusion saved: intermediates never written and read back
    launches_saved: int

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0

    def to_json(self) -> dict:
        return {"bytes": self.bytes, "flops": self.flops, "passes": self.passes, "row_bytes": self.row_bytes,
                "saved_bytes": self.saved_bytes, "launches_saved": self.launches_saved,
                "intensity_flops_per_byte": round(self.intensity, 4)}


def region_cost(p: Partition, r: Region) -> RegionCost:
    g = p.graph
    computed = [i for i in r.nodes if g.nodes[i].op in ELEMENTWISE | REDUCE]
    row = r.domain[r.axis if r.axis is not None else -1] if r.domain else 1
    elements = math.prod(r.domain) if r.domain else 1
    per_space = {"elem": elements, "row": elements // max(row, 1)}
    flops = sum(node_flops(g.nodes[i].op) * _evaluations(g.nodes[i].op, r.space(i), per_space) for i in computed)
    internal = [i for i in r.nodes if i not in r.outputs]
    levels: dict[int, int] = {}
    for i in r.nodes:  # dependent reductions: each needs its own sweep of the row
        below = max((levels.get(s, 0) for s in g.nodes[i].srcs), default=0)
        levels[i] = below + (1 if g.nodes[i].op in REDUCE else 0)
    # a reduction runs in its level's sweep; per-element work after the reductions it reads, in the next
    passes = max((levels[i] if g.nodes[i].op in REDUCE else levels[i] + 1 for i in r.nodes
                  if g.nodes[i].op in REDUCE or r.space(i) == "elem"), default=1)
    row_bytes = row * sum(dtypes.ITEMSIZE[g.nodes[b].dtype] for b in r.inputs)
    return RegionCost(_bytes(g, r.inputs) + _bytes(g, r.outputs), flops, passes, row_bytes,
                      2 * _bytes(g, internal), max(len(computed) - 1, 0))


def peak_live_bytes(p: Partition) -> int:
    """Most bytes alive at once while the regions run in order: inputs, and each materialized value
    from the region that makes it to the last region that reads it."""
    g = p.graph
    last_use: dict[int, int] = {o: len(p.regions) for o in g.outputs}
    for k, r in enumerate(p.regions):
        for i in r.inputs:
            last_use[i] = max(last_use.get(i, -1), k)
    live = {n.id for n in g.inputs}
    peak = _bytes(g, live)
    for k, r in enumerate(p.regions):
        live |= set(r.outputs)
        peak = max(peak, _bytes(g, live))
        live = {i for i in live if last_use.get(i, -1) > k or g.nodes[i].op is Op.INPUT}
    return peak


def describe(p: Partition) -> dict:
    """The cost section of regions.json."""
    per_region = [{"region": r.index, **region_cost(p, r).to_json()} for r in p.regions if r.kind == "kernel"]
    return {"regions": per_region, "peak_live_bytes": peak_live_bytes(p),
            "note": "flops weigh a transcendental as 12, a division or square root as 4; bench.json "
                    "classifies the op against the measured ceilings, each function at its own rate"}


def kernel_work(kernels) -> dict:
    """What the kernels compute, counted from their KernelIR at their launch sizes: evaluations of
    each approximated function (whose throughput the roofline measures one by one) and the other
    arithmetic in flops. Each instruction counts once per element or row (a reduction once per
    element it reduces), however many passes recompute it: the ideal work, as `bytes_moved` is the
    ideal traffic."""
    functions: dict[str, int] = {}
    flops = 0
    for k in kernels:
        elements = math.prod(k.launch.dims)
        per_space = {"elem": elements, "row": elements // max(k.launch.dims[-1], 1)}
        for ins in k.body:
            if ins.op in ULP_BOUND:
                functions[ins.op.value] = functions.get(ins.op.value, 0) + per_space[ins.space]
            elif ins.op in ELEMENTWISE | REDUCE and ins.op is not Op.CAST:
                flops += node_flops(ins.op) * _evaluations(ins.op, ins.space, per_space)
    return {"functions": functions, "flops": flops}
