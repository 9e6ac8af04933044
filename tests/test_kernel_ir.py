"""KernelIR: lowered regions, run region by region with the reference executor, compute what the
canonical graph computes; signatures are size-free; JSON round-trips; the validator catches broken IR."""

from __future__ import annotations

import dataclasses
import json

import mlx.core as mx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from autoperfect import canon, dtypes, fuse, interp, kernel_ir
from autoperfect.fuse import Partition
from autoperfect.graph import Graph
from autoperfect.kernel_ir import Instr, KernelIR, KernelIRError
from autoperfect.ops import EXACT, MOVEMENT, Op
from autoperfect.spec import seed_for

from op_table import BY_NAME, CASES, CONFIG, Case, assert_within_ulps, bit_equal, make_inputs, trace_case

ULPS = 4  # a region computes each op exactly as the interpreter does; 4 ulps leave room for nothing else

KNOWN_BUGS: dict = {}  # library bugs this file pins, by case name: none open


def canonical(case: Case) -> Graph:
    return canon.canonicalize(trace_case(case))


def run_regions(p: Partition, inputs) -> list[np.ndarray]:
    """Each region in order: kernels by `kernel_ir.execute`, MLX regions by the interpreter (native)."""
    g = p.graph
    values = {n.id: np.asarray(inputs[n.attr("index")]) for n in g.inputs}

    def value(i: int) -> np.ndarray:
        if i not in values:
            n = g.nodes[i]
            if n.op is Op.CONST:
                values[i] = interp.const_array(n, "native")
            elif n.op in MOVEMENT:
                values[i] = interp.apply(n, [value(n.srcs[0])], "native")
            else:
                raise AssertionError(f"%{i} is read before the region computing it ran")
        return values[i]

    for r in p.regions:
        if r.kind == "mlx":
            for i in r.nodes:
                values[i] = interp.apply(g.nodes[i], [value(s) for s in g.nodes[i].srcs], "native")
            continue
        k = kernel_ir.lower(p, r)
        n_in = len(k.inputs)
        outs = kernel_ir.execute(k, [value(b) for b in k.binds[:n_in]])
        for b, out in zip(k.binds[n_in:], outs):
            assert out.shape == g.nodes[b].shape
            values[b] = out
    return [value(o) for o in g.outputs]


def kernel_cases() -> list:
    """Every table op that computes something (fusion itself runs inside the tests, where it may fail)."""
    out = []
    for c in CASES:
        g = canonical(c)
        if not any(n.op not in MOVEMENT and n.srcs for n in g.nodes):
            continue
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[c.name])] if c.name in KNOWN_BUGS else []
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


KERNEL_CASES = kernel_cases()


@pytest.mark.parametrize("case", KERNEL_CASES)
def test_regions_chained_match_native_interpreter(case: Case):
    g = canonical(case)
    p = fuse.fuse(g)
    exact = all(n.op in EXACT for n in g.nodes)
    for specials in (False, True) if case.specials else (False,):
        inputs = make_inputs(case, specials=specials)
        want = interp.evaluate(g, inputs, "native")
        got = run_regions(p, inputs)
        for k, (v, w) in enumerate(zip(got, want)):
            what = f"{case.name} output {k}{' (specials)' if specials else ''}"
            assert v.dtype == w.dtype and v.shape == w.shape, what
            if exact or w.dtype.kind != "f":
                assert bit_equal(v, w), f"{what}: not bit-exact"
            else:
                assert_within_ulps(v, w, ULPS, what)


def binds_params():
    # a lost region leaves each remaining kernel consistent with its own region
    bugs = KNOWN_BUGS
    return [pytest.param(p.values[0], id=p.id, marks=[pytest.mark.xfail(strict=True, reason=bugs[p.id])]
                         if p.id in bugs else []) for p in KERNEL_CASES]


@pytest.mark.parametrize("case", binds_params())
def test_kernel_abi_matches_region(case: Case):
    """Inputs bind exactly the region's inputs; outputs its outputs; the launch fits the domain."""
    p = fuse.fuse(canonical(case))
    for r in p.regions:
        if r.kind != "kernel":
            with pytest.raises(KernelIRError):
                kernel_ir.lower(p, r)
            continue
        k = kernel_ir.lower(p, r)
        n_in = len(k.inputs)
        assert set(k.binds[:n_in]) == set(r.inputs)
        assert k.binds[n_in:] == r.outputs
        assert k.launch.dims == (tuple(r.domain[a] for a in r.loop) or (1,))
        assert k.kind == ("row" if r.reduces else "elementwise")
        assert k.bytes_moved() > 0


