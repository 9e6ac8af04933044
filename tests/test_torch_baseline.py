"""The torch baselines: the traced graph run by torch computes what the float64 interpreter computes,
for every program of the op table; torch.compile of it too; a wrong translation is caught by the
check before timing and left out of the benchmark. Skipped when torch is not installed."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from autoperfect import contenders, interp, torch_baseline
from autoperfect.ops import Op
from autoperfect.pipeline import front

from op_table import CASES, assert_close, config_specs, make_inputs, small_shapes, trace_case


def reference(graph, xs) -> list[np.ndarray]:
    return [np.asarray(r, dtype=np.float64) for r in interp.evaluate(graph, xs, "float64")]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_torch_eager_computes_the_graph(case):
    graph = trace_case(case)
    xs = make_inputs(case, "torch")
    got = torch_baseline.to_numpy(torch_baseline.translate(graph)(*torch_baseline.tensors(xs, graph)))
    ref = reference(graph, xs)
    assert len(got) == len(ref)
    for j, (g, r) in enumerate(zip(got, ref)):
        assert_close(g, r, graph.nodes[graph.outputs[j]].dtype, f"{case.name} output {j}")


@pytest.fixture(scope="module")
def rmsnorm():
    spec = config_specs()["rmsnorm"]
    spec = spec.with_shapes(small_shapes(spec.inputs))
    f = front(spec)
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal(i.shape).astype(np.float32) for i in spec.inputs]
    return f, xs, reference(f.traced, xs)


def test_torch_compile_computes_the_graph_and_reports_its_compile_time(rmsnorm):
    f, xs, ref = rmsnorm
    inputs = torch_baseline.tensors(xs, f.traced)
    fn, seconds = torch_baseline.compiled(f.traced, inputs)
    assert seconds > 0
    assert contenders.agrees(torch_baseline.to_numpy(fn(*inputs)), ref)


def test_both_torch_contenders_are_checked_then_timed(rmsnorm):
    f, xs, ref = rmsnorm
    checks: dict = {}
    inputs = torch_baseline.tensors(xs, f.traced)
    calls, compile_s = contenders.torch_calls(f, inputs, ref, checks)
    assert set(calls) == {"torch_eager", "torch_compile"} and checks == dict.fromkeys(calls, True)
    assert set(compile_s) == {"torch_compile"}
    assert contenders.agrees(torch_baseline.to_numpy(calls["torch_eager"](*inputs)), ref)


def test_a_wrong_translation_is_left_out(rmsnorm, monkeypatch):
    f, xs, ref = rmsnorm
    monkeypatch.setitem(torch_baseline.UNARY, Op.RSQRT, torch.sqrt)
    checks: dict = {}
    calls, _ = contenders.torch_calls(f, torch_baseline.tensors(xs, f.traced), ref, checks)
    assert calls == {} and checks == {"torch_eager": False, "torch_compile": False}


def test_agrees_needs_every_output_close_and_of_the_same_shape():
    ref = [np.array([1.0, 2.0]), np.array([[3.0]])]
    assert contenders.agrees([np.array([1.0, 2.0005]), np.array([[3.0]])], ref)
    assert not contenders.agrees([np.array([1.0, 2.1]), np.array([[3.0]])], ref)
    assert not contenders.agrees([np.array([1.0, 2.0]), np.array([3.0])], ref)
    assert not contenders.agrees([np.array([1.0, 2.0])], ref)


def test_a_sixteen_bit_output_agrees_within_a_few_of_its_own_ulps():
    """Two right ways of computing a bfloat16 output differ by its rounding (2^-8 of the value),
    more than 1e-3: 1% of the scale off agrees for a bfloat16 output, not for a float32 one, and
    10% off agrees for neither."""
    ref = [np.array([1.0, 2.0])]
    assert contenders.agrees([np.array([1.0, 2.02])], ref, ["bfloat16"])
    assert not contenders.agrees([np.array([1.0, 2.02])], ref, ["float32"])
    assert not contenders.agrees([np.array([1.0, 2.2])], ref, ["bfloat16"])


def test_inputs_live_in_torchs_memory_not_numpys(rmsnorm):
    """Each contender holds its inputs in its own framework's memory: a tensor sharing a numpy
    array's buffer would read numpy's huge pages, which MLX's contenders never get."""
    f, xs, _ = rmsnorm
    for x, t in zip(xs, torch_baseline.tensors(xs, f.traced)):
        assert t.data_ptr() != x.ctypes.data
        assert np.array_equal(t.numpy(), x)
