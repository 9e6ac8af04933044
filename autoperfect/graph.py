"""GraphIR: the SSA graph a traced MLX function becomes.

A `Node` is an immutable value (op, dtype, shape, srcs, attrs); a `Graph` is a topologically ordered
tuple of nodes whose ids are their positions. Passes take a graph and return a new one.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Sequence

from . import dtypes
from .ops import ARITY, COMPOSITE, ELEMENTWISE, MOVEMENT, PREDICATE, REDUCE, Op


def freeze(value: Any) -> Any:
    """Attributes are stored as nested tuples so nodes hash and compare structurally."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class Node:
    id: int
    op: Op
    dtype: str
    shape: tuple[int, ...]
    srcs: tuple[int, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()
    loc: str = field(default="", compare=False)  # the user's source line, for messages and reports

    def attr(self, key: str, default: Any = None) -> Any:
        return dict(self.attrs).get(key, default)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def to_json(self) -> dict:
        out = {"id": self.id, "op": self.op.value, "dtype": self.dtype, "shape": list(self.shape),
               "srcs": list(self.srcs), "attrs": {k: _jsonable(v) for k, v in self.attrs}}
        if self.loc:
            out["loc"] = self.loc
        return out

    @staticmethod
    def from_json(d: dict) -> "Node":
        return Node(d["id"], Op(d["op"]), d["dtype"], tuple(d["shape"]), tuple(d["srcs"]),
                    make_attrs(d["attrs"]), d.get("loc", ""))


def make_attrs(attrs: dict) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, freeze(v)) for k, v in attrs.items()))


def attrs_key(attrs: tuple[tuple[str, Any], ...]) -> tuple:
    """Attributes as a sharing key: 0.0 and -0.0 compare equal in Python but are different constants."""
    return tuple((k, (type(v).__name__, v.hex()) if isinstance(v, float) else v) for k, v in attrs)


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


