"""The learned schedule model: what it reads from a schedule, that it learns a knob's effect from
other kernels' timings and ranks a new kernel's variants by it, that it declines where it can't, and
that the runtime gates a never-timed kernel's best-ranked variants first."""

from __future__ import annotations

import functools
import json
import math

import mlx.core as mx
import numpy as np
import pytest

import autoperfect
from autoperfect import cache as kcache
from autoperfect import runtime, schedule_model
from autoperfect.backends import cpu
from autoperfect.backends.cfamily import Schedule
from autoperfect.schedule_model import Timed
from autoperfect.spec import seed_for

SIG = [("x", (32, 64), "float32")]
FUNCTIONS = {
    "chain": (lambda a, b, c: (a * b + c) * a - b, [(n, (64, 64), "float32") for n in "abc"]),
    "rmsnorm": (lambda x: x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5), SIG),
    "layernorm": (lambda x: (x - mx.mean(x, axis=-1, keepdims=True))
                  / mx.sqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5), SIG),
    "gelu": (lambda x: 0.5 * x * (1 + mx.tanh(0.79788456 * (x + 0.044715 * x * x * x))), SIG),
    "softmax": (lambda x: mx.softmax(x, axis=-1), SIG),
}


@functools.cache
def kernel(name: str):
    fn, sig = FUNCTIONS[name]
    (k,) = [k for k in runtime.front_of(runtime.trace(fn, sig)).kernels if k is not None]
    return k


def law(s: Schedule) -> float:
    """A machine where 16 lanes halve a variant's time, split sums cost 30% and prefetching saves 20%."""
    return math.exp(-0.7 * (s.lanes == 16) + 0.3 * (s.split > 0) - 0.2 * (s.prefetch > 0))


def timed_by_law(name: str, noise: float = 0.01) -> Timed:
    k = kernel(name)
    rng = np.random.default_rng(seed_for("test_schedule_model", name))
    return Timed(k, k.launch.dims, {s.name: law(s) * (1 + noise * rng.standard_normal())
                                    for s in cpu.schedules_for(k)})


def remember(c: kcache.Cache, timed: list[Timed]) -> None:
    """Each launch's medians stored as the pipeline's cache stage stores them (the entry's own verdict
    a failed one: these kernels are never dispatched here)."""
    for t in timed:
        c.store(t.kernel, "cpu", "x", "src", None, {"passed": False, "reason": "a test's"},
                {"median_s": dict(t.median_s)}, "test")


def test_a_schedules_knobs_are_its_fields_flags_as_0_or_1_counts_as_set_and_log2():
    names, values = schedule_model.knobs(Schedule("x", lanes=16, piped=True, block=0))
    got = dict(zip(names, values))
    assert "name" not in got and got["piped"] == 1.0 and got["stash"] == 0.0
    assert got["lanes"] == 1.0 and got["lanes_log2"] == pytest.approx(math.log2(17) / 16)
    assert got["block"] == 0.0 and got["block_log2"] == 0.0


def test_it_learns_a_knobs_effect_from_other_kernels_and_ranks_a_new_kernels_variants_by_it():
    model = schedule_model.fit("cpu", [timed_by_law(n) for n in ("chain", "rmsnorm", "layernorm", "gelu")])
    assert model is not None and len(model.kernels) == 4
    weights = dict(zip(model.names, model.weights))
    assert weights["lanes"] < -0.2 and weights["split"] > 0.1 and weights["prefetch"] < -0.05
    held_out = timed_by_law("softmax", noise=0.0)
    order = model.rank(held_out.kernel, list(held_out.median_s))
    assert sorted(order) == sorted(held_out.median_s)
    truth = [held_out.median_s[v] for v in order]
    assert truth[0] == min(truth) and np.corrcoef(np.argsort(np.argsort(truth)), range(len(truth)))[0, 1] > 0.8


def test_leave_one_out_scores_each_kernel_by_a_model_fitted_without_it():
    timed = [timed_by_law(n) for n in FUNCTIONS]
    result = schedule_model.leave_one_out("cpu", timed, top=2)
    summary = result["summary"]
    assert summary["launches"] == len(FUNCTIONS) and all(r["trained_on"] == len(FUNCTIONS) - 1
                                                         for r in result["launches"])
    # ties of the law are broken by the 1% noise: the first two hold a variant within it of the fastest
    assert summary["mean_regret"] < 0.03 and summary["worst_regret"] < 0.05
    assert summary["mean_random_pair_regret"] > 0.1 and summary["mean_spearman"] > 0.5


def test_a_score_says_what_gating_only_the_first_variants_would_cost():
    s = schedule_model.score(["b", "a", "c"], {"a": 1.0, "b": 1.5, "c": 3.0}, top=1)
    assert s["fastest"] == "a" and not s["fastest_in_top"] and s["regret"] == pytest.approx(0.5)
    assert s["random_pair_regret"] == pytest.approx(np.mean([0.0, 0.5, 0.0]))  # pairs (b, a), (b, c), (a, c)
    assert schedule_model.score(["a", "b"], {"a": 1.0, "b": 2.0}, top=2)["regret"] == 0.0


def test_it_declines_with_too_few_kernels_a_draft_variant_or_broken_medians():
    assert schedule_model.fit("cpu", [timed_by_law("chain"), timed_by_law("gelu")]) is None
    broken = Timed(kernel("softmax"), (32, 64), {"libm": "slow", "libmvec": float("nan"), "libmvec_v16": -1.0})
    model = schedule_model.fit("cpu", [timed_by_law(n) for n in ("chain", "rmsnorm", "gelu")] + [broken])
    assert model is not None and "k_" in model.kernels[0] and kernel("softmax").name not in model.kernels
    k = kernel("layernorm")
    assert model.rank(k, ["rows", "claude_draft_1"]) is None


