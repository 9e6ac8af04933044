"""KernelIR: one fused region as an explicit kernel, the contract every backend renders.

A kernel iterates a domain of rank k (sizes given at launch). `elem` instructions run once per
domain element; `row` instructions once per row (all axes but the last). The kernel's *signature*
(ops, dtypes, rank, argument access classes) is size-free, so one source runs at many shapes; the
`Launch` holds today's sizes and argument strides. Reductions are over the last domain axis.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Sequence

import numpy as np

from . import dtypes
from .fuse import Partition, Region, row_shapes
from .graph import Node, attrs_key, make_attrs
from .interp import apply, const_array
from .ops import ELEMENTWISE, REDUCE, Op
from .views import KernelIRError, align, view_through

SPACES = ("elem", "row")
INNER = ("contiguous", "broadcast", "strided", "row")  # how an input is read along the last axis


@dataclass(frozen=True)
class Arg:
    name: str
    dtype: str
    role: str    # "in" | "out"
    space: str   # "elem" | "row"
    inner: str   # one of INNER (outputs: "contiguous" for elem, "row" for row)

    def to_json(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "role": self.role, "space": self.space,
                "inner": self.inner}


@dataclass(frozen=True)
class Instr:
    id: int
    op: Op
    dtype: str
    space: str
    srcs: tuple[int, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()

    def attr(self, key: str, default: Any = None) -> Any:
        return dict(self.attrs).get(key, default)

    def to_json(self) -> dict:
        return {"id": self.id, "op": self.op.value, "dtype": self.dtype, "space": self.space,
                "srcs": list(self.srcs), "attrs": {k: (list(v) if isinstance(v, tuple) else v)
                                                   for k, v in self.attrs}}


@dataclass(frozen=True)
class Launch:
    dims: tuple[int, ...]                      # domain sizes (rank >= 1)
    strides: tuple[tuple[int, ...], ...]       # per input arg, one stride per domain axis (elements)
    in_shapes: tuple[tuple[int, ...], ...]     # shapes of the buffers the inputs point into
    out_shapes: tuple[tuple[int, ...], ...]

    def __hash__(self) -> int:
        # computed once: a kernel looks its launch's arguments up by it on every call, and hashing
        # four nested tuples each time cost more than the rest of that call's bookkeeping
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.dims, self.strides, self.in_shapes, self.out_shapes))
            object.__setattr__(self, "_hash", h)
        return h

    def to_json(self) -> dict:
        return {"dims": list(self.dims), "strides": [list(s) for s in self.strides],
                "in_shapes": [list(s) for s in self.in_shapes],
                "out_shapes": [list(s) for s in self.out_shapes]}

    @staticmethod
    def from_json(d: dict) -> "Launch":
        return Launch(tuple(d["dims"]), tuple(tuple(s) for s in d["strides"]),
                      tuple(tuple(s) for s in d["in_shapes"]), tuple(tuple(s) for s in d["out_shapes"]))


@dataclass(frozen=True)
class KernelIR:
    kind: str                    # "elementwise" | "row"
    rank: int
    args: tuple[Arg, ...]
    body: tuple[Instr, ...]
    launch: Launch
    binds: tuple[int, ...]       # graph node each arg reads (inputs) or writes (outputs)
    lines: tuple[str, ...] = ()  # user source lines this kernel computes
    # A per-element output of a loop that moves a middle axis innermost (`Region.loop`): the
    # domain's axis each loop axis is, for writing such outputs in the array's own order; () where
    # the loop is the domain's order or nothing is stored per element (rows are in order either way).
    loop: tuple[int, ...] = ()

    @cached_property  # asked at every call of a program (the IR is immutable)
    def inputs(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.role == "in")

    @cached_property
    def outputs(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.role == "out")

    def signature(self) -> dict:
        """Everything that decides the kernel's code, and nothing that depends on sizes."""
        return {"kind": self.kind, "rank": self.rank, "args": [a.to_json() for a in self.args],
                "body": [i.to_json() for i in self.body], **({"loop": list(self.loop)} if self.loop else {})}

    def digest(self) -> str:
        text = json.dumps(self.signature(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        return f"k_{self.digest()}"

    def to_json(self) -> dict:
        return {"name": self.name, **self.signature(), "launch": self.launch.to_json(),
                "binds": list(self.binds), "lines": list(self.lines)}

    @staticmethod
    def from_json(d: dict) -> "KernelIR":
        args = tuple(Arg(**a) for a in d["args"])
        body = tuple(Instr(i["id"], Op(i["op"]), i["dtype"], i["space"], tuple(i["srcs"]),
                           make_attrs(i["attrs"])) for i in d["body"])
        kir = KernelIR(d["kind"], d["rank"], args, body, Launch.from_json(d["launch"]),
                       tuple(d["binds"]), tuple(d["lines"]), tuple(d.get("loop", ())))
        if kir.name != d["name"]:
            raise KernelIRError(f"kernel {d['name']}: its contents hash to {kir.name}")
        return kir

    def bytes_moved(self) -> int:
        """Ideal traffic: every input buffer read once, every output written once."""
        seen, total = set(), 0
        for a, node, shape in zip(self.inputs, self.binds, self.launch.in_shapes):
            if node not in seen:
                seen.add(node)
                total += math.prod(shape) * dtypes.ITEMSIZE[a.dtype]
        for a, shape in zip(self.outputs, self.launch.out_shapes):
            total += math.prod(shape) * dtypes.ITEMSIZE[a.dtype]
        return total

    def pretty(self) -> str:
        lines = [f"kernel {self.name} ({self.kind}, rank {self.rank}, dims {list(self.launch.dims)})"]
        for a in self.args:
            lines.append(f"  arg {a.name}: {a.role} {a.dtype} {a.space} {a.inner}")
        for i in self.body:
            attrs = " ".join(f"{k}={v}" for k, v in i.attrs)
            srcs = ", ".join(f"%{s}" for s in i.srcs)
            lines.append(f"  %{i.id}: {i.space} {i.dtype} = {i.op.value}({srcs}) {attrs}".rstrip())
        return "\n".join(lines)


# -- lowering ---------------------------------------------------------------------------------------


class _Lowering:
    def __init__(self, partition: Partition, region: Region):
        self.p, self.r, self.g = partition, region, partition.graph
        self.natural = region.domain or (1,)
        self.loop = region.loop or (0,)
        self.axis = self.loop[-1]  # the reduced (innermost) axis, in the domain's own order
        self.dims = tuple(self.natural[a] for a in self.loop)
        self.rank = len(self.dims)
        self.body: list[Instr] = []
        self.args: list[Arg] = []
        self.binds: list[int] = []
        self.strides: list[tuple[int, ...]] = []
        self.in_shapes: list[tuple[int, ...]] = []
        self.memo: dict[Any, int] = {}
        self.materialized = frozenset(i for r in partition.regions for i in r.nodes)

    def emit(self, op: Op, dtype: str, space: str, srcs=(), attrs: dict | None = None) -> int:
        frozen = make_attrs(attrs or {})
        key = (op, dtype, space, tuple(srcs), attrs_key(frozen))
        if key not in self.memo:
            self.memo[key] = len(self.body)
            self.body.append(Instr(len(self.body), op, dtype, space, tuple(srcs), frozen))
        return self.memo[key]

    def site_target(self, node: Node, space: str) -> tuple[int, ...]:
        """The shape a value is read at by `node`: the domain, or a row shape (domain order)."""
        if space == "elem":
            return self.natural
        rows = row_shapes(self.natural, self.axis)
        return node.shape if node.shape in rows else rows[0]

    def load(self, src: int, node: Node, space: str) -> int:
        viewed = view_through(self.g, src, self.materialized)
        if viewed is None:
            raise KernelIRError(f"%{src} is a reshape that is not a view of its source")
        base, shape, strides = viewed
        if base in self.r.nodes:
            raise KernelIRError(f"%{src} reads this kernel's own value %{base} through a view")
        if self.g.nodes[base].op is Op.CONST:
            return self.const(self.g.nodes[base])
        target = self.site_target(node, space)
        s = align(shape, strides, target)
        if len(s) < self.rank:  # a row shape without the reduced axis: it is read with stride 0
            s = s[:self.axis] + (0,) + s[self.axis:]
        s = tuple(s[a] for a in self.loop)
        inner = "row" if space == "row" else {0: "broadcast", 1: "contiguous"}.get(s[-1], "strided")
        key = ("load", base, s, space)
        if key not in self.memo:
            k = len(self.args)
            bnode = self.g.nodes[base]
            name = bnode.attr("name") if bnode.op is Op.INPUT else f"v{base}"
            self.args.append(Arg(f"{name}_{k}", bnode.dtype, "in", space, inner))
            self.binds.append(base)
            self.strides.append(s)
            self.in_shapes.append(bnode.shape)
            self.memo[key] = self.emit(Op.LOAD, bnode.dtype, space, (), {"arg": k})
        return self.memo[key]

    def const(self, node: Node) -> int:
        size_of, minus = node.attr("size_of"), node.attr("minus", 0)
        if size_of is not None and tuple(size_of) == (self.axis,) \
                and const_array(node, "float64") == self.dims[-1] - minus:
            return self.emit(Op.CONST, node.dtype, "row", (), {"size": "last", "minus": minus})
        return self.emit(Op.CONST, node.dtype, "row", (), {"value": node.attr("value")})

    def run(self) -> KernelIR:
        value: dict[int, int] = {}
        space_of = self.r.space
        for nid in self.r.nodes:
            n = self.g.nodes[nid]
            space = self.r.space(nid)
            srcs = []
            for s in n.srcs:
                sn = self.g.nodes[s]
                if s in value:
                    srcs.append(value[s])
                elif sn.op is Op.RESHAPE and sn.srcs[0] in value and space_of(sn.srcs[0]) == "row":
                    srcs.append(value[sn.srcs[0]])  # a unit-axis reshape of a row value is that value
                elif sn.op is Op.CONST:
                    srcs.append(self.const(sn))
                else:
                    srcs.append(self.load(s, n, "elem" if n.op in REDUCE else space))
            attrs = {k: v for k, v in n.attrs if n.op not in REDUCE}
            value[nid] = self.emit(n.op, n.dtype, space, srcs, attrs)
        outs = []
        for k, nid in enumerate(self.r.outputs):
            n = self.g.nodes[nid]
            space = self.r.space(nid)
            arg = len(self.args)
            self.args.append(Arg(f"out{k}", n.dtype, "out", space, "contiguous" if space == "elem" else "row"))
            self.binds.append(nid)
            outs.append(n.shape)
            self.emit(Op.STORE, n.dtype, space, (value[nid],), {"arg": arg})
        kind = "row" if self.r.reduces else "elementwise"
        lines = tuple(sorted({self.g.nodes[i].loc for i in self.r.nodes if self.g.nodes[i].loc}))
        permuted = self.loop != tuple(range(self.rank)) and any(a.space == "elem" for a in self.args if a.role == "out")
        return validate(KernelIR(kind, self.rank, tuple(self.args), tuple(self.body),
                                 Launch(self.dims, tuple(self.strides), tuple(self.in_shapes), tuple(outs)),
                                 tuple(self.binds), lines, self.loop if permuted else ()))


def lower(partition: Partition, region: Region) -> KernelIR:
    if region.kind != "kernel":
        raise KernelIRError(f"region {region.index} is left to MLX: {region.reason}")
    return _Lowering(partition, region).run()


def validate(k: KernelIR) -> KernelIR:
    """The invariants renderers rely on; raises KernelIRError naming the broken one."""
    where = f"kernel {k.name}"
    if k.kind not in ("elementwise", "row") or k.rank < 1 or len(k.launch.dims) != k.rank:
        raise KernelIRError(f"{where}: kind {k.kind!r}, rank {k.rank}, dims {k.launch.dims}")
    n_in = len(k.inputs)
    if [a.role for a in k.args] != ["in"] * n_in + ["out"] * len(k.outputs) or not k.outputs:
        raise KernelIRError(f"{where}: arguments must be inputs then at least one output")
    if len(k.launch.strides) != n_in or any(len(s) != k.rank for s in k.launch.strides):
        raise KernelIRError(f"{where}: launch strides do not match the inputs and rank")
    stored: list[int] = []
    for i in k.body:
        if i.space not in SPACES or any(s >= i.id for s in i.srcs) or i.id != k.body.index(i):
            raise KernelIRError(f"{where}: instruction %{i.id} is malformed")
        srcs = [k.body[s] for s in i.srcs]
        if i.space == "row" and any(s.space == "elem" for s in srcs) and i.op not in REDUCE:
            raise KernelIRError(f"{where}: row instruction %{i.id} reads a per-element value")
        if i.op in REDUCE and (i.space != "row" or srcs[0].space != "elem"):
            raise KernelIRError(f"{where}: reduction %{i.id} must map elem -> row")
        if i.op is Op.LOAD and k.args[i.attr("arg")].role != "in":
            raise KernelIRError(f"{where}: load %{i.id} reads an output")
        if i.op is Op.STORE:
            arg = k.args[i.attr("arg")]
            if arg.role != "out" or arg.space != i.space or srcs[0].space != i.space:
                raise KernelIRError(f"{where}: store %{i.id} does not match its output")
            stored.append(i.attr("arg"))
        if i.op not in ELEMENTWISE and i.op not in REDUCE and i.op not in (Op.LOAD, Op.STORE, Op.CONST):
            raise KernelIRError(f"{where}: op {i.op.value} has no place in a kernel")
    if sorted(stored) != [j for j, a in enumerate(k.args) if a.role == "out"]:
        raise KernelIRError(f"{where}: every output must be stored exactly once")
    if k.kind == "row" and not any(i.op in REDUCE for i in k.body):
        raise KernelIRError(f"{where}: a row kernel without a reduction")
    if k.loop and (sorted(k.loop) != list(range(k.rank)) or k.kind != "row"):
        raise KernelIRError(f"{where}: loop {list(k.loop)} is no permutation of a row kernel's {k.rank} axes")
    return k


# -- rewrites a schedule may ask for ------------------------------------------------------------------


def constant(i: Instr, mode: str = "native", value: Any = None) -> np.ndarray:
    """Constant instruction `i`'s value (or `value`, a size it stands for) in `i`'s dtype, as the
    interpreter makes it in `mode`."""
    return const_array(Node(0, Op.CONST, i.dtype, (), (), make_attrs({"value": i.attr("value") if value is None else value})), mode)


def _const_value(i: Instr) -> float | None:
    """A float32 constant's value, or None for any other instruction."""
    if i.op is not Op.CONST or i.dtype != "float32" or i.attr("size") is not None:
        return None
    return float(constant(i))


def _split(body: Sequence[Instr], i: Instr, op: Op, value: float) -> int | None:
    """The other operand of `i` where `i` is `op` of a float32 constant of `value` and it (either
    order), else None."""
    if i.op is not op or i.dtype != "float32":
        return None
    a, b = i.srcs
    return b if _const_value(body[a]) == value else a if _const_value(body[b]) == value else None


def _gate(body: Sequence[Instr], i: Instr) -> tuple[int, int] | None:
    """(x, y) where instruction `i` is 0.5 * x * (1 + tanh(y)) in float32 (each product and the sum
    in either order), else None."""
    if i.op is not Op.MUL or i.dtype != "float32":
        return None
    for half, one in (i.srcs, i.srcs[::-1]):
        x, t = _split(body, body[half], Op.MUL, 0.5), _split(body, body[one], Op.ADD, 1.0)
        if x is not None and t is not None and body[t].op is Op.TANH and body[t].dtype == "float32":
            return x, body[t].srcs[0]
    return None


def sigmoid_form(k: KernelIR) -> KernelIR:
    """`k` with every 0.5 * x * (1 + tanh(y)) in float32 computed as x / (1 + exp(-2 * y)): the same
    value in exact arithmetic (1 + tanh(y) = 2 / (1 + e^-2y)), one exp and a division in place of
    the tanh, and free of the cancellation 1 + tanh(y) suffers for y below -1. GELU's tanh form is
    one: in float32, with an accurate exp, it kept within 0.79 of the error bound the judge takes
    from the user's formula, against 0.66 as written (docs/experiments/2026-12-06-cpu). It is for
    a schedule to ask for (Schedule.sigmoid), never a canonicalization: the judge takes its bounds
    from the canonical graph and its reference from the user's, and the rewritten formula's own
    bound is far tighter than that reference is right where the user's formula cancels. Returns `k`
    itself where there is nothing to rewrite; instructions only the rewritten ones read are dropped."""
    gates = {i.id: g for i in k.body if (g := _gate(k.body, i)) is not None}
    if not gates:
        return k
    body: list[Instr] = []
    new: dict[int, int] = {}

    def emit(op: Op, space: str, srcs=(), **attrs) -> int:
        body.append(Instr(len(body), op, "float32", space, tuple(srcs), make_attrs(attrs)))
        return len(body) - 1

    for i in k.body:
        if i.id in gates:
            x, y = (new[s] for s in gates[i.id])
            scaled = emit(Op.MUL, "elem", (emit(Op.CONST, "row", value=-2.0), y))
            new[i.id] = emit(Op.DIV, "elem", (x, emit(Op.ADD, "elem", (emit(Op.CONST, "row", value=1.0),
                                                                       emit(Op.EXP, "elem", (scaled,))))))
        else:
            body.append(Instr(len(body), i.op, i.dtype, i.space, tuple(new[s] for s in i.srcs), i.attrs))
            new[i.id] = len(body) - 1
    return validate(_without_dead(replace(k, body=tuple(body))))


def _without_dead(k: KernelIR) -> KernelIR:
    """`k` less the instructions no store reads, through any chain (loads kept: they are the ABI's)."""
    live = set()
    for i in reversed(k.body):
        if i.op in (Op.STORE, Op.LOAD) or i.id in live:
            live.add(i.id)
            live.update(i.srcs)
    index = {old: new for new, old in enumerate(sorted(live))}
    body = tuple(Instr(index[i.id], i.op, i.dtype, i.space, tuple(index[s] for s in i.srcs), i.attrs)
                 for i in k.body if i.id in live)
    return replace(k, body=body)


# -- the reference executor -------------------------------------------------------------------------


def execute(k: KernelIR, inputs: Sequence[np.ndarray], launch: Launch | None = None,
            mode: str = "native") -> list[np.ndarray]:
    """Run the kernel's instructions with numpy, one whole-domain array per instruction."""
    launch = launch or k.launch
    dims = launch.dims
    row = dims[:-1] + (1,)
    vals: dict[int, np.ndarray] = {}
    outs: dict[int, np.ndarray] = {}
    for i in k.body:
        shape = dims if i.space == "elem" else row
        if i.op is Op.LOAD:
            j = i.attr("arg")
            flat = np.ascontiguousarray(inputs[j]).reshape(-1)
            st = launch.strides[j] if i.space == "elem" else launch.strides[j][:-1] + (0,)
            view = np.lib.stride_tricks.as_strided(flat, shape, [s * flat.itemsize for s in st])
            vals[i.id] = view.astype(np.float64 if mode == "float64" and i.dtype in dtypes.FLOATS
                                     else view.dtype)
        elif i.op is Op.CONST:
            vals[i.id] = constant(i, mode, dims[-1] - i.attr("minus") if i.attr("size") == "last" else None)
        elif i.op is Op.STORE:
            outs[i.attr("arg")] = vals[i.srcs[0]]
        else:
            attrs = dict(i.attrs)
            if i.op in REDUCE:
                attrs.update(axes=(len(dims) - 1,), keepdims=True)
            node = Node(0, i.op, i.dtype, shape, (), make_attrs(attrs))
            vals[i.id] = apply(node, [vals[s] for s in i.srcs], mode)
    n_in = len(k.inputs)
    natural = tuple(np.argsort(k.loop)) if k.loop else tuple(range(len(dims)))  # a permuted loop's elem outputs
    return [np.ascontiguousarray(np.broadcast_to(outs[n_in + j], launch.dims).transpose(natural) if a.space == "elem"
                                 else np.broadcast_to(outs[n_in + j], row)).reshape(launch.out_shapes[j])
            for j, a in enumerate(k.outputs)]
