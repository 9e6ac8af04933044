"""Tracer and reference interpreters, driven by the op table (tests/op_table.py).

For every case: the trace is valid GraphIR, the float64 interpreter agrees with eager MLX, `run_mlx`
matches eager MLX bit for bit on float32 elementwise ops, and tracing is deterministic. Functions the
tracer can't represent fail with a TraceError naming the call and the user's line.
"""

from __future__ import annotations

import json

import mlx.core as mx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from autoperfect import dtypes, interp
from autoperfect.bounds import propagate
from autoperfect.canon import canonicalize
from autoperfect.graph import Graph, validate
from autoperfect.ops import ELEMENTWISE, LEAF, MOVEMENT, Op
from autoperfect.trace import TraceError, trace

from op_table import CASES, Case, assert_close, bit_equal, eager, from_mx, make_inputs, to_mx, trace_case


# (case, special values) pairs that fail because of a library bug listed in the report
KNOWN_BUGS: dict = {}  # library bugs this file pins, by case name: none open


def draws(cases: list[Case]):
    """One pytest param per (case, input draw): ordinary values, and special values where meaningful."""
    out = []
    for c in cases:
        for specials in (False, True) if c.specials else (False,):
            reason = KNOWN_BUGS.get((c.name, specials))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            name = f"{c.name}-specials" if specials else c.name
            out.append(pytest.param(c, specials, id=name, marks=marks))
    return out


@pytest.fixture(scope="module")
def graphs() -> dict[str, Graph]:
    return {c.name: trace_case(c) for c in CASES}


# -- (a) tracing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_trace_is_valid(case: Case, graphs):
    g = graphs[case.name]
    assert validate(g) is g
    assert [n.attr("name") for n in g.inputs] == [name for name, _, _ in case.inputs]
    assert all(n.loc for n in g.nodes if n.op not in LEAF), "every computed node records its user line"


# -- (b) the float64 interpreter against eager MLX -------------------------------------------------


@pytest.mark.parametrize("case, specials", draws(CASES))
def test_float64_interpreter_matches_mlx(case: Case, specials: bool, graphs):
    g = graphs[case.name]
    inputs = make_inputs(case, specials=specials)
    want = eager(case, inputs)
    got = interp.evaluate(g, inputs, "float64")
    assert len(got) == len(want) == len(g.outputs)
    for k, (ref, value, out) in enumerate(zip(got, want, g.outputs)):
        node = g.nodes[out]
        assert node.dtype == dtypes.from_mlx(value.dtype), f"output {k}: traced dtype differs from MLX's"
        assert node.shape == tuple(value.shape), f"output {k}: traced shape differs from MLX's"
        assert_close(from_mx(value), ref, node.dtype, f"{case.name} output {k}")


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_dropping_dead_values_changes_no_output_bit(case: Case, graphs):
    """Without `keep` the evaluators drop each value after its last reader (Graph.dead_after): the
    outputs, and the error bounds bounds.propagate gives them, are the same bits as when every
    node's value is kept."""
    g = canonicalize(graphs[case.name])
    inputs = make_inputs(case, specials=case.specials)
    for mode in ("float64", "native"):
        kept = interp.evaluate(g, inputs, mode, keep=True)
        for k, (a, o) in enumerate(zip(interp.evaluate(g, inputs, mode), g.outputs)):
            assert bit_equal(np.asarray(a), np.asarray(kept[o])), f"{case.name} {mode} output {k}"
    if any(n.dtype not in (*dtypes.EPS, "bool") for n in g.nodes):
        return  # bounds are a floating-point graph's (an integer or boolean one is judged exactly)
    (vals, errs), (all_vals, all_errs) = propagate(g, inputs), propagate(g, inputs, keep=True)
    assert set(vals) == set(errs) >= set(g.outputs)
    for o in g.outputs:
        assert bit_equal(np.asarray(vals[o]), np.asarray(all_vals[o]))
        assert bit_equal(np.asarray(errs[o]), np.asarray(all_errs[o]))