def test_the_cache_hands_the_model_every_kernels_timings_with_its_ir(tmp_path):
    c = kcache.Cache(tmp_path)
    remember(c, [timed_by_law(name) for name in ("chain", "rmsnorm")])
    found = c.timed("cpu")
    assert sorted(t.kernel.name for t in found) == sorted(kernel(n).name for n in ("chain", "rmsnorm"))
    index = c.timings_path(kernel("chain").name, "cpu")
    data = json.loads(index.read_text())
    del data["ir"]  # an index written before it kept the IR
    index.write_text(json.dumps(data))
    c.timings_path("k_broken", "cpu").write_text("{not json")
    assert [t.kernel.name for t in c.timed("cpu")] == [kernel("rmsnorm").name]


def test_a_kernel_never_timed_gates_the_models_best_ranked_variants_first(tmp_path, monkeypatch):
    """With other kernels' timings in the cache, a new kernel's first call gates the TOP variants the
    schedule model ranks first and marks the rest not gated, naming the model; where those all fail,
    the rest is gated."""
    c = kcache.Cache(tmp_path)
    remember(c, [timed_by_law(name) for name in ("chain", "rmsnorm", "layernorm", "softmax")])
    gated, fail_first = [], []
    real = runtime.quick_gate

    def recording(graphs, backend, libraries, timeout_s):
        ((kernel_name, libs),) = libraries.items()
        gated.append(sorted(libs))
        if fail_first:
            fail_first.clear()
            return {kernel_name: {v: {"passed": False, "reason": "planted failure"} for v in libs}}
        return real(graphs, backend, libraries, timeout_s)

    monkeypatch.setattr(runtime, "quick_gate", recording)
    fn, sig = FUNCTIONS["gelu"]
    variants = [s.name for s in cpu.schedules_for(kernel("gelu"))]
    assert len(variants) > schedule_model.TOP, "this machine's gelu has too few variants to rank"
    x = mx.array(np.random.default_rng(seed_for("test_schedule_model", "gelu-x")).standard_normal((32, 64),
                                                                                                    dtype=np.float32))
    before = c.timed("cpu")
    first = schedule_model.fit("cpu", before).rank(kernel("gelu"), variants)[:schedule_model.TOP]
    f = autoperfect.jit(fn, cache_dir=tmp_path, race=False)
    np.testing.assert_allclose(np.array(f(x)), np.array(fn(x)), rtol=2e-6, atol=1e-6)
    assert gated == [sorted(first)] and f.last_trace.kernels[0].variant in first
    entry = c.lookup(kcache.key_for(kernel("gelu"), "cpu"))
    skipped = {v: d["reason"] for v, d in entry.verdict["variants"].items() if d.get("gated") is False}
    assert set(skipped) == set(variants) - set(first)
    assert all("schedule model fitted on 4 kernels" in r for r in skipped.values())
    assert entry.bench["ranked_by"]["model"]["kernels"] == sorted(kernel(n).name for n in
                                                                  ("chain", "rmsnorm", "layernorm", "softmax"))

    fail_first.append(True)  # a new cache of the same timings: the ranked variants fail, the rest is gated
    other = tmp_path / "again"
    remember(kcache.Cache(other), before)
    gated.clear()
    g = autoperfect.jit(fn, cache_dir=other, race=False)
    np.testing.assert_allclose(np.array(g(x)), np.array(fn(x)), rtol=2e-6, atol=1e-6)
    assert gated == [sorted(first), sorted(set(variants) - set(first))]
    assert g.last_trace.kernels[0].variant not in first


def test_variants_turning_a_knob_no_timed_launch_varied_are_gated_beside_the_models_first(tmp_path, monkeypatch):
    """The ridge leaves the weight of a knob no launch varied at zero, ranking a variant that turns it
    as if it were off: such a variant (a reduction over axis 0's columns, where the timed kernels all
    reduce their last axis) is gated with the model's first TOP, not left ungated."""
    timed = [timed_by_law(n) for n in ("chain", "rmsnorm", "layernorm", "softmax")]
    model = schedule_model.fit("cpu", timed)
    fixed = dict(model.fixed)
    assert fixed["columns"] == (0.0,) and not {"lanes", "split", "prefetch"} & set(fixed)
    fn = lambda x: mx.max(x, axis=0)  # noqa: E731
    (k,) = [k for k in runtime.front_of(runtime.trace(fn, SIG)).kernels if k is not None]
    variants = [s.name for s in cpu.schedules_for(k)]
    columns = [s.name for s in cpu.schedules_for(k) if s.columns]
    assert columns and model.unseen(k, variants) == columns
    assert model.unseen(kernel("layernorm"), [s.name for s in cpu.schedules_for(kernel("layernorm"))]) == []

    c = kcache.Cache(tmp_path)
    remember(c, timed)
    gated = []
    real = runtime.quick_gate

    def recording(graphs, backend, libraries, timeout_s):
        ((libs,),) = [libraries.values()]
        gated.append(sorted(libs))
        return real(graphs, backend, libraries, timeout_s)

    monkeypatch.setattr(runtime, "quick_gate", recording)
    x = mx.array(np.random.default_rng(seed_for("test_schedule_model", "max0")).standard_normal((32, 64),
                                                                                                 dtype=np.float32))
    f = autoperfect.jit(fn, cache_dir=tmp_path, race=False)
    assert np.array_equal(np.array(f(x)), np.array(fn(x)))
    first = model.rank(k, variants)[:schedule_model.TOP]
    assert gated[0] == sorted(set(first) | set(columns))
