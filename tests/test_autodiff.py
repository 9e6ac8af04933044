"""autodiff.vjp: the reverse mode of a canonical graph against MLX's own mx.vjp, its conventions at
ties, what it refuses, and the runtime's fused derivative under mx.grad (runtime.Backward)."""

from __future__ import annotations

import functools

import mlx.core as mx
import numpy as np
import pytest

import autoperfect
from autoperfect.autodiff import NotDifferentiable, vjp
from autoperfect.canon import canonicalize
from autoperfect.graph import validate
from autoperfect.interp import evaluate
from autoperfect.ops import Op
from autoperfect.runtime import front_of
from autoperfect.spec import seed_for
from autoperfect.trace import TraceError, trace

pytestmark = pytest.mark.usefixtures("on_the_cpu")  # MLX on the CPU while the runtime's run (conftest.py)


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


FUNCTIONS = {
    "layer_norm": (layer_norm, [(4, 8), (8,), (8,)]),
    "rms_norm": (lambda x, w: x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w, [(4, 16), (16,)]),
    "softmax_axis0": (lambda x: mx.softmax(x, axis=0), [(5, 7)]),
    "log_softmax": (lambda x: x - mx.logsumexp(x, axis=-1, keepdims=True), [(5, 7)]),
    "gelu_erf": (lambda x: 0.5 * x * (1 + mx.erf(x / 1.4142135)), [(5, 7)]),
    "gelu_tanh": (lambda x: 0.5 * x * (1 + mx.tanh(0.79788456 * (x + 0.044715 * x ** 3))), [(5, 7)]),
    "silu": (lambda x: x * mx.sigmoid(x), [(5, 7)]),
    "mlp": (lambda x, w, b: mx.maximum(x @ w + b, 0.0), [(3, 4), (4, 5), (5,)]),
    "batched_matmul": (lambda a, b: mx.tanh(a @ b), [(2, 3, 4), (4, 5)]),
    "unary_mix": (lambda x: mx.sqrt(mx.exp(x)) + mx.log1p(x * x) + mx.sin(x) * mx.cos(x) + 1 / (2 + x * x)
                  + mx.expm1(x) + mx.log(2 + mx.abs(x)) + mx.floor(x) * x, [(3, 4)]),
    "where_broadcast": (lambda x, y: mx.where(x > 0, x * y, y / (1 + x * x)), [(3, 4), (3, 1)]),
    "reductions": (lambda x: mx.max(x, axis=0) + mx.min(x, axis=1, keepdims=True).sum(), [(3, 4)]),
    "movement": (lambda x: (x.T * 3.0).reshape(12) ** 3 + mx.broadcast_to(x[None], (2, 3, 4)).sum(), [(3, 4)]),
    "two_outputs": (lambda x: (x.sum(axis=0), mx.tanh(x)), [(3, 4)]),
    "power": (lambda x, y: mx.power(1.5 + x * x, y) + mx.clip(x, -0.5, 0.5), [(3, 4), (4,)]),
    "batch_norm": (lambda x, w: (x - mx.mean(x, axis=0)) * mx.rsqrt(mx.var(x, axis=0) + 1e-5) * w, [(6, 5), (5,)]),
}


def case(name: str):
    fn, shapes = FUNCTIONS[name]
    rng = np.random.default_rng(seed_for("test_autodiff", name))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    graph = canonicalize(trace(fn, [(f"x{i}", s, "float32") for i, s in enumerate(shapes)], name))
    out = fn(*map(mx.array, args))
    outs = out if isinstance(out, tuple) else (out,)
    cotangents = [rng.standard_normal(o.shape).astype(np.float32) for o in outs]
    return fn, args, graph, cotangents


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_reverse_mode_graph_computes_mlxs_vjp(name):
    fn, args, graph, cotangents = case(name)
    back = validate(vjp(graph))
    assert [n.attr("name") for n in back.inputs] == [f"x{i}" for i in range(len(args))] + [
        f"cotangent{j}" for j in range(len(cotangents))]
    want = mx.vjp(fn, list(map(mx.array, args)), list(map(mx.array, cotangents)))[1]
    got = evaluate(back, args + cotangents)  # float64: the answer key's own interpreter
    assert len(got) == len(want)
    for g, w, x in zip(got, want, args):
        w = np.array(w, dtype=np.float64)
        assert g.shape == x.shape
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5 * max(1.0, float(np.max(np.abs(w)))), err_msg=name)