def test_a_value_is_dropped_after_its_last_reader_and_an_output_never():
    def f(x, w):
        a = mx.exp(x)
        b = a + 1.0
        return b * x, mx.sum(w)

    g = trace(f, [("x", (8, 16), "float32"), ("w", (16,), "float32")])
    dead = g.dead_after()
    readers = g.users()
    for n, values in dead.items():
        for s in values:
            assert max(readers[s]) == n and s not in g.outputs
    assert not set(g.outputs) & {s for values in dead.values() for s in values}
    # at exp(x) + 1: x, w, exp(x), the constant 1 and the sum; exp(x) and the constant are dropped
    # there, so b * x holds one value fewer
    x, w = 8 * 16, 16
    assert g.peak_elements() == x + w + x + 1 + x


def test_sign_of_nan_matches_mlx():
    g = trace(lambda x: mx.sign(x), [("x", (1,), "float32")])
    want = np.array(mx.sign(mx.array([np.nan])))
    got = interp.evaluate(g, [np.array([np.nan], np.float32)], "float64")[0]
    assert want[0] == 0.0 and got[0] == 0.0


# -- (c) run_mlx against eager MLX -----------------------------------------------------------------


def _elementwise_float32(case: Case, g: Graph) -> bool:
    return all(dt == "float32" for _, _, dt in case.inputs) and \
        all(n.op in ELEMENTWISE or n.op in LEAF or n.op in MOVEMENT for n in g.nodes)


def _run_mlx_bug(case: Case, g: Graph) -> str | None:
    return KNOWN_BUGS.get((case.name, False))


def _run_mlx_params():
    out = []
    for c in CASES:
        g = trace_case(c)
        reason = _run_mlx_bug(c, g)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(c, _elementwise_float32(c, g), id=c.name, marks=marks))
    return out


@pytest.mark.parametrize("case, exact", _run_mlx_params())
def test_run_mlx_matches_eager(case: Case, exact: bool, graphs):
    """Exact for float32 elementwise graphs (the same MLX ops in the same order); close otherwise."""
    g = graphs[case.name]
    for specials in (False, True) if case.specials else (False,):
        inputs = make_inputs(case, specials=specials)
        want = eager(case, inputs)
        got = interp.run_mlx(g, to_mx(case, inputs))
        mx.eval(got)
        for k, (a, b) in enumerate(zip(got, want)):
            assert a.dtype == b.dtype and a.shape == b.shape
            if exact:
                assert bit_equal(from_mx(a), from_mx(b)), f"{case.name} output {k}"
            else:
                assert_close(from_mx(a), from_mx(b), dtypes.from_mlx(b.dtype), f"{case.name} output {k}")


def test_to_mlx_knows_bool():
    assert dtypes.to_mlx("bool") == mx.bool_


# -- (d) determinism -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_trace_is_deterministic(case: Case, graphs):
    first, second = graphs[case.name], trace_case(case)
    assert json.dumps(first.to_json(), sort_keys=True) == json.dumps(second.to_json(), sort_keys=True)
    assert first.digest() == second.digest()
    assert Graph.from_json(json.loads(json.dumps(first.to_json()))) == first


def test_a_precise_softmax_of_sixteen_bit_values_is_computed_in_float32():
    """`precise=True` has MLX compute a bfloat16 softmax in float32 and round once: the traced graph
    casts around a float32 softmax, and its float64 reference is within an ulp of MLX's result,
    which the softmax computed in bfloat16 is not."""
    fn = lambda x: mx.softmax(x, axis=-1, precise=True)  # noqa: E731
    g = trace(fn, [("x", (8, 512), "bfloat16")])
    assert [(n.op, n.dtype) for n in g.nodes[1:]] == [(Op.CAST, "float32"), (Op.SOFTMAX, "float32"),
                                                      (Op.CAST, "bfloat16")]
    x = mx.array(np.random.default_rng(5).standard_normal((8, 512)) * 4).astype(mx.bfloat16)
    ref = interp.evaluate(g, [np.asarray(x.astype(mx.float32))], "float64")[0]
    ulp = np.abs(ref) * 2.0 ** -7
    assert np.max(np.abs(np.asarray(fn(x).astype(mx.float32)) - ref) / ulp) <= 1
    assert np.max(np.abs(np.asarray(mx.softmax(x, axis=-1).astype(mx.float32)) - ref) / ulp) > 1


