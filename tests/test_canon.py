"""Canonicalization: one structural and one numerical test per rule, plus the whole op table.

Structural: which ops the rule leaves (run alone, as its named pass). Numerical: the rewritten graph
evaluates like the traced one (float64 and native interpreters), special values included where the
rule must keep them (identities are bit-exact, -0.0 and NaN included).
"""

from __future__ import annotations

from collections import Counter

import mlx.core as mx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from autoperfect import canon, dtypes, interp
from autoperfect.graph import Builder, Graph, validate
from autoperfect.ops import COMPOSITE, ULP_BOUND, Op
from autoperfect.trace import trace

from op_table import CASES, Case, assert_close, assert_within_ulps, bit_equal, make_inputs, trace_case

PASSES = dict(canon.PASSES)

KNOWN_BUGS: dict = {}  # library bugs this file pins, by case name: none open


def op_counts(g: Graph) -> Counter:
    return Counter(n.op for n in g.nodes)


def run_pass(name: str, g: Graph) -> Graph:
    return validate(PASSES[name](g))


def check_same_values(before: Graph, after: Graph, inputs, exact: bool = False, ulps: int = 0) -> None:
    """`after` computes what `before` computes: bit-exact, within `ulps` (native), or within tolerance."""
    for mode in ("float64", "native"):
        want = interp.evaluate(before, inputs, mode)
        got = interp.evaluate(after, inputs, mode)
        for k, (w, v, out) in enumerate(zip(want, got, before.outputs)):
            dtype = before.nodes[out].dtype
            what = f"{before.name} output {k} ({mode})"
            if exact:
                assert bit_equal(v, w), f"{what}: {v} != {w}"
            elif ulps and mode == "native" and dtype == "float32":
                assert_within_ulps(v, w, ulps, what)
            else:
                # float64 differs only by reassociation; native by the rounding of extra steps
                scale = 1e-4 if mode == "float64" and dtype == "float32" else 1.0
                assert_close(v, w, dtype, what, scale=scale)


def X(*shape: int, dtype: str = "float32"):
    return [("x", shape or (4, 5), dtype)]


SPECIALS_1D = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1.0, -1.5, 3e38, -1e-40, 7.0], np.float32)

# -- decompose -------------------------------------------------------------------------------------


def hand_log_softmax() -> Graph:
    """The tracer has no log_softmax (MLX core doesn't either): built by hand to cover the Op."""
    b = Builder("log_softmax", cse=False)
    x = b.add(Op.INPUT, "float32", (4, 5), (), {"name": "x", "index": 0})
    return b.build([b.add(Op.LOG_SOFTMAX, "float32", (4, 5), [x], {"axes": (1,)})])


def _traced(fn, inputs=None) -> Graph:
    return trace(fn, inputs or X(), fn.__name__ if fn.__name__ != "<lambda>" else "f")


DECOMPOSE = [
    # (name, graph, the composite it lowers, primitives that must appear)
    ("mean", lambda: _traced(lambda x: mx.mean(x, axis=-1)), Op.MEAN, {Op.SUM, Op.DIV}),
    ("mean_all", lambda: _traced(lambda x: mx.mean(x)), Op.MEAN, {Op.SUM, Op.DIV}),
    ("var", lambda: _traced(lambda x: mx.var(x, axis=0)), Op.VAR, {Op.SUM, Op.SUB, Op.MUL, Op.DIV}),
    ("var_ddof", lambda: _traced(lambda x: mx.var(x, axis=-1, ddof=1)), Op.VAR, {Op.SUM, Op.SUB, Op.DIV}),
    ("std", lambda: _traced(lambda x: mx.std(x, axis=-1, keepdims=True)), Op.STD,
     {Op.SUM, Op.SUB, Op.MUL, Op.DIV, Op.SQRT}),
    ("logsumexp", lambda: _traced(lambda x: mx.logsumexp(x, axis=-1)), Op.LOGSUMEXP,
     {Op.RMAX, Op.ISINF, Op.WHERE, Op.SUB, Op.EXP, Op.SUM, Op.LOG, Op.ADD, Op.RESHAPE}),
    ("logsumexp_keep", lambda: _traced(lambda x: mx.logsumexp(x, axis=-1, keepdims=True)), Op.LOGSUMEXP,
     {Op.RMAX, Op.ISINF, Op.WHERE, Op.SUB, Op.EXP, Op.SUM, Op.LOG, Op.ADD}),
    ("softmax", lambda: _traced(lambda x: mx.softmax(x, axis=-1)), Op.SOFTMAX,
     {Op.RMAX, Op.SUB, Op.EXP, Op.SUM, Op.DIV}),
    ("log_softmax", hand_log_softmax, Op.LOG_SOFTMAX, {Op.RMAX, Op.SUB, Op.EXP, Op.SUM, Op.LOG}),
    ("all", lambda: _traced(lambda x: mx.all(x > 0, axis=-1)), Op.ALL, {Op.RMIN, Op.CAST}),
    ("any", lambda: _traced(lambda x: mx.any(x, axis=0)), Op.ANY, {Op.RMAX, Op.NE, Op.CAST}),
]