def test_reshape_of_a_transposed_value_lowers():
    """No view can express it: MLX copies it between two kernels, each of which lowers."""
    p = fuse.fuse(canonical(BY_NAME["reshape_of_transposed"]))
    assert [r.kind for r in p.regions] == ["kernel", "mlx", "kernel"]
    for r in p.regions:
        if r.kind == "kernel":
            kernel_ir.lower(p, r)


def test_broadcast_constant_is_not_a_kernel_argument():
    p = fuse.fuse(canonical(BY_NAME["broadcast_const"]))
    (region,) = p.regions
    assert len(kernel_ir.lower(p, region).inputs) == len(region.inputs)


# -- size-free signatures --------------------------------------------------------------------------

LAYERNORM = next(c for c in CONFIG if c.name == "config_layernorm")
RMSNORM = next(c for c in CONFIG if c.name == "config_rmsnorm")


def lowered(case: Case, shapes: dict[str, tuple[int, ...]]) -> tuple[KernelIR, Case]:
    sized = Case(case.name, case.fn, tuple((n, shapes[n], dt) for n, _, dt in case.inputs))
    p = fuse.fuse(canonical(sized))
    (region,) = p.regions
    return kernel_ir.lower(p, region), sized


@pytest.mark.parametrize("case, shapes", [
    (LAYERNORM, ({"x": (7, 5), "w": (5,), "b": (5,)}, {"x": (3, 11), "w": (11,), "b": (11,)})),
    (RMSNORM, ({"x": (7, 5), "w": (5,)}, {"x": (2, 9, 13), "w": (13,)})),
], ids=["layernorm", "rmsnorm"])
def test_digest_is_size_free(case: Case, shapes):
    (k1, c1), (k2, c2) = lowered(case, shapes[0]), lowered(case, shapes[1])
    if k1.rank == k2.rank:
        assert k1.digest() == k2.digest() and k1.name == k2.name
        assert k1.launch != k2.launch
        # the same kernel runs at the other shape, given that shape's launch
        inputs = make_inputs(c2)
        assert all(bit_equal(a, b) for a, b in zip(kernel_ir.execute(k1, inputs, k2.launch),
                                                    kernel_ir.execute(k2, inputs)))
    else:
        assert k1.digest() != k2.digest(), "a different rank is a different kernel"


def test_digest_follows_the_access_class_not_the_strides():
    """w of shape (5,) or (7, 5) is read contiguously along rows either way: one kernel, two launches.
    A column (7, 1) is read as a broadcast along the row: another kernel."""
    row, c_row = lowered(LAYERNORM, {"x": (7, 5), "w": (5,), "b": (5,)})
    full, c_full = lowered(LAYERNORM, {"x": (7, 5), "w": (7, 5), "b": (5,)})
    col, _ = lowered(LAYERNORM, {"x": (7, 5), "w": (7, 1), "b": (5,)})
    assert row.digest() == full.digest() != col.digest()
    assert row.launch.strides[1] == (0, 1) and full.launch.strides[1] == (5, 1)
    assert [a.inner for a in col.inputs] == ["contiguous", "broadcast", "contiguous"]
    inputs = make_inputs(c_full)
    assert bit_equal(kernel_ir.execute(row, inputs, full.launch)[0],
                     interp.evaluate(canonical(c_full), inputs, "native")[0])


# -- JSON ------------------------------------------------------------------------------------------


def all_kernels() -> list[KernelIR]:
    out = []
    for param in KERNEL_CASES:
        (case,) = param.values
        if case.name in KNOWN_BUGS:
            continue
        p = fuse.fuse(canonical(case))
        out.extend(kernel_ir.lower(p, r) for r in p.regions if r.kind == "kernel")
    return out


def test_json_round_trips():
    kernels = all_kernels()
    assert len(kernels) > 50
    for k in kernels:
        text = json.dumps(k.to_json(), sort_keys=True)
        back = KernelIR.from_json(json.loads(text))
        assert back == k and back.digest() == k.digest()
        assert json.dumps(back.to_json(), sort_keys=True) == text
        assert kernel_ir.validate(back) is back


def test_json_with_a_wrong_name_is_refused():
    k, _ = lowered(LAYERNORM, {"x": (7, 5), "w": (5,), "b": (5,)})
    d = k.to_json()
    d["body"][2]["dtype"] = "float16"
    with pytest.raises(KernelIRError, match="hash to"):
        KernelIR.from_json(d)


# -- the validator ---------------------------------------------------------------------------------