def test_digest_ignores_source_lines():
    def f(x):
        return mx.exp(x) * 2

    def g(x): return mx.exp(x) * 2  # noqa: E704  (another line, the same computation)

    shapes = [("x", (3,), "float32")]
    assert trace(f, shapes).digest() == trace(g, shapes, "f").digest()
    assert trace(f, shapes).digest() != trace(f, [("x", (4,), "float32")]).digest()


# -- (e) what the tracer refuses -------------------------------------------------------------------


def uses_fft(x):
    return mx.fft.fft(x)


def uses_random(x):
    return x + mx.random.normal(x.shape)


def uses_indexing(x):
    return x[x > 0] * 2  # data-dependent (boolean) indexing; static indexing is supported


def misspells_a_function(x):
    return mx.sigmod(x)


def uses_unknown_method(x):
    return x.conj()


def uses_control_flow(x):
    if mx.sum(x) > 0:
        return x
    return -x


def mismatched_shapes(x, y):
    return x + y


def bad_reshape(x):
    return mx.reshape(x, (4, 4))


def spells_out_mlx_core(x):
    import mlx.core
    return mlx.core.exp(x)


def uses_remainder(x):
    return x % 1.5


X3 = [("x", (3,), "float32")]

REFUSED = [
    # (function, inputs, words the message must contain: the call, and the user's line text)
    (uses_fft, X3, ["mx.fft is not supported by the tracer", "return mx.fft.fft(x)"]),
    (uses_random, X3, ["mx.random", "return x + mx.random.normal(x.shape)"]),
    (uses_indexing, X3, ["static indexing", "return x[x > 0] * 2"]),
    (uses_unknown_method, X3, [".conj", "return x.conj()"]),
    (misspells_a_function, X3, ["mx.sigmod does not exist in mlx.core", "return mx.sigmod(x)"]),
    (uses_control_flow, X3, ["control flow", "if mx.sum(x) > 0:"]),
    (mismatched_shapes, X3 + [("y", (4,), "float32")], ["broadcast", "add", "return x + y"]),
    (bad_reshape, X3, ["reshape", "return mx.reshape(x, (4, 4))"]),
    (spells_out_mlx_core, X3, ["reached mlx itself", "`mlx.core.` spelled out", "return mlx.core.exp(x)"]),
    (uses_remainder, X3, ["for %: 'Tracer' and 'float'", "an operator the tracer does not have", "return x % 1.5"]),
]


@pytest.mark.parametrize("fn, inputs, words", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_trace_error_names_call_and_line(fn, inputs, words):
    with pytest.raises(TraceError) as info:
        trace(fn, inputs)
    message = str(info.value)
    for w in words:
        assert w in message, f"{w!r} missing from: {message}"
    assert "test_trace_interp.py" in message


# -- property: broadcasting binary expressions over shapes and dtypes ------------------------------


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: one full shape, the other with some axes 1 or dropped."""
    full = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=0, max_size=3)))
    other = tuple(1 if draw(st.booleans()) else d for d in full)
    other = other[draw(st.integers(0, len(other))):]
    return (full, other) if draw(st.booleans()) else (other, full)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(shapes=broadcast_pair(), dtype=st.sampled_from(["float32", "float16", "bfloat16"]),
       op=st.sampled_from(["add", "multiply", "maximum", "subtract"]))
def test_broadcast_binary_matches_mlx(shapes, dtype, op):
    case = Case(f"prop_{op}", lambda x, y: getattr(mx, op)(x, y) * 2 + 1,
                (("x", shapes[0], dtype), ("y", shapes[1], dtype)))
    g = trace_case(case)
    inputs = make_inputs(case, salt=f"{shapes}{dtype}")
    want = eager(case, inputs)[0]
    assert g.nodes[g.outputs[0]].shape == tuple(want.shape)
    assert_close(from_mx(want), interp.evaluate(g, inputs, "float64")[0], dtype, case.name)
