"""The end-to-end model benchmark on a tiny Qwen2-architecture model: the same greedy tokens with and
without autoperfect.jit, kernels really dispatched, and an explicit attention equal to mlx-lm's."""

from __future__ import annotations

import json

import mlx.core as mx
import numpy as np
import pytest

pytest.importorskip("mlx_lm")

import autoperfect  # noqa: E402
from autoperfect import model_e2e  # noqa: E402
from autoperfect.spec import seed_for  # noqa: E402

TINY = {"hidden_size": 64, "layers": 2, "intermediate_size": 128, "heads": 4, "kv_heads": 2,
        "vocab_size": 256, "batch": 2, "prompt": 6, "tokens": 2, "warmup": 0, "repeats": 3,
        "race": False}  # at these tiny shapes MLX's own ops may win the jit's race: kernels are the test


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    return model_e2e.measure({"settings": TINY, "cache_dir": str(tmp_path_factory.mktemp("kernels"))})


def test_jit_gives_the_written_models_greedy_tokens_and_logits(measured):
    check = measured["checks"]["jit"]
    assert check["identical_tokens"] and check["logits_agree"]
    assert np.array(check["tokens"]).shape == (TINY["batch"], TINY["tokens"])
    assert measured["generated_tokens"] == TINY["batch"] * TINY["tokens"]


def test_the_written_model_computes_what_mlx_lm_computes(measured):
    assert measured["checks"]["stock"]["logits_agree"]


def test_norms_and_softmax_ran_as_kernels_mapped_to_their_source(measured):
    for fn in ("rms_norm", "softmax"):
        stats = measured["runtime"][fn]
        assert stats["kernel_calls"] > 0, stats["plans"]
        assert stats["signatures"] >= 2  # the prompt and the decode steps are different shapes
    assert measured["runtime"]["softmax"]["signatures"] == 1 + TINY["tokens"]  # one per cache length


def test_timings_and_speedups_are_reported_with_intervals(measured):
    for name in ("stock", "written", "jit"):
        t = measured["timing"][name]
        assert t["samples"] == TINY["repeats"]
        lo, hi = t["tokens_per_s_ci95"]
        assert lo <= t["tokens_per_s"] <= hi
    assert set(measured["speedup"]) == {"written", "stock"}


@pytest.mark.parametrize("length, total", [(1, 9), (5, 5), (3, 8)])
def test_explicit_attention_matches_the_fused_kernel(length, total):
    rng = np.random.default_rng(seed_for("model_e2e", "attention", str(length)))
    q, k, v = (mx.array(rng.standard_normal(s).astype(np.float32))
               for s in ((2, 4, length, 8), (2, 2, total, 8), (2, 2, total, 8)))
    mask = "causal" if length > 1 else None
    want = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.35, mask=mask)
    got = model_e2e.explicit_attention(lambda s: mx.softmax(s, axis=-1))(q, k, v, None, 0.35, mask)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-5)


def test_a_jitted_norm_traces_to_the_line_of_its_source(tmp_path):
    fns = model_e2e.written_functions(1e-6)
    f = autoperfect.jit(fns["rms_norm"], cache_dir=tmp_path, race=False)
    x, w = mx.ones((2, 3, 64)), mx.ones((64,))
    np.testing.assert_allclose(np.array(f(x, w)), np.array(fns["rms_norm"](x, w)), rtol=1e-6)
    (kernel,) = f.last_trace.kernels
    assert kernel.lines == ("<model_e2e rms_norm>:2: return x * mx.rsqrt(mx.mean(x * x, axis=-1, "
                            "keepdims=True) + 1e-06) * w",)


def test_the_report_shows_the_model_and_flags_different_tokens(measured, tmp_path):
    from autoperfect import report

    stamp = {"condition": "test", "measured_at": "now"}
    (tmp_path / "model_e2e.json").write_text(json.dumps({**measured, **stamp}))
    text = "\n".join(report.runtime_section(str(tmp_path)))
    assert "identical: **yes**" in text and "| jit |" in text and "| stock |" in text
    broken = {**measured, "checks": {**measured["checks"], "jit": {**measured["checks"]["jit"],
                                                                   "identical_tokens": False}}}
    (tmp_path / "model_e2e.json").write_text(json.dumps({**broken, **stamp}))
    assert "identical: **NO**" in "\n".join(report.runtime_section(str(tmp_path)))
