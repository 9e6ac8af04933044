"""The pure-MLX backend: the same KernelIR rendered as MLX calls agrees with the reference executor,
and its static check lets nothing but the kernel vocabulary through."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from autoperfect import kernel_ir
from autoperfect.backends import mlx as mlx_backend
from autoperfect.canon import canonicalize
from autoperfect.fuse import fuse
from autoperfect.spec import seed_for
from autoperfect.trace import trace

FUNCTIONS = {
    "layernorm": (lambda x, w: (x - mx.mean(x, axis=-1, keepdims=True))
                  * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w, [(6, 9), (9,)]),
    "column_max": (lambda x, w: mx.max(x * w, axis=0) + 1, [(7, 5), (5,)]),
    "gelu": (lambda x, w: 0.5 * x * (1 + mx.tanh(0.79788456 * (x + 0.044715 * x ** 3))) * w, [(4, 11), (11,)]),
    "softmax": (lambda x, w: mx.softmax(x * w, axis=-1), [(3, 13), (13,)]),
    # per-element outputs of a permuted loop (KernelIR.loop), back in the array's order
    "column_softmax": (lambda x, w: mx.softmax(x, axis=0) * w, [(6, 5), (5,)]),
}


def kernels(name: str):
    fn, shapes = FUNCTIONS[name]
    g = canonicalize(trace(fn, [(n, s, "float32") for n, s in zip("xw", shapes)], name))
    p = fuse(g)
    return g, [(r, kernel_ir.lower(p, r)) for r in p.regions if r.kind == "kernel"]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_rendered_kernel_matches_reference_executor(name, tmp_path):
    g, ks = kernels(name)
    assert len(ks) == 1
    region, k = ks[0]
    rng = np.random.default_rng(seed_for("mlx-backend", name))
    values = {n.id: rng.standard_normal(n.shape).astype(np.float32) for n in g.inputs}
    inputs = [values[b] for b in k.binds[:len(k.inputs)]]
    build = mlx_backend.build(mlx_backend.render(k), tmp_path)
    assert build.ok, build.log
    got = mlx_backend.Kernel(k, build.library)([mx.array(x) for x in inputs])
    want = kernel_ir.execute(k, inputs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.array(a), b, rtol=2e-6, atol=2e-6)


def test_one_source_serves_other_shapes(tmp_path):
    _, [(_, k)] = kernels("layernorm")
    source = mlx_backend.render(k)
    fn, _ = FUNCTIONS["layernorm"]
    g = canonicalize(trace(fn, [("x", (2, 30), "float32"), ("w", (30,), "float32")], "layernorm"))
    p = fuse(g)
    other = kernel_ir.lower(p, p.regions[0])
    assert other.name == k.name and mlx_backend.render(other) == source
    x = np.random.default_rng(seed_for("mlx-backend-shapes")).standard_normal((2, 30)).astype(np.float32)
    w = np.ones(30, np.float32)
    kernel = mlx_backend.Kernel(k, mlx_backend.build(source, tmp_path).library)
    (got,) = kernel([mx.array(x), mx.array(w), ], other.launch)
    np.testing.assert_allclose(np.array(got), kernel_ir.execute(other, [x, w])[0], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("source, problem", [
    ("import os\ndef k(inputs, dims, strides, out_shapes):\n    return []\n", "one function"),
    ("def k(inputs, dims, strides, out_shapes):\n    import os\n    return []\n", "Import"),
    ("def k(inputs, dims, strides, out_shapes):\n    return [inputs.__class__]\n", "outside mx"),
    ("def k(inputs, dims, strides, out_shapes):\n    return [open('/etc/passwd')]\n", "vocabulary"),
    ("def k(inputs, dims, strides, out_shapes):\n    return [mx.load('x.npy')]\n", "vocabulary"),
    ("def k(inputs, dims, strides, out_shapes):\n    while True:\n        pass\n", "While"),
    ("def k(inputs, dims, strides, out_shapes):\n    return [secret]\n", "unknown name"),
    ("def k(inputs, dims, strides, out_shapes)\n    return []\n", "does not parse"),
])
def test_static_check_refuses(source, problem, tmp_path):
    assert problem in (mlx_backend.check_source(source) or "")
    build = mlx_backend.build(source, tmp_path)
    assert not build.ok and problem in build.log


def test_rendered_sources_pass_the_static_check():
    for name in FUNCTIONS:
        for _, k in kernels(name)[1]:
            assert mlx_backend.check_source(mlx_backend.render(k)) is None
