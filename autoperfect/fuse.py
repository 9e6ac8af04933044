"""Fusion: partition a canonical graph into regions, each one kernel, and say why where it refuses.

A region iterates one *domain* (a shape). Inside it every node lives in one of two spaces: `elem`
(one value per domain element) or `row` (one value per row: the domain with its last axis reduced).
Elementwise chains share a domain; a reduction over the last axis joins the region that produces
its input and yields row values, which broadcast back into later elementwise ops. Movement ops
(reshape, transpose, broadcast) are not computed: they become views folded into a region's loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .graph import Graph, Node
from .ops import ELEMENTWISE, EXACT, MOVEMENT, OPAQUE, REDUCE, Op, op_class
from .views import view_through


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
    axis: int | None = None        # the reduced axis when it is not the last: the loop moves it last

    @property
    def loop(self) -> tuple[int, ...]:
        """Loop order: the domain's axes with the reduced one innermost."""
        rank = len(self.domain)
        if self.axis is None or self.axis == rank - 1:
            return tuple(range(rank))
        return tuple(a for a in range(rank) if a != self.axis) + (self.axis,)

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
                               tuple(r["outputs"]), tuple(r["inputs"]), r.get("reason", ""), r.get("axis"))
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
                        **({"reason": r.reason} if r.reason else {}),
                        **({"axis": r.axis} if r.axis is not None else {})})
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


def row_shapes(domain: tuple[int, ...], axis: int | None = None) -> tuple[tuple[int, ...], ...]:
    """The shapes of per-row values: the domain reduced over `axis` (default: the last), with and
    without the unit axis."""
    if not domain:
        return ()
    a = len(domain) - 1 if axis is None else axis
    return (domain[:a] + (1,) + domain[a + 1:], domain[:a] + domain[a + 1:])


