"""Fusion: kernel counts for the config ops and adversarial graphs, and the partition invariants
(coverage, dependency order, a reason for every refusal) on every graph we can build."""

from __future__ import annotations


import json

import mlx.core as mx
import pytest

from autoperfect import canon, fuse
from autoperfect.fuse import Partition
from autoperfect.graph import Graph
from autoperfect.ops import ELEMENTWISE, MOVEMENT, REDUCE, Op
from autoperfect.trace import trace

from op_table import CASES, CONFIG, Case, trace_case

KNOWN_BUGS: dict = {}  # library bugs this file pins, by case name: none open


def canonical(fn, shapes) -> Graph:
    return canon.canonicalize(trace(fn, [(n, s, "float32") for n, s in shapes]))


def computed(g: Graph) -> set[int]:
    return {n.id for n in g.nodes if n.op in ELEMENTWISE or n.op in REDUCE}


def base(g: Graph, i: int, placed=frozenset()) -> int:
    """The value a movement chain views; a movement that is itself placed (copied by MLX) is a value."""
    while g.nodes[i].op in MOVEMENT and i not in placed:
        i = g.nodes[i].srcs[0]
    return i


def is_row_alias(g: Graph, r, s: int) -> bool:
    """A reshape that only adds or drops the unit axis of a row value is that value."""
    n = g.nodes[s]
    return n.op is Op.RESHAPE and n.srcs[0] in r.nodes and r.space(n.srcs[0]) == "row"


def check_partition(p: Partition) -> None:
    """The invariants every later stage relies on."""
    g = p.graph
    placed = [i for r in p.regions for i in r.nodes]
    moved = {i for i in placed if g.nodes[i].op in MOVEMENT}
    assert sorted(set(placed) - moved) == sorted(computed(g)), "every computed node is in exactly one region"
    assert len(placed) == len(set(placed))
    assert all(r.kind == "mlx" for r in p.regions for i in r.nodes if i in moved), "only MLX copies movements"
    frozen = frozenset(moved)
    assert [r.index for r in p.regions] == list(range(len(p.regions)))
    available = {n.id for n in g.nodes if n.op is Op.INPUT}
    for r in p.regions:
        assert r.kind in ("kernel", "mlx") and r.nodes
        assert dict(r.spaces).keys() == set(r.nodes) and set(dict(r.spaces).values()) <= {"elem", "row"}
        if r.kind == "mlx":
            assert r.reason, f"region {r.index} is left to MLX without a reason"
        assert not set(r.inputs) & set(r.nodes), f"region {r.index} lists its own node as an input"
        for i in r.inputs:
            assert i in available, f"region {r.index} reads %{i} before a region produces it"
        for i in r.nodes:  # every value read from outside, through views, is ready and listed
            for s in g.nodes[i].srcs:
                b = base(g, s, frozen)
                if b in r.nodes:
                    assert b == s or is_row_alias(g, r, s), f"region {r.index}: %{i} reads its own %{b} through a view"
                elif g.nodes[b].op is not Op.CONST:
                    assert b in available and b in r.inputs, f"region {r.index}: %{i} reads unlisted %{b}"
        assert set(r.outputs) <= set(r.nodes)
        for i in r.nodes:  # a kernel reduces per-element values only: a reduction of rows is another pass
            if g.nodes[i].op in REDUCE and r.kind == "kernel" and g.nodes[i].srcs[0] in r.nodes:
                assert r.space(g.nodes[i].srcs[0]) == "elem", f"region {r.index}: %{i} reduces row values"
        available.update(r.outputs)
    for o in g.outputs:
        b = base(g, o, frozen)
        assert b in available or g.nodes[b].op is Op.CONST, f"graph output %{o} is never materialized"
    for d in p.decisions:
        assert d.producer in set(placed) and d.consumer in set(placed)
        if d.fused:
            assert p.region_of(d.producer) is p.region_of(d.consumer), f"{d} fused across regions"
        else:
            assert d.reason.strip(), f"{d} is refused without a reason"
            assert p.region_of(d.producer) is not p.region_of(d.consumer), f"{d} refused inside one region"
    json.dumps(p.to_json(), sort_keys=True)