def test_decompose_table_covers_every_composite():
    assert {row[2] for row in DECOMPOSE} == COMPOSITE


@pytest.mark.parametrize("name, build, composite, primitives", DECOMPOSE, ids=[r[0] for r in DECOMPOSE])
def test_decompose_structure(name, build, composite, primitives):
    g = build()
    assert composite in op_counts(g)
    out = run_pass("decompose", g)
    ops = set(op_counts(out))
    assert not ops & COMPOSITE
    assert primitives <= ops, f"missing {primitives - ops}"
    # element counts are marked, so a kernel reads them from its launch sizes
    counts = [n for n in out.nodes if n.op is Op.CONST and n.attr("size_of") is not None]
    assert bool(counts) == (composite in (Op.MEAN, Op.VAR, Op.STD))
    assert [out.nodes[o].dtype for o in out.outputs] == [g.nodes[o].dtype for o in g.outputs]
    assert [out.nodes[o].shape for o in out.outputs] == [g.nodes[o].shape for o in g.outputs]


@pytest.mark.parametrize("name, build, composite, primitives", DECOMPOSE, ids=[r[0] for r in DECOMPOSE])
@pytest.mark.parametrize("specials", [False, True], ids=["normal", "specials"])
def test_decompose_values(name, build, composite, primitives, specials):
    g = build()
    case = Case(f"decompose_{name}", lambda x: x, X())
    check_same_values(g, run_pass("decompose", g), make_inputs(case, specials=specials))


LARGE_ROWS = np.array([[1e4, 1e4 - 1, 0.0], [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0]], np.float32)


def stable_lse(x):
    return mx.logsumexp(x, axis=-1)


def stable_softmax(x):
    return mx.softmax(x, axis=-1)


@pytest.mark.parametrize("fn", [
    stable_lse,
    stable_softmax,
], ids=["logsumexp", "softmax"])
def test_decompose_subtracts_the_max(fn):
    """No overflow at 1e4, and rows of +-inf keep their limits: the decomposed graph agrees with MLX."""
    g = _traced(fn, X(3, 3))
    got = interp.evaluate(run_pass("decompose", g), [LARGE_ROWS], "native")[0]
    want = np.array(fn(mx.array(LARGE_ROWS)))
    assert_close(got, want, "float32", fn.__name__)


def test_decomposed_logsumexp_where_is_float():
    out = run_pass("decompose", _traced(stable_lse, X(3, 3)))
    (where,) = [n for n in out.nodes if n.op is Op.WHERE]
    assert where.dtype == "float32"


def dtype_errors(g: Graph) -> list[str]:
    """Nodes whose dtype breaks MLX's typing: where takes its branches' dtype, arithmetic its operands'."""
    out = []
    for n in g.nodes:
        srcs = [g.nodes[s].dtype for s in n.srcs]
        if n.op is Op.WHERE and (srcs[0] != "bool" or srcs[1:] != [n.dtype, n.dtype]):
            out.append(f"%{n.id} where{srcs} -> {n.dtype}")
        if n.op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAX, Op.MIN, Op.POW) and srcs != [n.dtype, n.dtype]:
            out.append(f"%{n.id} {n.op.value}{srcs} -> {n.dtype}")
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_canonical_dtypes_follow_mlx_typing(case: Case):
    g = trace_case(case)
    assert dtype_errors(g) == []
    assert dtype_errors(canon.canonicalize(g)) == []


def test_decompose_mean_of_int_is_float():
    g = _traced(lambda i: mx.mean(i, axis=-1), [("i", (1, 2), "int32")])
    out = canon.canonicalize(g)
    value = interp.evaluate(out, [np.array([[1, 2]], np.int32)])[0]
    assert out.nodes[out.outputs[0]].dtype == "float32" and value[0] == 1.5