def _instr(k: KernelIR, op: Op, space: str | None = None) -> Instr:
    return next(i for i in k.body if i.op is op and (space is None or i.space == space))


def _replace_instr(k: KernelIR, old: Instr, **changes) -> KernelIR:
    body = tuple(dataclasses.replace(i, **changes) if i.id == old.id else i for i in k.body)
    return dataclasses.replace(k, body=body)


def row_reads_elem(k):
    row = next(i for i in k.body if i.space == "row" and i.srcs and i.op not in (Op.SUM, Op.STORE))
    elem = next(i for i in k.body if i.space == "elem" and i.id < row.id)
    return _replace_instr(k, row, srcs=(elem.id,) + row.srcs[1:])


def output_never_stored(k):
    last = k.body[-1]
    assert last.op is Op.STORE
    return dataclasses.replace(k, body=k.body[:-1])


def stored_twice(k):
    store = _instr(k, Op.STORE)
    return dataclasses.replace(k, body=k.body + (dataclasses.replace(store, id=len(k.body)),))


def load_from_output(k):
    return _replace_instr(k, _instr(k, Op.LOAD), attrs=(("arg", len(k.args) - 1),))


def store_to_input(k):
    return _replace_instr(k, _instr(k, Op.STORE), attrs=(("arg", 0),))


def reduction_in_elem_space(k):
    return _replace_instr(k, _instr(k, Op.SUM), space="elem")


def source_from_the_future(k):
    first = _instr(k, Op.MUL)
    return _replace_instr(k, first, srcs=(first.id,) + first.srcs[1:])


def movement_in_kernel(k):
    return _replace_instr(k, _instr(k, Op.MUL), op=Op.RESHAPE)


def unknown_space(k):
    return _replace_instr(k, _instr(k, Op.MUL), space="tile")


def dims_do_not_match_rank(k):
    return dataclasses.replace(k, launch=dataclasses.replace(k.launch, dims=k.launch.dims + (1,)))


def strides_missing(k):
    return dataclasses.replace(k, launch=dataclasses.replace(k.launch, strides=k.launch.strides[1:]))


def output_before_input(k):
    return dataclasses.replace(k, args=k.args[::-1])


def row_kind_without_reduction(k):
    body = tuple(i for i in k.body if i.op is not Op.SUM)
    return dataclasses.replace(k, body=body)


BROKEN = [
    # (breakage, words the error must contain)
    (row_reads_elem, "reads a per-element value"),
    (output_never_stored, "stored exactly once"),
    (stored_twice, "stored exactly once"),
    (load_from_output, "reads an output"),
    (store_to_input, "does not match its output"),
    (reduction_in_elem_space, "elem -> row"),
    (source_from_the_future, "malformed"),
    (movement_in_kernel, "no place in a kernel"),
    (unknown_space, "malformed"),
    (dims_do_not_match_rank, "rank"),
    (strides_missing, "strides"),
    (output_before_input, "inputs then at least one output"),
]


@pytest.mark.parametrize("breakage, words", BROKEN, ids=[
    (b.values if hasattr(b, "values") else b)[0].__name__ for b in BROKEN])
def test_validate_rejects_broken_kernel(breakage, words):
    k, _ = lowered(LAYERNORM, {"x": (7, 5), "w": (5,), "b": (5,)})
    assert kernel_ir.validate(k) is k
    with pytest.raises(KernelIRError, match=words):
        kernel_ir.validate(breakage(k))


def test_validate_rejects_row_kernel_without_reduction():
    k, _ = lowered(next(c for c in CONFIG if c.name == "config_chain"), {"a": (7,), "b": (7,), "c": (7,)})
    assert k.kind == "elementwise"
    with pytest.raises(KernelIRError, match="without a reduction"):
        kernel_ir.validate(dataclasses.replace(k, kind="row"))


# -- property: shapes and broadcast patterns -------------------------------------------------------


def shifted_row_sum(x, w):
    m = mx.max(x, axis=-1, keepdims=True)
    s = mx.sum(x * w, axis=-1, keepdims=True)
    return (x - m) * w + s


@st.composite
def shapes_and_pattern(draw):
    """x of rank 1-3 with sizes 1 or odd; w broadcast to it (axes set to 1, leading axes dropped)."""
    x = tuple(draw(st.lists(st.sampled_from([1, 3, 5, 7, 9]), min_size=1, max_size=3)))
    w = tuple(1 if draw(st.booleans()) else d for d in x)
    return x, w[draw(st.integers(0, len(w))):]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(shapes=shapes_and_pattern())