def kinds(p: Partition) -> list[str]:
    return [r.kind for r in p.regions]


# -- the six config ops ----------------------------------------------------------------------------


SIX = ("chain", "gelu_tanh", "softmax", "layernorm", "rmsnorm", "add_rmsnorm")


def test_config_has_the_six_ops():
    assert {f"config_{name}" for name in SIX} <= {c.name for c in CONFIG}


@pytest.mark.parametrize("case", [c for c in CONFIG if c.name[len("config_"):] in SIX], ids=repr)
def test_config_op_is_one_kernel(case: Case):
    p = fuse.fuse(canon.canonicalize(trace_case(case)))
    check_partition(p)
    assert kinds(p) == ["kernel"], p.to_json()["summary"]
    assert all(d.fused for d in p.decisions)
    assert p.regions[0].domain == max((shape for _, shape, _ in case.inputs), key=len)


# -- adversarial graphs ----------------------------------------------------------------------------


def diamond(x):
    a = x * 2
    b = mx.exp(a)
    return a + b


def fan_out(x):
    a = mx.exp(x)
    return a * 2, a + 1


def fan_in(x, y):
    return mx.exp(x) * 2 + mx.log(mx.abs(y) + 1) * 3


def fan_in_other_domain(x, w):
    return mx.exp(x) + mx.log(mx.abs(w) + 1)


def scaled_by_weight(x, w):  # Gemma's RMSNorm scales by 1 + w
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * (1 + w)


def scaled_by_row(x, c):
    return x * (mx.abs(c) * 2)


def weight_used_twice(x, w):
    v = w + 1
    return x * v, v


def long_weight_chain(x, w):
    return x * (((w + 1) * 2 + 3) * 4 + 5)


def reduction_of_reduction(x):
    return mx.sum(x - mx.max(x, axis=-1, keepdims=True), axis=-1)


def row_math(x):
    s = mx.sum(x, axis=-1, keepdims=True)
    return x / (s * s + 1)


def reduce_axis0(x):
    return mx.sum(x * 2, axis=0)


def reduce_axis0_input(x):
    return mx.max(x, axis=0) + 1


def reduce_axis0_feeds_back(x):
    a = mx.exp(x)
    return a * mx.sum(a, axis=0)


def reduce_axis0_feeds_back_and_out(x):
    a = mx.exp(x)
    return a * mx.sum(a, axis=0), a


def softmax_axis0(x):
    return mx.softmax(x, axis=0)


def softmax_axis0_scaled(x, w):
    return mx.softmax(x * w, axis=0)


def batch_norm(x, w):
    return (x - mx.mean(x, axis=0)) * mx.rsqrt(mx.var(x, axis=0) + 1e-5) * w


def reduce_axis0_then_last(x):
    return mx.sum(x - mx.max(x, axis=0), axis=-1)


def transpose_computed(x):
    return (x * 2).T + 1


def transpose_output(x):
    return mx.exp(x).T


def reshape_row(x):
    return x - mx.reshape(mx.max(x, axis=-1), (3, 1))


def view_of_own_row(x):
    y = x * 2
    return y - mx.expand_dims(mx.max(y, axis=-1), -1)


def scalar_reduce(v):
    return v - mx.max(v)


X = [("x", (3, 7))]
XY = [("x", (3, 7)), ("y", (3, 7))]