# -- small_powers ----------------------------------------------------------------------------------

SMALL_POWERS = [
    # (name, fn, POW nodes left, MUL nodes made)
    ("square", lambda x: x ** 2, 0, 1),
    ("cube", lambda x: x ** 3, 0, 2),
    ("power_fn_square", lambda x: mx.power(x, 2.0), 0, 1),
    ("first", lambda x: x ** 1, 0, 0),
    ("fractional", lambda x: x ** 2.5, 1, 0),
    ("fourth", lambda x: x ** 4, 1, 0),
    ("const_base", lambda x: 2.0 ** x, 1, 0),
    ("half", lambda x: x ** 2, 0, 1),
]
HALF = {"half"}


@pytest.mark.parametrize("name, fn, pows, muls", SMALL_POWERS, ids=[r[0] for r in SMALL_POWERS])
def test_small_powers_structure(name, fn, pows, muls):
    g = _traced(fn, X(dtype="float16" if name in HALF else "float32"))
    out = run_pass("small_powers", g)
    assert op_counts(out)[Op.POW] == pows
    assert op_counts(out)[Op.MUL] == muls


@pytest.mark.parametrize("name, fn, pows, muls", SMALL_POWERS, ids=[r[0] for r in SMALL_POWERS])
def test_small_powers_values(name, fn, pows, muls):
    """x*x is exact; x*x*x rounds twice, within pow's ULP bound; specials keep their value and sign."""
    dtype = "float16" if name in HALF else "float32"
    g = _traced(fn, [("x", (10,), dtype)])
    out = run_pass("small_powers", g)
    with np.errstate(over="ignore"):  # 3e38 becomes inf in float16, as it should
        x = dtypes.round_to(SPECIALS_1D.astype(np.float64), dtype).astype(dtypes.to_numpy(dtype))
    if name in ("square", "power_fn_square", "first", "half"):
        check_same_values(g, out, [x], exact=True)
    else:
        x = np.where(np.abs(x) > 1e30, 2.0, x).astype(x.dtype)  # x*x*x overflows where pow doesn't
        check_same_values(g, out, [x], ulps=ULP_BOUND[Op.POW])


# -- fold_constants --------------------------------------------------------------------------------


def fold_mul(x):
    return x * (mx.array(2.0) * 3.0)


def fold_exp(x):
    return x + mx.exp(mx.array(1.0))


def fold_chain(x):
    return x - mx.sqrt(mx.array(2.0) + 2.0) / 4


def fold_compare(x):
    return mx.where(mx.array(1.0) > 0.5, x, -x)


def fold_half(x):
    return x + mx.array(0.1, dtype=mx.float16) * 3


def fold_nothing(x):
    return x * 2.0 + 3.0


FOLD = [
    # (fn, input dtype, ops that must be gone, constant values that must appear)
    (fold_mul, "float32", {Op.MUL: 1}, {6.0}),
    (fold_exp, "float32", {Op.EXP: 0}, set()),  # numpy's expf(1) is 1 ulp from e: only counted
    (fold_chain, "float32", {Op.SQRT: 0, Op.DIV: 0}, {0.5}),
    (fold_compare, "float32", {Op.GT: 0}, {True}),
    (fold_half, "float16", {Op.MUL: 0}, {float(np.float16(np.float16(0.1) * np.float16(3)))}),
    (fold_nothing, "float32", {Op.MUL: 1, Op.ADD: 1}, {2.0, 3.0}),
]


@pytest.mark.parametrize("fn, dtype, counts, values", FOLD, ids=[r[0].__name__ for r in FOLD])
def test_fold_constants_structure(fn, dtype, counts, values):
    out = run_pass("fold_constants", _traced(fn, X(dtype=dtype)))
    after = op_counts(out)
    for op, n in counts.items():
        assert after[op] == n, f"{op.value}: {after[op]} nodes, want {n}"
    consts = {interp.const_value(n) for n in out.nodes if n.op is Op.CONST}
    assert values <= consts, f"constants {consts} lack {values}"
    # what remains computed reads at least one non-constant
    assert all(any(out.nodes[s].op is not Op.CONST for s in n.srcs) for n in out.nodes if n.srcs)