def test_chained_execute_within_error_bound(shapes):
    x_shape, w_shape = shapes
    case = Case("shifted_row_sum", shifted_row_sum, (("x", x_shape, "float32"), ("w", w_shape, "float32")))
    g = canonical(case)
    p = fuse.fuse(g)
    assert [r.kind for r in p.regions] == ["kernel"]
    rng = np.random.default_rng(seed_for("shifted_row_sum", str(x_shape), str(w_shape)))
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    (got,) = run_regions(p, [x, w])
    (want,) = interp.evaluate(g, [x, w], "float64")
    # float32 error analysis: x*w and the two products each round once (u), the sum of n terms at most
    # (n - 1) times over sum|x*w|, the final add once; doubled for the terms dropped from the analysis
    u, n = dtypes.EPS["float32"], x_shape[-1]
    xw = np.abs(x.astype(np.float64) * w)
    dw = np.abs((x - x.max(axis=-1, keepdims=True)).astype(np.float64) * w)
    bound = 2 * u * (np.abs(want) + 3 * dw + (n + 1) * xw.sum(axis=-1, keepdims=True))
    assert got.shape == want.shape == x_shape
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))
    # and the kernel's result is the canonical graph's, step by step
    assert_within_ulps(got, interp.evaluate(g, [x, w], "native")[0], ULPS, str(shapes))


# -- sigmoid_form: 0.5 * x * (1 + tanh(y)) as x / (1 + exp(-2y)) ---------------------------------------

GELU_FORMS = {  # the products and the sum in either order
    "as in config.yaml": "0.5 * x * (1 + mx.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))",
    "swapped": "(mx.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)) + 1) * (x * 0.5)",
}


def _kernel(expr: str, shape=(4, 64)) -> KernelIR:
    from autoperfect.pipeline import front
    from autoperfect.spec import parse_op

    spec = parse_op("g", {"fn": f"def g(x):\n    return {expr}\n", "inputs": {"x": {"shape": list(shape), "dtype": "float32"}}})
    (k,) = [k for k in front(spec).kernels if k is not None]
    return k


@pytest.mark.parametrize("form", sorted(GELU_FORMS))
def test_sigmoid_form_computes_the_same_value_with_an_exp_and_a_division(form):
    """The rewritten kernel (valid IR, the same arguments) has no tanh, one exp and one division,
    and in float64 gives the user's formula's values where that formula does not cancel (x above
    -4: within 1e-11 relatively) and, where it does, x e^2y / (1 + e^2y), which does not."""
    k = _kernel(GELU_FORMS[form])
    g = kernel_ir.sigmoid_form(k)
    ops = [i.op for i in g.body]
    assert Op.TANH not in ops and ops.count(Op.EXP) == 1 and ops.count(Op.DIV) == 1
    assert g.args == k.args and g.launch == k.launch and g.binds == k.binds
    x = np.linspace(-4, 8, 4 * 64).reshape(4, 64)
    want, got = (kernel_ir.execute(v, [x], mode="float64")[0] for v in (k, g))
    assert np.all(np.abs(got - want) <= 1e-11 * np.abs(want))
    x = np.linspace(-12, -4, 4 * 64).reshape(4, 64)
    k32, c32 = (float(np.float32(c)) for c in (0.7978845608028654, 0.044715))  # the kernel's constants
    e = np.exp(2 * k32 * (x + c32 * x ** 3))
    got = kernel_ir.execute(g, [x], mode="float64")[0]
    assert np.all(np.abs(got - x * e / (1 + e)) <= 1e-13 * np.abs(x * e / (1 + e)))


def test_sigmoid_form_leaves_other_kernels_alone_and_keeps_values_used_elsewhere():
    """Nothing to rewrite: the kernel itself. A tanh the kernel also stores stays beside the exp."""
    for expr in ("x * mx.tanh(x)", "0.5 * x * (2 + mx.tanh(x))", "0.25 * x * (1 + mx.tanh(x))"):
        k = _kernel(expr)
        assert kernel_ir.sigmoid_form(k) is k
    k = _kernel("0.5 * x * (1 + mx.tanh(x)) + mx.tanh(x)")
    g = kernel_ir.sigmoid_form(k)
    assert [i.op for i in g.body].count(Op.TANH) == 1 and Op.EXP in [i.op for i in g.body]
    x = np.linspace(-3, 3, 256).reshape(4, 64)
    want, got = (kernel_ir.execute(v, [x], mode="float64")[0] for v in (k, g))
    assert np.allclose(got, want, rtol=1e-12, atol=0)