@dataclass(frozen=True)
class Graph:
    name: str
    nodes: tuple[Node, ...]
    outputs: tuple[int, ...]

    @cached_property  # a program asks at every call (the graph is immutable)
    def inputs(self) -> tuple[Node, ...]:
        return tuple(sorted((n for n in self.nodes if n.op is Op.INPUT), key=lambda n: n.attr("index")))

    def users(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for s in n.srcs:
                out[s].append(n.id)
        return out

    def downstream(self, sources) -> set[int]:
        """`sources` and every node their values reach."""
        users, seen = self.users(), set(sources)
        todo = list(seen)
        while todo:
            for u in users[todo.pop()]:
                if u not in seen:
                    seen.add(u)
                    todo.append(u)
        return seen

    def dead_after(self) -> dict[int, tuple[int, ...]]:
        """{node id: the values whose last reader it is}: an evaluator that drops them there holds
        the graph's live values only, not every node's (the outputs are never dropped)."""
        last = {s: n.id for n in self.nodes for s in n.srcs}
        for o in self.outputs:
            last.pop(o, None)
        dead: dict[int, tuple[int, ...]] = {}
        for s, n in last.items():
            dead[n] = dead.get(n, ()) + (s,)
        return dead

    def peak_elements(self) -> int:
        """The most elements an evaluator that drops dead values (`dead_after`) holds at once."""
        dead, live, peak = self.dead_after(), 0, 0
        for n in self.nodes:
            live += math.prod(n.shape)
            peak = max(peak, live)
            live -= sum(math.prod(self.nodes[s].shape) for s in dead.get(n.id, ()))
        return peak

    def to_json(self) -> dict:
        return {"name": self.name, "nodes": [n.to_json() for n in self.nodes],
                "outputs": list(self.outputs)}

    @staticmethod
    def from_json(d: dict) -> "Graph":
        return Graph(d["name"], tuple(Node.from_json(n) for n in d["nodes"]), tuple(d["outputs"]))

    def digest(self) -> str:
        """Structural hash: the same computation gives the same digest (source lines excluded)."""
        body = json.dumps([[n.op.value, n.dtype, list(n.shape), list(n.srcs), _jsonable(n.attrs)]
                           for n in self.nodes] + [list(self.outputs)], sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def pretty(self) -> str:
        lines = [f"graph {self.name}:"]
        for n in self.nodes:
            attrs = ", ".join(f"{k}={v}" for k, v in n.attrs)
            srcs = ", ".join(f"%{s}" for s in n.srcs)
            args = ", ".join(a for a in (srcs, attrs) if a)
            lines.append(f"  %{n.id}: {n.dtype}{list(n.shape)} = {n.op.value}({args})")
        lines.append("  return " + ", ".join(f"%{o}" for o in self.outputs))
        return "\n".join(lines)


class GraphError(ValueError):
    pass


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            raise GraphError("shapes " + " and ".join(str(list(s)) for s in shapes) + " do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def validate(g: Graph) -> Graph:
    """Check the invariants every pass relies on; return the graph so calls can be chained."""
    seen_inputs = set()
    for i, n in enumerate(g.nodes):
        where = f"graph {g.name} node %{n.id} ({n.op.value})"
        if n.id != i:
            raise GraphError(f"{where}: id does not match position {i}")
        if any(s >= i or s < 0 for s in n.srcs):
            raise GraphError(f"{where}: sources {n.srcs} are not earlier nodes")
        if ARITY[n.op] is not None and len(n.srcs) != ARITY[n.op]:
            raise GraphError(f"{where}: expects {ARITY[n.op]} sources, has {len(n.srcs)}")
        dtypes.check(n.dtype)
        src = [g.nodes[s] for s in n.srcs]
        if n.op is Op.INPUT:
            seen_inputs.add(n.attr("index"))
        elif n.op in ELEMENTWISE:
            want = broadcast_shapes(*(s.shape for s in src))
            if n.shape != want:
                raise GraphError(f"{where}: shape {n.shape} is not the broadcast {want}")
            if n.op in PREDICATE and n.dtype != "bool":
                raise GraphError(f"{where}: a predicate must be bool")
        elif n.op in REDUCE or n.op in (Op.MEAN, Op.VAR, Op.STD, Op.LOGSUMEXP):
            axes = n.attr("axes")
            if n.shape != reduced_shape(src[0].shape, axes, n.attr("keepdims")):
                raise GraphError(f"{where}: shape {n.shape} does not match reducing axes {axes}")
        elif n.op in (Op.SOFTMAX, Op.LOG_SOFTMAX):
            if n.shape != src[0].shape:
                raise GraphError(f"{where}: softmax keeps its input shape")
        elif n.op is Op.RESHAPE:
            if n.size != src[0].size:
                raise GraphError(f"{where}: reshape changes the element count")
        elif n.op is Op.TRANSPOSE:
            perm = n.attr("perm")
            if sorted(perm) != list(range(len(src[0].shape))):
                raise GraphError(f"{where}: {perm} is not a permutation")
        elif n.op is Op.BROADCAST:
            broadcast_shapes(src[0].shape, n.shape)
    if seen_inputs != set(range(len(seen_inputs))):
        raise GraphError(f"graph {g.name}: input indices {sorted(seen_inputs)} are not 0..n-1")
    if not g.outputs or any(o < 0 or o >= len(g.nodes) for o in g.outputs):
        raise GraphError(f"graph {g.name}: outputs {g.outputs} do not name nodes")
    assert not (COMPOSITE & MOVEMENT)
    return g


class Builder:
    """Appends nodes in SSA order; with `cse`, an identical existing node (same op, srcs, attrs) is reused."""

    def __init__(self, name: str, cse: bool = True):
        self.name = name
        self.cse = cse  # the tracer records faithfully; passes rebuild with sharing
        self.nodes: list[Node] = []
        self._index: dict[tuple, int] = {}

    def add(self, op: Op, dtype: str, shape: Iterable[int], srcs: Iterable[int] = (),
            attrs: dict | None = None, loc: str = "") -> int:
        node = Node(len(self.nodes), op, dtype, tuple(shape), tuple(srcs), make_attrs(attrs or {}), loc)
        key = (node.op, node.dtype, node.shape, node.srcs, attrs_key(node.attrs))
        if self.cse and key in self._index and op is not Op.INPUT:
            return self._index[key]
        self.nodes.append(node)
        self._index[key] = node.id
        return node.id

    def node(self, i: int) -> Node:
        return self.nodes[i]

    def inline(self, graph: Graph, inputs: Sequence[int] | None = None, loc: str = "") -> list[int]:
        """`graph`'s nodes appended here; the new id of each of its nodes, by position. Its inputs are
        the nodes `inputs` (by input index) where given, else inputs here too; a node without a
        source line takes `loc`."""
        new: list[int] = []
        for n in graph.nodes:
            if inputs is not None and n.op is Op.INPUT:
                new.append(inputs[n.attr("index")])
            else:
                new.append(self.add(n.op, n.dtype, n.shape, [new[s] for s in n.srcs], dict(n.attrs), n.loc or loc))
        return new

    def build(self, outputs: Iterable[int]) -> Graph:
        return validate(Graph(self.name, tuple(self.nodes), tuple(outputs)))