@pytest.mark.parametrize("fn, dtype, counts, values", FOLD, ids=[r[0].__name__ for r in FOLD])
@pytest.mark.parametrize("specials", [False, True], ids=["normal", "specials"])
def test_fold_constants_values(fn, dtype, counts, values, specials):
    """Folding computes in the node's own dtype, as MLX does: bit-exact in the native interpreter."""
    g = _traced(fn, X(dtype=dtype))
    out = run_pass("fold_constants", g)
    inputs = make_inputs(Case(f"fold_{fn.__name__}", fn, X(dtype=dtype)), specials=specials)
    want, got = interp.evaluate(g, inputs, "native"), interp.evaluate(out, inputs, "native")
    for w, v in zip(want, got):
        assert bit_equal(v, w)
    eager = np.array(fn(mx.array(inputs[0]).astype(getattr(mx, dtype))).astype(mx.float32))
    assert_close(eager, interp.evaluate(out, inputs, "float64")[0], dtype, fn.__name__)


# -- identities ------------------------------------------------------------------------------------

IDENTITIES = [
    # (name, fn, removed?) x + 0.0 is not x at x = -0.0 (-0 + 0 = +0), nor is x - (-0.0)
    ("mul_one", lambda x: x * 1, True),
    ("one_mul", lambda x: 1.0 * x, True),
    ("div_one", lambda x: x / 1.0, True),
    ("sub_zero", lambda x: x - 0.0, True),
    ("add_neg_zero", lambda x: x + (-0.0), True),
    ("half_mul_one", lambda x: x.astype(mx.float16) * 1.0, True),
    ("add_zero", lambda x: x + 0.0, False),
    ("sub_neg_zero", lambda x: x - (-0.0), False),
    ("mul_two", lambda x: x * 2.0, False),
    ("mul_one_broadcasts", lambda x: x * mx.broadcast_to(mx.array(1.0), (3, 10)), False),
]


@pytest.mark.parametrize("name, fn, removed", IDENTITIES, ids=[r[0] for r in IDENTITIES])
def test_identities_structure(name, fn, removed):
    g = _traced(fn, [("x", (10,), "float32")])
    out = run_pass("identities", g)
    arith = {Op.ADD, Op.SUB, Op.MUL, Op.DIV}
    left = sum(n for op, n in op_counts(out).items() if op in arith)
    assert left == (0 if removed else sum(n for op, n in op_counts(g).items() if op in arith))


@pytest.mark.parametrize("name, fn, removed", IDENTITIES, ids=[r[0] for r in IDENTITIES])
def test_identities_values_are_bit_exact(name, fn, removed):
    g = _traced(fn, [("x", (10,), "float32")])
    check_same_values(g, run_pass("identities", g), [SPECIALS_1D], exact=True)


def test_identities_drop_same_type_casts():
    b = Builder("cast", cse=False)
    x = b.add(Op.INPUT, "float32", (3,), (), {"name": "x", "index": 0})
    g = b.build([b.add(Op.CAST, "float32", (3,), [x], {"dtype": "float32"})])
    out = run_pass("identities", g)
    assert Op.CAST not in op_counts(out)
    check_same_values(g, out, [SPECIALS_1D[:3]], exact=True)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(value=st.floats(width=32, allow_nan=True, allow_infinity=True),
       row=st.sampled_from([r for r in IDENTITIES if r[2]]))
def test_identities_hold_for_every_float(value, row):
    g = _traced(row[1], [("x", (1,), "float32")])
    check_same_values(g, run_pass("identities", g), [np.array([value], np.float32)], exact=True)


# -- cse and dce -----------------------------------------------------------------------------------


def cse_repeat(x):
    return mx.exp(x) + mx.exp(x)


def cse_products(x, y):
    return (x * y) - (x * y) * 2.0, x * 2.0


def cse_chain(x):
    a = mx.sum(x * x, axis=-1)
    b = mx.sum(x * x, axis=-1)
    return a / b


def cse_signed_zeros(x):
    return x / 0.0, x / -0.0


def dce_dead_branch(x):
    _ = mx.exp(x) * 3
    return x * 2


def dce_unused_input(x, y):
    return mx.log(mx.abs(x) + 1)


CSE = [
    # (fn, inputs, op -> nodes after the cse pass, xfail reason)
    (cse_repeat, X(), {Op.EXP: 1, Op.ADD: 1}, None),
    (cse_products, X() + [("y", (4, 5), "float32")], {Op.MUL: 3, Op.SUB: 1, Op.CONST: 1}, None),
    (cse_chain, X(), {Op.MUL: 1, Op.SUM: 1, Op.DIV: 1}, None),
    (cse_signed_zeros, X(), {Op.DIV: 2, Op.CONST: 2}, None),
]