def _padded(shape: tuple[int, ...], domain: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` as it broadcasts against `domain`: unit axes in front (a row value reduced over axis 0
    without keepdims reads as the keepdims one)."""
    return (1,) * (len(domain) - len(shape)) + tuple(shape)


# Hard caps on one kernel: past these a generated kernel spills registers and compiles slowly.
MAX_NODES = 256
MAX_INPUTS = 24
FOOTPRINT = f"footprint cap: a kernel holds at most {MAX_NODES} ops and {MAX_INPUTS} inputs"

# A prologue on a smaller shape that broadcasts into a region (a weight's cast, `1 + w`) is computed
# again at every element of the region instead of being a kernel and a buffer of its own, where it
# is short and each op costs about one vector instruction: recomputing it is then cheaper than the
# launch and the pass over memory it saves.
RECOMPUTED = (EXACT & ELEMENTWISE) - {Op.DIV, Op.RECIPROCAL, Op.SQRT}
MAX_RECOMPUTED = 4


@dataclass
class _Group:
    index: int
    domain: tuple[int, ...]
    kind: str = "kernel"
    nodes: list[int] = field(default_factory=list)
    spaces: dict[int, str] = field(default_factory=dict)
    reason: str = ""
    axis: int | None = None  # reduced axis of a group whose loop moves it innermost (not the last)

    @property
    def loop_axis(self) -> int:
        return len(self.domain) - 1 if self.axis is None else self.axis


class _Fuser:
    def __init__(self, graph: Graph):
        self.g = graph
        self.groups: dict[int, _Group] = {}
        self.home: dict[int, int] = {}  # node -> group index
        self.decisions: list[Decision] = []
        self.counter = 0
        self.users = graph.users()

    # -- helpers ---------------------------------------------------------------------------------
    def base(self, i: int) -> int:
        """Follow movement ops back to the value they view (a materialized movement is a value)."""
        while self.g.nodes[i].op in MOVEMENT and i not in self.home:
            i = self.g.nodes[i].srcs[0]
        return i

    def computed(self, i: int) -> bool:
        return i in self.home

    def alias(self, s: int, grp: _Group) -> bool:
        """A reshape that only adds or drops the unit axis of a row value of `grp` is that value."""
        n = self.g.nodes[s]
        src = n.srcs[0] if n.srcs else -1
        return (n.op is Op.RESHAPE and s not in self.home and self.home.get(src) == grp.index
                and grp.spaces[src] == "row" and n.shape in row_shapes(grp.domain, grp.axis))

    def inside(self, grp: _Group, n: Node) -> list[tuple[int, tuple[int, ...], str]]:
        """n's sources that are values of `grp`: (node, shape as n reads it, space)."""
        out = []
        for s in n.srcs:
            if self.home.get(s) == grp.index:
                out.append((s, self.g.nodes[s].shape, grp.spaces[s]))
            elif self.alias(s, grp):
                out.append((self.g.nodes[s].srcs[0], self.g.nodes[s].shape, "row"))
        return out

    def views_of(self, grp: _Group, n: Node) -> str | None:
        """Why n can't share a region with `grp`'s value it reads through a view (None if it doesn't):
        a viewed value must be materialized before the kernel that reads it runs."""
        for s in n.srcs:
            b = self.base(s)
            if b != s and self.home.get(b) == grp.index and not self.alias(s, grp):
                return f"%{s} is a {self.g.nodes[s].op.value} of %{b}: %{b} is materialized and read through a view"
        return None

    def external_inputs(self, grp: _Group) -> set[int]:
        return {self.base(s) for u in grp.nodes for s in self.g.nodes[u].srcs
                if self.home.get(self.base(s)) != grp.index and self.g.nodes[self.base(s)].op is not Op.CONST}

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
        if len(grp.nodes) >= MAX_NODES or len(self.external_inputs(grp) | set(n.srcs)) > MAX_INPUTS:
            return None, FOOTPRINT
        viewed = self.views_of(grp, n)
        if viewed:
            return None, viewed
        inside = self.inside(grp, n)
        if n.op in REDUCE:
            src = self.g.nodes[n.srcs[0]]
            if src.shape != dom:
                return None, f"reduces {list(src.shape)}, the region iterates {list(dom)}"
            if n.attr("axes") != (grp.loop_axis,):
                return None, f"reduces axis {n.attr('axes')[0]}, the region's loop runs along axis {grp.loop_axis}"
            if inside and inside[0][2] != "elem":
                return None, "reduces row values again (a reduction of a reduction is another pass over other data)"
            return "row", f"reduction over the last axis of the region's domain {list(dom)}"
        if n.shape == dom:
            for s, shape, space in inside:
                if space == "row" and _padded(shape, dom) != row_shapes(dom, grp.axis)[0] and len(dom) > 1:
                    return None, (f"%{s} {list(shape)} would broadcast along another axis than the one "
                                  "it was reduced over")
            return "elem", f"same domain {list(dom)}"
        if n.shape in row_shapes(dom, grp.axis) and inside and all(space == "row" for _, _, space in inside):
            if all(shape == n.shape or shape == () for _, shape, _ in inside):
                return "row", f"per-row math on the row values of {list(dom)}"
        return None, f"shape {list(n.shape)} is neither the region's domain {list(dom)} nor its row shape"

    def compatible(self, a: _Group, b: _Group) -> str | None:
        """Why groups a and b can't become one (None if they can): every edge between them must be
        legal inside one region."""
        for x, y in ((a, b), (b, a)):
            for u in x.nodes:
                n = self.g.nodes[u]
                viewed = self.views_of(y, n)
                if viewed:
                    return viewed
                for s, shape, space in self.inside(y, n):
                    if n.op in REDUCE and space != "elem":
                        return f"%{u} would reduce row values of %{s} again"
                    if x.spaces[u] == "row" and space != "row":
                        return f"per-row %{u} would read per-element %{s}"
                    if x.spaces[u] == "elem" and space == "row" and len(a.domain) > 1 \
                            and _padded(shape, a.domain) != row_shapes(a.domain, a.axis)[0]:
                        return f"%{s} {list(shape)} would broadcast along another axis"
        return None

    # -- the pass ------------------------------------------------------------------------------------
    def new_group(self, n: Node, kind: str = "kernel", reason: str = "") -> _Group:
        gi, self.counter = self.counter, self.counter + 1
        dom = self.g.nodes[n.srcs[0]].shape if n.op in REDUCE else n.shape
        if kind == "mlx":
            dom = n.shape
        grp = _Group(gi, dom, kind, reason=reason)
        self.groups[gi] = grp
        self.place(grp, n, "row" if n.op in REDUCE else "elem")
        return grp

    def place(self, grp: _Group, n: Node, space: str) -> None:
        grp.nodes.append(n.id)
        grp.spaces[n.id] = space
        self.home[n.id] = grp.index

    def merge(self, into: _Group, other: _Group) -> None:
        crossing = [(s, u) for u in into.nodes + other.nodes for s in self.g.nodes[u].srcs
                    if {self.home.get(s), self.home[u]} == {into.index, other.index}]
        for i in other.nodes:
            self.home[i] = into.index
        into.nodes.extend(other.nodes)
        into.spaces.update(other.spaces)
        del self.groups[other.index]
        for s, u in crossing:
            self.decide(s, u, True, f"fan-in merge: both sides iterate {list(into.domain)}")

    def over_cap(self, a: _Group, b: _Group) -> bool:
        """Would groups a and b together pass a kernel's footprint cap?"""
        return (len(a.nodes) + len(b.nodes) > MAX_NODES
                or len(self.external_inputs(a) | self.external_inputs(b)) > MAX_INPUTS)

    def prologue(self, other: _Group, home: _Group, differs: str) -> str | None:
        """Why `other`, on a shape that broadcasts to home's domain, can't be recomputed inside
        `home` as a broadcast prologue (None if it can): a few cheap elementwise ops used only there."""
        if home.axis is not None or other.axis is not None or "row" in other.spaces.values():
            return differs
        nodes = [self.g.nodes[i] for i in other.nodes]
        costly = [n for n in nodes if n.op not in RECOMPUTED]
        if costly or len(nodes) > MAX_RECOMPUTED:
            what = f"{costly[0].op.value} is no cheap op" if costly else f"more than {MAX_RECOMPUTED} ops"
            return f"{differs}, and recomputing it at each element costs too much ({what})"
        used = set(other.nodes) | set(home.nodes)
        if any(i in self.g.outputs or not set(self.users[i]) <= used for i in other.nodes):
            return f"{differs}, and its values are used elsewhere, so they are materialized once"
        return FOOTPRINT if self.over_cap(home, other) else None

    def absorb(self, into: _Group, other: _Group) -> None:
        """`other`'s nodes become per-element values of `into` (each recomputed at every element)."""
        crossing = [(s, u) for u in into.nodes for s in self.g.nodes[u].srcs if self.home.get(s) == other.index]
        for i in other.nodes:
            self.place(into, self.g.nodes[i], "elem")
        del self.groups[other.index]
        for s, u in crossing:
            self.decide(s, u, True, f"broadcast prologue: %{s} {list(self.g.nodes[s].shape)} is computed "
                                    f"again at each element of {list(into.domain)}")

    def decide(self, producer: int, consumer: int, fused: bool, reason: str) -> None:
        """Record the decision on one edge; a later decision (e.g. a pull) replaces an earlier one."""
        self.decisions = [d for d in self.decisions if (d.producer, d.consumer) != (producer, consumer)]
        self.decisions.append(Decision(producer, consumer, fused, reason))

    def visit(self, n: Node) -> None:
        if n.op in REDUCE:
            axes = n.attr("axes")
            rank = len(self.g.nodes[n.srcs[0]].shape)
            if rank and len(axes) != 1:
                grp = self.new_group(n, "mlx", f"reduction over axes {list(axes)} at once (canonicalization "
                                               "splits these; this one was not)")
                for s in n.srcs:
                    if self.computed(self.base(s)):
                        self.decide(self.base(s), n.id, False, grp.reason)
                return
            if rank and axes[0] != rank - 1:
                src = n.srcs[0]
                grp = self.groups.get(self.home.get(src, -1))
                if grp is not None and grp.axis == axes[0]:  # another pass of a permuted loop (softmax over axis 0)
                    space, why = self.space_in(grp, n)
                    if space:
                        self.place(grp, n, space)
                        self.decide(src, n.id, True, why)
                        return
                self.reduce_across(n, axes[0])
                return
        sources = {s: self.base(s) for s in n.srcs if self.computed(self.base(s))}
        origin = {b: self.home[b] for b in sources.values()}  # groups before any merge below
        producers = list(dict.fromkeys(origin.values()))
        home, why = None, {}
        for gi in producers:
            space, why[gi] = self.space_in(self.groups[gi], n)
            if space and any(self.reaches(o, gi) for o in set(producers) - {gi}):
                space, why[gi] = None, "fusing would create a cycle between kernels"
            if space:
                home = self.groups[gi]
                self.place(home, n, space)
                break
        if home is None:
            home = self.new_group(n)
        for gi in producers:
            if gi == home.index:
                continue
            other = self.groups[gi]
            if other.kind != "kernel" or home.kind != "kernel":
                problem = why.get(gi) or f"%{other.nodes[0]} is left to MLX ({other.reason})"
            elif other.domain != home.domain:
                problem = f"domain {list(other.domain)} differs from {list(home.domain)}"
                if _broadcasts(other.domain, home.domain):
                    problem = self.prologue(other, home, problem)
                    if problem is None:
                        self.absorb(home, other)
                        why[gi] = (f"broadcast prologue: its {list(other.domain)} is computed again at "
                                   f"each element of {list(home.domain)}")
                        continue
                    why[gi] = problem  # says more than that n's shape differs from other's domain
            elif other.loop_axis != home.loop_axis:
                problem = f"loops run along axis {other.loop_axis} and {home.loop_axis}"
            elif self.over_cap(home, other):
                problem = FOOTPRINT
            else:
                problem = self.compatible(home, other)
            if problem is None and (self.reaches(home.index, gi, frozenset({gi}))
                                    or self.reaches(gi, home.index, frozenset({home.index}))):
                problem = "fusing would create a cycle between kernels"
            if problem is None:
                self.merge(home, other)
                why[gi] = f"fan-in: both sides iterate {list(home.domain)}"
            else:
                why.setdefault(gi, problem)
        if home.axis is not None:  # a prologue whose every user is in the permuted loop now joins it
            for b in sources.values():
                if self.pull(home, b):  # (False for one already in it)
                    why[origin[b]] = "same region (a prologue of the permuted loop: all its users are in it)"
                    for u in self.users[b]:
                        if u != n.id:
                            self.decide(b, u, True, why[origin[b]])
        for s, b in sources.items():
            fused = self.home[b] == home.index and (b == s or self.alias(s, home))
            reason = why.get(origin[b], "same region")
            if not fused and self.home[b] == home.index:
                reason = self.views_of(home, n) or reason
            self.decide(b, n.id, fused, reason)

    def reduce_across(self, n: Node, axis: int) -> None:
        """A reduction over a middle axis: a new region whose loop moves that axis innermost, taking
        in the elementwise chain that feeds only it (computed in the same permuted order)."""
        grp = self.new_group(n)
        grp.axis = axis
        src = n.srcs[0]
        if not self.computed(self.base(src)):
            return
        if self.pull(grp, src):
            self.decide(src, n.id, True, f"single-consumer prologue of the reduction over axis {axis}, "
                                         "computed in its loop order")
        else:
            self.decide(self.base(src), n.id, False, f"reduction over axis {axis} runs a permuted loop; "
                                                     f"%{self.base(src)} is used elsewhere or is no elementwise "
                                                     "value of the same shape, so it is materialized")

    def pull(self, grp: _Group, i: int) -> bool:
        """Move elementwise node i (and, recursively, its own single-consumer producers) into `grp`
        when everything that uses it is already there."""
        n = self.g.nodes[i]
        old = self.groups.get(self.home.get(i, -1))
        if (old is None or old is grp or old.kind != "kernel" or old.axis is not None
                or "row" in old.spaces.values() or n.op not in ELEMENTWISE or n.shape != grp.domain
                or i in self.g.outputs or not set(self.users[i]) <= set(grp.nodes)):
            return False
        old.nodes.remove(i)
        del old.spaces[i]
        if not old.nodes:
            del self.groups[old.index]
        self.place(grp, n, "elem")
        for s in n.srcs:
            if self.computed(s) and (self.home[s] == grp.index or self.pull(grp, s)):
                self.decide(s, i, True, "same region (pulled into the permuted loop with its consumer)")
        return True

    def leave_to_mlx(self, n: Node) -> None:
        """GEMM, scans and indexing run in MLX; what feeds them and what they feed fuse around them."""
        why = {Op.MATMUL: "matmul stays with MLX (GEMM); its elementwise epilogue is fused after it"}.get(
            n.op, f"{op_class(n.op).lower()} op {n.op.value} is left to MLX; fusion stops at it")
        self.new_group(n, "mlx", why)
        for s in n.srcs:
            if self.computed(self.base(s)):
                self.decide(self.base(s), n.id, False, why)

    def run(self) -> Partition:
        for n in self.g.nodes:
            if n.op in OPAQUE:
                self.leave_to_mlx(n)
            elif n.op in ELEMENTWISE or n.op in REDUCE:
                self.visit(n)
            elif n.op in MOVEMENT and view_through(self.g, n.id, frozenset(self.home)) is None:
                grp = self.new_group(n, "mlx", f"a {n.op.value} of a non-contiguous view is no view: "
                                               "MLX copies it")
                self.decide(self.base(n.srcs[0]), n.id, False, grp.reason)
        return self.finish()

    def finish(self) -> Partition:
        g = self.g
        # a value leaves its region when it is an output or another region reads it (perhaps viewed)
        materialize = {self.base(o) for o in g.outputs}
        for gi, grp in self.groups.items():
            for u in grp.nodes:
                materialize.update(b for b in map(self.base, g.nodes[u].srcs) if self.home.get(b, gi) != gi)
        regions = []
        for k, gi in enumerate(self.topological_order()):
            grp = self.groups[gi]
            nodes = tuple(sorted(grp.nodes))
            ins: list[int] = []
            for i in nodes:
                for b in map(self.base, g.nodes[i].srcs):
                    if self.home.get(b) != gi and g.nodes[b].op is not Op.CONST and b not in ins:
                        ins.append(b)
            regions.append(Region(k, grp.kind, nodes, grp.domain, tuple(sorted(grp.spaces.items())),
                                  tuple(i for i in nodes if i in materialize), tuple(ins), grp.reason,
                                  grp.axis))
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


def _broadcasts(shape: tuple[int, ...], domain: tuple[int, ...]) -> bool:
    """Does `shape` broadcast to `domain` (numpy's rules) without being it?"""
    if shape == domain or len(shape) > len(domain):
        return False
    return all(a in (1, b) for a, b in zip(reversed(shape), reversed(domain)))


def fuse(graph: Graph) -> Partition:
    """Partition `graph` (canonical) into fused regions, recording every fusion decision."""
    return _Fuser(graph).run()