ADVERSARIAL = [
    # (fn, inputs, region kinds in order, refused decisions: (producer op, consumer op, word in reason))
    (diamond, X, ["kernel"], []),
    (fan_out, X, ["kernel"], []),
    (fan_in, XY, ["kernel"], []),
    (fan_in_other_domain, [("x", (3, 7)), ("w", (7,))], ["kernel", "kernel"], [("log", "add", "domain [7]")]),
    # a few cheap ops on a shape that broadcasts into the region are computed again at each element
    (scaled_by_weight, [("x", (3, 7)), ("w", (7,))], ["kernel"], []),
    (scaled_by_row, [("x", (3, 7)), ("c", (3, 1))], ["kernel"], []),
    (weight_used_twice, [("x", (3, 7)), ("w", (7,))], ["kernel", "kernel"], [("add", "mul", "used elsewhere")]),
    (long_weight_chain, [("x", (3, 7)), ("w", (7,))], ["kernel", "kernel"], [("add", "mul", "more than 4 ops")]),
    (reduction_of_reduction, X, ["kernel"], []),
    (row_math, X, ["kernel"], []),
    (reduce_axis0, X, ["kernel"], []),  # the prologue x*2 feeds only the sum: pulled into its loop
    (reduce_axis0_input, X, ["kernel"], []),  # + 1 is per-row math on the column maxima
    # the product is per-element math of the sum's permuted loop, a second pass over the materialized exp
    # a prologue of a permuted loop joins it once every user of it is there (exp computed in each pass)
    (reduce_axis0_feeds_back, X, ["kernel"], []),
    (reduce_axis0_feeds_back_and_out, X, ["kernel", "kernel"], [("exp", "sum", "used elsewhere"), ("exp", "mul", "cycle")]),
    (softmax_axis0, X, ["kernel"], []),  # max, exp, sum and divide: three passes of one permuted loop
    (softmax_axis0_scaled, [("x", (3, 7)), ("w", (7,))], ["kernel"], []),  # x * w feeds the max and the exp
    (batch_norm, [("x", (3, 7)), ("w", (7,))], ["kernel"], []),  # statistics without keepdims read as with
    (reduce_axis0_then_last, X, ["kernel", "kernel"], [("sub", "sum", "loop runs along axis 0")]),
    (transpose_computed, X, ["kernel", "kernel"], [("mul", "add", "transpose")]),
    (transpose_output, X, ["kernel"], []),
    (reshape_row, X, ["kernel"], []),  # a unit-axis reshape of a row value is that value
    (scalar_reduce, [("v", (7,))], ["kernel"], []),
]


@pytest.mark.parametrize("fn, inputs, expected, refused", ADVERSARIAL,
                         ids=[r[0].__name__ for r in ADVERSARIAL])
def test_adversarial_partition(fn, inputs, expected, refused):
    g = canonical(fn, inputs)
    p = fuse.fuse(g)
    check_partition(p)
    assert kinds(p) == expected, p.to_json()
    got = [(g.nodes[d.producer].op.value, g.nodes[d.consumer].op.value, d.reason)
           for d in p.decisions if not d.fused]
    assert len(got) == len(refused), got
    for (prod, cons, word), (gp, gc, reason) in zip(refused, got):
        assert (prod, cons) == (gp, gc) and word in reason, (gp, gc, reason)


def test_fan_in_records_why_it_fused():
    p = fuse.fuse(canonical(fan_in, XY))
    assert any(d.fused and "fan-in" in d.reason for d in p.decisions)


def test_a_broadcast_prologue_is_computed_at_each_element_of_its_consumer():
    """The weight's cast of a bfloat16 RMSNorm computed in float32, as models write it, runs inside
    the row kernel (a per-element value read through the weight's broadcast), not as a kernel of
    its own whose output the row kernel reads back."""
    def rms(x, w):
        xf = x.astype(mx.float32)
        return (xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-5) * w.astype(mx.float32)).astype(x.dtype)

    g = canon.canonicalize(trace(rms, [("x", (3, 7), "bfloat16"), ("w", (7,), "bfloat16")]))
    (region,) = fuse.fuse(g).regions
    (cast,) = [i for i in region.nodes if g.nodes[i].op is Op.CAST and g.nodes[i].shape == (7,)]
    assert region.space(cast) == "elem" and region.outputs == tuple(g.outputs)
    (why,) = [d for d in fuse.fuse(g).decisions if d.producer == cast]
    assert why.fused and "broadcast prologue" in why.reason


