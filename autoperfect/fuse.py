"""Fusion: partition a canonical graph into regions, each one kernel, and say why where it refuses.

A region iterates one *domain* (a shape). Inside it every node lives in one of two spaces: `elem`
(one value per domain element) or `row` (one value per row: the domain with its last axis reduced).
Elementwise chains share a domain; a reduction over the last axis joins the region that produces
its input and yields row values, which broadcast back into later elementwise ops. Movement ops
(reshape, transpose, broadcast) are not computed: they become views folded into a region's loads.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from .graph import Graph, Node
from .ops import ELEMENTWISE, MOVEMENT, REDUCE, Op


@dataclass(frozen=True)
class Decision:
    producer: int
    consumer: int
    fused: bool
    reason: str

    def to_json(self) -> dict:
        return {"producer": self.producer, "consumer": self.consumer, "fused": self.fused,
                "reason": self.reason}


@dataclass(frozen=True)
class Region:
    index: int
    kind: str                      # "kernel" (fused, generated) or "mlx" (left to MLX, see reason)
    nodes: tuple[int, ...]         # computed nodes, in graph order
    domain: tuple[int, ...]
    spaces: tuple[tuple[int, str], ...]  # node -> "elem" | "row"
    outputs: tuple[int, ...]       # nodes whose values leave the region (materialized)
    inputs: tuple[int, ...]        # external nodes the region reads (after views are resolved)
    reason: str = ""

    @property
    def reduces(self) -> bool:
        return "row" in dict(self.spaces).values()

    def space(self, node_id: int) -> str:
        return dict(self.spaces)[node_id]


@dataclass(frozen=True)
class Partition:
    graph: Graph
    regions: tuple[Region, ...]
    decisions: tuple[Decision, ...]

    def region_of(self, node_id: int) -> Region | None:
        for r in self.regions:
            if node_id in r.nodes:
                return r
        return None

    @staticmethod
    def from_json(graph: Graph, d: dict) -> "Partition":
        if d["graph_digest"] != graph.digest():
            raise ValueError(f"regions of {d['op']} were made from another graph")
        regions = tuple(Region(r["index"], r["kind"], tuple(r["nodes"]), tuple(r["domain"]),
                               tuple(sorted((int(k), v) for k, v in r["spaces"].items())),
                               tuple(r["outputs"]), tuple(r["inputs"]), r.get("reason", ""))
                        for r in d["regions"])
        decisions = tuple(Decision(x["producer"], x["consumer"], x["fused"], x["reason"]) for x in d["decisions"])
        return Partition(graph, regions, decisions)

    def to_json(self) -> dict:
        g = self.graph
        out = []
        for r in self.regions:
            ops = [g.nodes[i].op.value for i in r.nodes]
            out.append({"index": r.index, "kind": r.kind, "nodes": list(r.nodes), "ops": ops,
                        "domain": list(r.domain), "class": _class(r),
                        "spaces": {str(k): v for k, v in r.spaces},
                        "inputs": list(r.inputs), "outputs": list(r.outputs),
                        "lines": sorted({g.nodes[i].loc for i in r.nodes if g.nodes[i].loc}),
                        **({"reason": r.reason} if r.reason else {})})
        kernels = sum(r.kind == "kernel" for r in self.regions)
        left = sum(r.kind == "mlx" for r in self.regions)
        computed = sum(1 for n in g.nodes if n.op in ELEMENTWISE or n.op in REDUCE)
        return {"op": g.name, "graph_digest": g.digest(), "regions": out,
                "decisions": [d.to_json() for d in self.decisions],
                "summary": f"{computed} computed nodes -> {kernels} fused kernel(s), {left} left to MLX"}


def _class(r: Region) -> str:
    if r.kind == "mlx":
        return "mlx"
    return "row" if r.reduces else "elementwise"


def row_shapes(domain: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    return (domain[:-1] + (1,), domain[:-1]) if domain else ()


@dataclass
class _Group:
    index: int
    domain: tuple[int, ...]
    kind: str = "kernel"
    nodes: list[int] = field(default_factory=list)
    spaces: dict[int, str] = field(default_factory=dict)
    reason: str = ""


class _Fuser:
    def __init__(self, graph: Graph):
        self.g = graph
        self.groups: dict[int, _Group] = {}
        self.home: dict[int, int] = {}  # node -> group index
        self.decisions: list[Decision] = []

    # -- helpers ---------------------------------------------------------------------------------
    def base(self, i: int) -> int:
        """Follow movement ops back to the value they view."""
        while self.g.nodes[i].op in MOVEMENT:
            i = self.g.nodes[i].srcs[0]
        return i

    def computed(self, i: int) -> bool:
        op = self.g.nodes[i].op
        return op in ELEMENTWISE or op in REDUCE

    def deps(self, gi: int) -> set[int]:
        """Groups that group `gi` reads from, directly or through views."""
        out = set()
        for n in self.groups[gi].nodes:
            for s in self.g.nodes[n].srcs:
                b = self.base(s)
                if b in self.home and self.home[b] != gi:
                    out.add(self.home[b])
        return out

    def reaches(self, start: int, target: int, skip: frozenset = frozenset()) -> bool:
        """Does group `start` depend, through groups other than those in `skip`, on `target`?"""
        stack, seen = [d for d in self.deps(start) if d not in skip], set()
        while stack:
            gi = stack.pop()
            if gi == target:
                return True
            if gi in seen:
                continue
            seen.add(gi)
            stack.extend(d for d in self.deps(gi) if d not in skip or d == target)
        return False

    def space_in(self, grp: _Group, n: Node) -> tuple[str | None, str]:
        """The space `n` would take in `grp`, or None and the reason it can't join."""
        dom = grp.domain
        if grp.kind != "kernel":
            return None, f"%{grp.nodes[0]} is left to MLX ({grp.reason})"
        in_grp = [s for s in n.srcs if self.home.get(s) == grp.index]
        if n.op in REDUCE:
            src = self.g.nodes[n.srcs[0]]
            if src.shape != dom:
                return None, f"reduces {list(src.shape)}, the region iterates {list(dom)}"
            if in_grp and grp.spaces[in_grp[0]] != "elem":
                return None, "reduces row values again (a reduction of a reduction is another pass over other data)"
            return "row", f"reduction over the last axis of the region's domain {list(dom)}"
        if n.shape == dom:
            for s in in_grp:
                if grp.spaces[s] == "row" and self.g.nodes[s].shape != dom[:-1] + (1,) and len(dom) > 1:
                    return None, (f"%{s} {list(self.g.nodes[s].shape)} would broadcast along another "
                                  "axis than the one it was reduced over")
            return "elem", f"same domain {list(dom)}"
        if n.shape in row_shapes(dom) and in_grp and all(grp.spaces[s] == "row" for s in in_grp):
            if all(self.g.nodes[s].shape == n.shape or self.g.nodes[s].shape == () for s in in_grp):
                return "row", f"per-row math on the row values of {list(dom)}"
        return None, f"shape {list(n.shape)} is neither the region's domain {list(dom)} nor its row shape"

    # -- the pass ------------------------------------------------------------------------------------
    def new_group(self, n: Node, kind: str = "kernel", reason: str = "") -> _Group:
        gi = len(self.groups)
        dom = self.g.nodes[n.srcs[0]].shape if n.op in REDUCE else n.shape
        grp = _Group(gi, dom, kind, reason=reason)
        self.groups[gi] = grp
        self.place(grp, n, "row" if n.op in REDUCE else "elem")
        return grp

    def place(self, grp: _Group, n: Node, space: str) -> None:
        grp.nodes.append(n.id)
        grp.spaces[n.id] = space
        self.home[n.id] = grp.index

    def merge(self, into: _Group, other: _Group) -> None:
        for i in other.nodes:
            self.home[i] = into.index
        into.nodes.extend(other.nodes)
        into.spaces.update(other.spaces)
        del self.groups[other.index]

    def visit(self, n: Node) -> None:
        if n.op in REDUCE:
            axes = n.attr("axes")
            rank = len(self.g.nodes[n.srcs[0]].shape)
            if rank and tuple(axes) != (rank - 1,):
                grp = self.new_group(n, "mlx", f"reduction over axes {list(axes)} of a rank-{rank} "
                                               "array: only last-axis reductions are fused so far")
                for s in n.srcs:
                    if self.computed(self.base(s)):
                        self.decisions.append(Decision(self.base(s), n.id, False, grp.reason))
                return
        producers = []
        for s in n.srcs:
            if self.computed(s) and self.home[s] not in producers:
                producers.append(self.home[s])
        for s in n.srcs:
            b = self.base(s)
            if b != s and self.computed(b):
                self.decisions.append(Decision(b, n.id, False, f"%{s} is a {self.g.nodes[s].op.value} "
                                               f"of %{b}: %{b} is materialized and read through a view"))
        home, why = None, {}
        for gi in producers:
            space, reason = self.space_in(self.groups[gi], n)
            why[gi] = reason
            other_sources = [self.home[s] for s in n.srcs if self.computed(self.base(s))
                             and self.home[self.base(s)] != gi]
            if space and any(self.reaches(o, gi) for o in other_sources):
                space, why[gi] = None, "fusing would create a cycle between kernels"
            if space:
                home = self.groups[gi]
                self.place(home, n, space)
                break
        if home is None:
            home = self.new_group(n)
        for gi in producers:
            if gi == home.index or gi not in self.groups:
                continue
            other = self.groups[gi]
            ok = other.kind == "kernel" and other.domain == home.domain
            reason = why.get(gi) or f"domain {list(other.domain)} differs from {list(home.domain)}"
            if ok and (self.reaches(home.index, gi, frozenset({gi})) or self.reaches(gi, home.index)):
                ok, reason = False, "fusing would create a cycle between kernels"
            if ok and any(home.spaces[n.id] == "row" and other.spaces[s] != "row"
                          for s in n.srcs if self.home.get(s) == gi):
                ok = False
            if ok:
                self.merge(home, other)
                reason = f"fan-in: both sides iterate {list(home.domain)}"
            for s in n.srcs:
                if self.home.get(s) == (home.index if ok else gi):
                    self.decisions.append(Decision(s, n.id, ok, reason))
        for s in n.srcs:
            if self.computed(s) and self.home[s] == home.index and s not in \
                    {d.producer for d in self.decisions if d.consumer == n.id}:
                self.decisions.append(Decision(s, n.id, True, why.get(home.index, "same region")))
            elif self.computed(s) and self.home[s] != home.index and s not in \
                    {d.producer for d in self.decisions if d.consumer == n.id}:
                self.decisions.append(Decision(s, n.id, False, why.get(self.home[s], "not fusable")))

    def run(self) -> Partition:
        for n in self.g.nodes:
            if self.computed(n.id):
                self.visit(n)
        return self.finish()

    def finish(self) -> Partition:
        g = self.g
        users = g.users()
        materialize = {self.base(o) for o in g.outputs}
        for n in g.nodes:
            if n.op not in MOVEMENT:
                materialize.update(self.base(s) for s in n.srcs if g.nodes[s].op in MOVEMENT)
        regions = []
        for k, gi in enumerate(self.topological_order()):
            grp = self.groups[gi]
            nodes = tuple(sorted(grp.nodes))
            outs = tuple(i for i in nodes if i in materialize
                         or any(self.home.get(u) != gi and g.nodes[u].op not in MOVEMENT for u in users[i]))
            ins: list[int] = []
            for i in nodes:
                for s in g.nodes[i].srcs:
                    b = self.base(s)
                    if self.home.get(b) != gi and g.nodes[b].op is not Op.CONST and b not in ins:
                        ins.append(b)
            regions.append(Region(k, grp.kind, nodes, grp.domain, tuple(sorted(grp.spaces.items())),
                                  outs, tuple(ins), grp.reason))
        decisions = tuple(sorted(set(self.decisions), key=lambda d: (d.consumer, d.producer)))
        return Partition(g, tuple(regions), decisions)

    def topological_order(self) -> list[int]:
        """Groups in an order where each runs after every group it reads (ties: earliest node)."""
        deps = {gi: self.deps(gi) for gi in self.groups}
        done: list[int] = []
        while len(done) < len(deps):
            ready = [gi for gi in deps if gi not in done and deps[gi] <= set(done)]
            done.append(min(ready, key=lambda gi: min(self.groups[gi].nodes)))
        return done


def fuse(graph: Graph) -> Partition:
    """Partition `graph` (canonical) into fused regions, recording every fusion decision."""
    return _Fuser(graph).run()


def region_name(partition: Partition, region: Region) -> str:
    """A stable name for a region: a hash of its nodes' structure (sizes included)."""
    g = partition.graph
    body = json.dumps([[g.nodes[i].op.value, g.nodes[i].dtype, list(g.nodes[i].shape)] for i in region.nodes])
    return "r" + hashlib.sha256(body.encode()).hexdigest()[:10]