def _maybe_xfail(rows):
    return [pytest.param(*r[:-1], id=r[0].__name__,
                         marks=[pytest.mark.xfail(strict=True, reason=r[-1])] if r[-1] else [])
            for r in rows]


@pytest.mark.parametrize("fn, inputs, counts", _maybe_xfail(CSE))
def test_cse_structure(fn, inputs, counts):
    out = run_pass("cse", _traced(fn, inputs))
    after = op_counts(out)
    assert {op: after[op] for op in counts} == counts


@pytest.mark.parametrize("fn, inputs, counts", _maybe_xfail(CSE))
def test_cse_values(fn, inputs, counts):
    g = _traced(fn, inputs)
    case = Case(f"cse_{fn.__name__}", fn, tuple(tuple(i) for i in inputs), specials=True)
    check_same_values(g, run_pass("cse", g), make_inputs(case, specials=True), exact=True)


DCE = [
    # (fn, inputs, ops that must be gone, input count kept)
    (dce_dead_branch, X(), {Op.EXP}, 1),
    (dce_unused_input, X() + [("y", (4, 5), "float32")], set(), 2),
]


@pytest.mark.parametrize("fn, inputs, gone, n_inputs", DCE, ids=[r[0].__name__ for r in DCE])
def test_dce_structure(fn, inputs, gone, n_inputs):
    g = _traced(fn, inputs)
    out = run_pass("dce", g)
    assert not gone & set(op_counts(out))
    assert len(out.inputs) == n_inputs, "inputs are the ABI: never dropped"
    live = set(out.outputs)
    for n in reversed(out.nodes):
        if n.id in live:
            live.update(n.srcs)
    assert all(n.id in live or n.op is Op.INPUT for n in out.nodes), "a dead node survived"


@pytest.mark.parametrize("fn, inputs, gone, n_inputs", DCE, ids=[r[0].__name__ for r in DCE])
def test_dce_values(fn, inputs, gone, n_inputs):
    g = _traced(fn, inputs)
    case = Case(f"dce_{fn.__name__}", fn, tuple(tuple(i) for i in inputs), specials=True)
    check_same_values(g, run_pass("dce", g), make_inputs(case, specials=True), exact=True)


# -- the whole pipeline on the op table ------------------------------------------------------------


def table_params():
    out = []
    for c in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[c.name])] if c.name in KNOWN_BUGS else []
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


@pytest.mark.parametrize("case", table_params())
def test_canonical_graph_computes_the_traced_one(case: Case):
    g = trace_case(case)
    log: list[str] = []
    out = canon.canonicalize(g, log)
    assert [line.split(":")[0] for line in log] == [name for name, _ in canon.PASSES]
    assert not {n.op for n in out.nodes} & COMPOSITE
    assert [out.nodes[o].dtype for o in out.outputs] == [g.nodes[o].dtype for o in g.outputs]
    assert [out.nodes[o].shape for o in out.outputs] == [g.nodes[o].shape for o in g.outputs]
    for specials in (False, True) if case.specials else (False,):
        inputs = make_inputs(case, specials=specials)
        check_same_values(g, out, inputs)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_canonicalize_is_idempotent(case: Case):
    once = canon.canonicalize(trace_case(case))
    assert canon.canonicalize(once).digest() == once.digest()



@pytest.mark.parametrize("reduce", [lambda x: mx.sum(x), lambda x: mx.sum(x, axis=(0, 1)), lambda x: mx.mean(x)])
def test_a_16_bit_reduction_over_several_axes_rounds_once(reduce):
    """Split into one reduction per axis, a bfloat16 sum rounded each row's sum to bfloat16 before
    adding the rows (65281 -> 65280 against -65280: 0 for a total of 4, MLX's answer); the partial
    sums now stay float32 and the result rounds once, as MLX's single reduction does."""
    rows = np.array([[256.0] * 255 + [1.0], [-256.0] * 255 + [0.0]] * 4, np.float32)
    x = mx.array(rows).astype(mx.bfloat16)
    g = canon.canonicalize(trace(reduce, [("x", (8, 256), "bfloat16")]))
    got = interp.evaluate(g, [rows], "native")[0]
    want = np.array(reduce(x).astype(mx.float32))
    assert float(got) == float(want) != 0.0
    sums = [n for n in g.nodes if n.op is Op.SUM]
    assert len(sums) == 2 and all(n.dtype == "float32" for n in sums)