def test_fan_out_materializes_both_outputs():
    g = canonical(fan_out, X)
    (region,) = fuse.fuse(g).regions
    assert set(region.outputs) == set(g.outputs)


def test_axis0_reduction_runs_a_permuted_loop_with_its_prologue():
    g = canonical(reduce_axis0, X)
    (region,) = fuse.fuse(g).regions
    assert region.kind == "kernel" and region.axis == 0 and region.loop == (1, 0)
    assert [g.nodes[i].op for i in region.nodes] == [Op.MUL, Op.SUM]
    assert [region.space(i) for i in region.nodes] == ["elem", "row"]


def test_transpose_of_computed_value_is_read_through_a_view():
    g = canonical(transpose_computed, X)
    first, second = fuse.fuse(g).regions
    (mul,) = first.nodes
    assert g.nodes[mul].op is Op.MUL and first.outputs == (mul,)
    assert second.inputs == (mul,) and second.domain == (7, 3)


def test_reduction_of_reduction_uses_both_spaces():
    g = canonical(reduction_of_reduction, X)
    (r,) = fuse.fuse(g).regions
    assert [r.space(i) for i in r.nodes] == ["row", "elem", "row"]
    assert r.reduces and r.outputs == tuple(base(g, o) for o in g.outputs)


def test_view_of_own_row_value():
    check_partition(fuse.fuse(canonical(view_of_own_row, X)))


def transpose_mixed(x):
    return mx.exp(x).T + mx.exp(x.T)


def test_view_of_another_region_next_to_a_computed_value():
    p = fuse.fuse(canonical(transpose_mixed, X))
    check_partition(p)
    assert [r.kind for r in p.regions] == ["kernel", "kernel"]


def three_chains(x, z):
    e, s, fz = mx.exp(x), mx.sin(x), mx.floor(z)  # groups 0, 1, 2; e * s merges 1 into 0
    return e * s + fz, z * 0.5                    # the next new group must not reuse index 2


def test_no_group_is_lost_after_a_merge():
    g = canonical(three_chains, [("x", (4, 5)), ("z", (4, 1))])
    (floor,) = [n.id for n in g.nodes if n.op is Op.FLOOR]
    assert fuse.fuse(g).region_of(floor) is not None


def reduce_reduced(z):
    return mx.sum(mx.max(z, axis=-1, keepdims=True), axis=-1)


def test_reduction_of_a_reduction_is_not_merged_into_its_region():
    g = canonical(reduce_reduced, [("z", (4, 1))])
    p = fuse.fuse(g)
    (rmax,) = [n.id for n in g.nodes if n.op is Op.RMAX]
    (rsum,) = [n.id for n in g.nodes if n.op is Op.SUM]
    assert p.region_of(rmax) is not p.region_of(rsum)


def test_partition_is_deterministic():
    g = canonical(reduce_axis0_feeds_back_and_out, X)
    first, second = fuse.fuse(g).to_json(), fuse.fuse(g).to_json()
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert first["graph_digest"] == g.digest()
    summary = f"{len(computed(g))} computed nodes -> 2 fused kernel(s), 0 left to MLX"
    assert first["summary"] == summary


# -- every table op --------------------------------------------------------------------------------


def table_params():
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[c.name])]
                         if c.name in KNOWN_BUGS else []) for c in CASES]


@pytest.mark.parametrize("case", table_params())
def test_table_partition_invariants(case: Case):
    g = canon.canonicalize(trace_case(case))
    if not computed(g):
        pytest.skip("nothing computed (the op is only a view or a constant)")
    check_partition(fuse.fuse(g))