def test_ties_and_kinks_follow_mlxs_conventions():
    """maximum and minimum give a tie to the second operand, a max over an axis shares its
    cotangent among the elements equal to it, abs has 0 at 0: bit for bit MLX's."""
    def f(a, b):
        return mx.maximum(a, b) + 2 * mx.minimum(a, b) + mx.max(a, axis=1, keepdims=True) * 3 + mx.abs(a - 1)

    a = np.array([[1.0, 3.0, 3.0, 2.0], [0.0, 1.0, 1.0, 1.0]], np.float32)
    b = np.array([1.0, 3.0, 4.0, 1.0], np.float32)
    ct = np.ones((2, 4), np.float32)
    graph = canonicalize(trace(f, [("a", a.shape, "float32"), ("b", b.shape, "float32")]))
    got = evaluate(vjp(graph), [a, b, ct])
    want = mx.vjp(f, [mx.array(a), mx.array(b)], [mx.array(ct)])[1]
    for g, w in zip(got, want):
        assert np.array_equal(g, np.array(w)), (g, np.array(w))


@pytest.mark.parametrize("fn, dtype, words", [
    (lambda x: mx.cumsum(x, axis=0), "float32", "no derivative for cumsum"),
    (lambda x: mx.prod(x, axis=0), "float32", "no derivative for prod"),
    (lambda x: x[1:] * 2, "float32", "no derivative for slice"),
    (lambda x: x * 2, "int32", "input x is int32"),
    (lambda x: x > 0, "float32", "is bool"),
])
def test_what_it_cannot_differentiate_is_named(fn, dtype, words):
    graph = canonicalize(trace(fn, [("x", (4, 3), dtype)], "f"))
    with pytest.raises(NotDifferentiable, match=words):
        vjp(graph)


def test_an_input_the_outputs_do_not_use_gets_zeros():
    fn = lambda x, y: x * 2  # noqa: E731
    graph = canonicalize(trace(fn, [("x", (2, 3), "float32"), ("y", (3,), "float32")]))
    dx, dy = evaluate(vjp(graph), [np.ones((2, 3), np.float32), np.ones(3, np.float32), np.ones((2, 3), np.float32)])
    assert np.array_equal(dx, np.full((2, 3), 2.0)) and np.array_equal(dy, np.zeros(3))


def test_layer_norms_backward_fuses_into_a_kernel_per_reduction_direction():
    """dx reduces along rows (one row kernel, recomputing the forward's statistics), dw and db
    along columns: the backward of a LayerNorm is three kernels and nothing left to MLX."""
    _, _, graph, _ = case("layer_norm")
    f = front_of(vjp(graph))
    assert all(k is not None for k in f.kernels) and len(f.kernels) == 3
    assert sorted(k.kind for k in f.kernels) == ["row", "row", "row"]
    assert not any(n.op is Op.BROADCAST for n in f.canonical.nodes if n.id in f.canonical.outputs)


# -- the runtime's fused derivative (runtime.Backward) ------------------------------------------------

jit = functools.partial(autoperfect.jit, race=False)




def test_mx_grad_of_a_jitted_function_runs_verified_backward_kernels(tmp_path):
    fn, args, _, _ = case("layer_norm")
    x, w, b = map(mx.array, args)
    f = jit(fn, cache_dir=tmp_path)

    def loss(h):
        return lambda x, w, b: mx.sum(h(x, w, b) * mx.cos(x))

    got = mx.grad(loss(f), argnums=(0, 1, 2))(x, w, b)
    want = mx.grad(loss(fn), argnums=(0, 1, 2))(x, w, b)
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(v), rtol=1e-5, atol=1e-5)
    (plan,) = f._plans.values()
    backward = plan.backward.last_trace
    assert backward is not None and len(backward.kernels) == 3 and not backward.eager
    assert f.last_trace.kernels  # the forward's kernels ran too
    (stats,) = f.stats()["backward"].values()
    assert stats["calls"] == 1 and stats["kernel_calls"] == 3
    # second-order: the backward's own derivative is MLX's
    hess = mx.grad(lambda x: mx.sum(mx.grad(loss(f))(x, w, b) ** 2))(x)
    want = mx.grad(lambda x: mx.sum(mx.grad(loss(fn))(x, w, b) ** 2))(x)
    np.testing.assert_allclose(np.array(hess), np.array(want), rtol=1e-4, atol=1e-4)


def test_a_derivative_autodiff_cannot_write_is_mlxs_and_says_why(tmp_path):
    fn = lambda x: mx.exp(mx.cumsum(x, axis=1)) * 2  # noqa: E731
    (x,) = [mx.array(np.random.default_rng(seed_for("test_autodiff", "cumsum")).standard_normal((4, 6)).astype(np.float32))]
    f = jit(fn, cache_dir=tmp_path)
    got = mx.grad(lambda x: mx.sum(f(x)))(x)
    np.testing.assert_allclose(np.array(got), np.array(mx.grad(lambda x: mx.sum(fn(x)))(x)), rtol=1e-6)
    (plan,) = f._plans.values()
    assert "no derivative for cumsum" in plan.backward.last_trace.eager


def test_fused_vjp_off_keeps_mlxs_derivative(tmp_path):
    fn, args, _, _ = case("silu")
    f = jit(fn, cache_dir=tmp_path, fused_vjp=False)
    x = mx.array(args[0])
    got = mx.grad(lambda x: mx.sum(f(x)))(x)
    assert np.array_equal(np.array(got), np.array(mx.grad(lambda x: mx.sum(fn(x)))(x)))
    (plan,) = f._plans.values()
    assert plan.backward is None and f.last_trace.kernels


def test_a_function_with_python_arguments_gets_its_fused_derivative_per_value(tmp_path):
    def rms(x, w, eps, axis=-1):
        return x * mx.rsqrt(mx.mean(x * x, axis=axis, keepdims=True) + eps) * w

    rng = np.random.default_rng(seed_for("test_autodiff", "rms constants"))
    x, w = (mx.array(rng.standard_normal(s).astype(np.float32)) for s in ((6, 40), (40,)))
    f = jit(rms, cache_dir=tmp_path)
    for eps in (1e-6, 0.5):
        got = mx.grad(lambda x, w: mx.sum(f(x, w, eps, axis=-1) * mx.sin(x)), argnums=(0, 1))(x, w)
        want = mx.grad(lambda x, w: mx.sum(rms(x, w, eps, axis=-1) * mx.sin(x)), argnums=(0, 1))(x, w)
        for g, v in zip(got, want):
            np.testing.assert_allclose(np.array(g), np.array(v), rtol=1e-5, atol=1e-6)
    backward = f.stats()["backward"]
    assert len(backward) == 2 and all(s["kernel_calls"] and not s["eager_calls"] for s in backward.values())


# -- mx.grad inside a traced function (the tracer's grad rules, trace._Context.derivative) ------------

def train_step(x, w, b, t):
    def layer(x, w, b):  # defined in the step: it closes over nothing, the lambda below over x and t
        m = mx.mean(x, axis=-1, keepdims=True)
        return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b
    loss, (gw, gb) = mx.value_and_grad(lambda w, b: mx.mean((layer(x, w, b) - t) ** 2), argnums=(0, 1))(w, b)
    return loss, w - 0.1 * gw, b - 0.1 * gb


def vjp_inside(x, c):
    out, (dx,) = mx.vjp(lambda x: (mx.tanh(x) * 2, x.sum()), [x], [c, mx.array(3.0)])
    return out[0], dx


def grad_of_a_closure(x):
    return mx.grad(lambda y: mx.sum(mx.sin(y) * x))(x * 2)


def module_helper_step(x, w, b):  # layer_norm is this module's: the tracer rebinds it too
    return mx.grad(lambda w: mx.sum(layer_norm(x, w, b) ** 2))(w)


@pytest.mark.parametrize("fn, shapes", [(train_step, [(6, 8), (8,), (8,), (6, 8)]),
                                        (vjp_inside, [(3, 4), (3, 4)]), (grad_of_a_closure, [(5,)]),
                                        (module_helper_step, [(6, 8), (8,), (8,)])])
def test_mx_grad_inside_a_traced_function_is_part_of_its_graph(fn, shapes):
    rng = np.random.default_rng(seed_for("test_autodiff", fn.__name__))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    graph = canonicalize(trace(fn, [(f"a{i}", s, "float32") for i, s in enumerate(shapes)]))
    want = fn(*map(mx.array, args))
    want = want if isinstance(want, tuple) else (want,)
    for got, w in zip(evaluate(graph, args), want):
        np.testing.assert_allclose(got, np.array(w), rtol=1e-5, atol=1e-6)


def test_a_whole_training_step_compiles_into_kernels(tmp_path):
    rng = np.random.default_rng(seed_for("test_autodiff", "train step jit"))
    args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in ((64, 32), (32,), (32,), (64, 32))]
    f = jit(train_step, cache_dir=tmp_path)
    for got, want in zip(f(*args), train_step(*args)):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6)
    assert f.last_trace.kernels and not f.last_trace.eager


@pytest.mark.parametrize("fn, words", [
    (lambda x: mx.grad(lambda y: y * 2)(x), "must return a scalar first"),
    (lambda x: mx.grad(lambda y, k: mx.sum(y) * k, argnums=1)(x, 2.0), "argument 1 is not an array"),
    (lambda x: mx.grad(lambda y: mx.sum(mx.cumsum(y, axis=0)))(x), "no derivative for cumsum"),
])
def test_what_the_tracer_cannot_differentiate_is_named(fn, words):
    with pytest.raises(TraceError, match=words):
        trace(fn, [("x", (3, 4), "float32")], "f")
