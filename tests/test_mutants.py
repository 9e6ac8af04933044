"""Mutation testing: each bug class is planted where it applies (and says why where it does not),
every planted mutant is rejected by the judge, and the mutants stage counts what the judge and the
KernelBench-style allclose check catch."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import numpy as np

from autoperfect import artifacts, backends, judge, mutants, report, stages, static
from autoperfect.judge import Settings, judge_candidates
from autoperfect.mutants import BUGS, Mutant, NotApplicable, plant
from autoperfect.ops import EXACT
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op, seed_for

from op_table import config_specs, small_shapes

BE = backends.get("cpu")
SPECS = config_specs()
# (one_pass_variance applies to the shifted variants alone: test_a_one_pass_variance_fails_...)
NORM = set(BUGS) - {"wrong_constant", "fma_contraction", "one_pass_variance"}
APPLIES = {  # config op -> the classes planted in its kernel (the others say why not)
    "chain": {"off_by_one", "skipped_tail", "sign_flip", "swapped_operands", "dropped_term",
              "precision_downcast", "race", "partial_write", "wrong_input", "fma_contraction"},
    "gelu_tanh": {"off_by_one", "skipped_tail", "wrong_row", "wrong_stride", "wrong_constant", "sign_flip",
                  "dropped_term", "precision_downcast", "race", "partial_write"},
    "softmax": {"off_by_one", "skipped_tail", "wrong_row", "wrong_stride", "sign_flip", "swapped_operands",
                "dropped_term", "precision_downcast", "uninitialized_accumulator", "race", "partial_write"},
    "layernorm": NORM, "rmsnorm": NORM, "add_rmsnorm": NORM,
    "mean_var": {"off_by_one", "skipped_tail", "wrong_row", "wrong_stride", "sign_flip", "swapped_operands",
                 "dropped_term", "precision_downcast", "uninitialized_accumulator", "race", "partial_write"},
}


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mutants-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOPERFECT_CACHE", str(root))
        yield root / "build"


def small(name: str):
    spec = SPECS[name]
    spec = spec.with_shapes(small_shapes(spec.inputs))
    (k,) = [k for k in front(spec).kernels if k is not None]
    return spec, k, BE.render(k, BE.schedules_for(k)[0])


@pytest.mark.parametrize("name", sorted(SPECS))
def test_classes_apply_where_expected(name):
    _, k, source = small(name)
    planted = plant(k, source)
    assert [p.bug for p in planted] == list(BUGS)
    applied = {p.bug for p in planted if isinstance(p, Mutant)}
    assert applied == APPLIES[name] and len(applied) >= 10
    for p in planted:
        if isinstance(p, NotApplicable):
            assert p.reason and "spelling" not in p.reason, p
        else:
            assert p.source != source and p.diff.startswith(("-", "+"))
            verdict = static.check(p.source, "cpu", k.name)
            # a bare accumulator is refused before anything runs (on the H200 its register held 0)
            assert verdict.passed != (p.bug == "uninitialized_accumulator"), (p.bug, verdict.reason)


@pytest.mark.parametrize("name", ["chain", "rmsnorm"])
def test_every_planted_mutant_is_rejected(name, build_dir):
    """All classes but the race, which needs a shape where threads meet (the next test)."""
    spec, k, source = small(name)
    for m in plant(k, source):
        if isinstance(m, NotApplicable) or m.bug == "race":
            continue
        built = BE.build(m.source, build_dir)
        assert built.ok, built.log
        verdict = judge_candidates(spec, "cpu", {k.name: built.library}, Settings(), None)
        assert not verdict["passed"], f"the {m.bug} mutant passed:\n{m.diff}"


STAGED = {  # (the op, its inputs, the stored output's last loop as the renderer writes it)
    "elementwise": ("def staged(x, y, w):\n    return x * w + y\n", ("x", "y", "w"),
                    "out3[r * N + j] = ap_f16_store(ap_h3[j - jc]);"),
    "rows": ("def staged(x, w):\n    return w * (x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5))\n",
             ("x", "w"), "out2[r * N + j] = ap_f16_store(ap_h2[j]);"),
}


@pytest.mark.parametrize("kind", sorted(STAGED))
def test_the_bugs_of_a_staged_float16_kernel_land_in_its_stages(kind, build_dir):
    """A float16 kernel stages its rows through float buffers (CRenderer.staged_loop, an elementwise
    kernel's a chunk at a time; staged_row, a row kernel's a row at a time): the loop bugs land in
    the loop that stores each stage's last elements, a weight row read as a scalar reads its first
    element, a misread input reads another's stage; every one is rejected on rows of a stage and a
    part of one, the part longer than its whole vectors."""
    fn, names, stored = STAGED[kind]
    inputs = {n: {"shape": [300] if n == "w" else [6, 300], "dtype": "float16"} for n in names}
    spec = parse_op("staged", {"fn": fn, "inputs": inputs})
    (k,) = [k for k in front(spec).kernels if k is not None]
    source = BE.render(k, BE.schedules_for(k)[0])
    assert "ap_f16_widen(" in source and "ap_f16_narrow(" in source
    planted = {m.bug: m for m in plant(k, source) if isinstance(m, Mutant)}
    assert {"off_by_one", "skipped_tail", "wrong_row", "wrong_broadcast", "wrong_input", "partial_write"} <= set(planted)
    assert f"j <= {'je' if kind == 'elementwise' else 'N'}; j++) {stored}" in planted["off_by_one"].diff
    for bug, m in planted.items():
        if bug == "race":  # test_a_planted_race_is_rejected: a shape where threads meet
            continue
        built = BE.build(m.source, build_dir)
        assert built.ok, built.log
        verdict = judge_candidates(spec, "cpu", {k.name: built.library}, Settings(), None)
        assert not verdict["passed"], f"the {bug} mutant passed:\n{m.diff}"


SPELLED_BY_SCHEDULE = {  # (op, dtype, a schedule whose source spells its loads unlike the default one)
    "in-registers": ("def f(x, w):\n    return w * (x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5))\n",
                     "float16", "rows_v16_fma"),
    "staged-scratch": ("def f(x, w):\n    return mx.softmax(x * w, axis=-1, precise=True)\n",
                       "bfloat16", "libmvec_scratch_v16"),
}


@pytest.mark.parametrize("case", sorted(SPELLED_BY_SCHEDULE))
def test_bugs_are_planted_in_the_spelling_of_the_source_s_own_schedule(case, build_dir):
    """A schedule decides how some statements are spelled (a float16 row read in registers by a
    vectors schedule, a bfloat16 row staged by a scratch stash, a division by a row value
    inverted): the site renders the source's own schedule (cpu.schedule_of), so a misread input or
    weight lands where the machine runs it, and the judge rejects it."""
    fn, dtype, name = SPELLED_BY_SCHEDULE[case]
    inputs = {"x": {"shape": [6, 300], "dtype": dtype}, "w": {"shape": [300], "dtype": dtype}}
    spec = parse_op("f", {"fn": fn, "inputs": inputs})
    (k,) = [k for k in front(spec).kernels if k is not None]
    schedule = next(s for s in BE.schedules_for(k) if s.name == name)
    source = BE.render(k, schedule)
    assert BE.schedule_of(k, source) == schedule
    planted = {m.bug: m for m in plant(k, source) if isinstance(m, Mutant)}
    for bug in ("wrong_broadcast", "wrong_input"):
        built = BE.build(planted[bug].source, build_dir)
        assert built.ok, built.log
        verdict = judge_candidates(spec, "cpu", {k.name: built.library}, Settings(), None)
        assert not verdict["passed"], f"the {bug} mutant passed:\n{planted[bug].diff}"


@pytest.mark.skipif(BE.vmath_object() is None, reason="our vector math does not build here")
def test_mutants_land_in_the_sigmoid_form_s_statements(build_dir):
    """A `_sigmoid` source spells kernel_ir.sigmoid_form's body, so the bugs are planted in its
    statements: every class GELU's tanh form takes, and the division's operands swapped besides;
    the judge rejects the statements' bugs."""
    spec, k, _ = small("gelu_tanh")
    source = BE.render(k, next(s for s in BE.schedules_for(k) if s.name == "apmath_v16_stream_sigmoid"))
    planted = {m.bug: m for m in plant(k, source) if isinstance(m, Mutant)}
    assert set(planted) == APPLIES["gelu_tanh"] | {"swapped_operands"}
    assert "+      const float v13 = (v12 / v0);" in planted["swapped_operands"].diff
    for bug in ("swapped_operands", "dropped_term", "sign_flip"):
        built = BE.build(planted[bug].source, build_dir)
        assert built.ok, built.log
        verdict = judge_candidates(spec, "cpu", {k.name: built.library}, Settings(), None)
        assert not verdict["passed"], f"the {bug} mutant passed:\n{planted[bug].diff}"


@pytest.mark.skipif(not BE.avx512() or BE.vmath_object() is None, reason="vector groups are AVX-512")
def test_mutants_reach_the_vector_groups(build_dir):
    """In `apmath_scratch_avx512` a statement is spelled twice, once in the vector groups the
    machine runs and once in the `omp simd` groups the `#if` leaves out (and in the row's tail).
    A bug planted in the second alone would be a bug nothing runs. So the statement rewrites reach
    the vector groups, and on rows of whole groups (no other shape, no tail) every mutant fails but
    two: the skipped tail, which only a row with a tail shows, and the flipped sign of x - max,
    which softmax does not see short of overflow (exp(x + max) / sum exp(x + max) is the same
    softmax; the judge's other shapes and draws catch it, as the pipeline's mutants stage shows)."""
    spec = SPECS["softmax"].with_shapes({i.name: (4, 256) for i in SPECS["softmax"].inputs})
    (k,) = [k for k in front(spec).kernels if k is not None]
    source = BE.render(k, next(s for s in BE.schedules_for(k) if s.name == "apmath_scratch_avx512"))
    planted = {m.bug: m for m in plant(k, source) if isinstance(m, Mutant)}
    for bug in ("sign_flip", "swapped_operands"):
        assert "+                const __m512 v" in planted[bug].diff, planted[bug].diff
    for bug, m in planted.items():
        if bug in ("race", "skipped_tail", "sign_flip", "uninitialized_accumulator"):
            continue  # the race: test_a_planted_race_is_rejected; the accumulator: refused statically
        built = BE.build(m.source, build_dir)
        assert built.ok, built.log
        verdict = judge_candidates(spec, "cpu", {k.name: built.library}, Settings(shapes=0, hidden_draws=0), None)
        assert not verdict["passed"], f"the {bug} mutant passed on whole groups:\n{m.diff}"


@pytest.mark.parametrize("name", ["mean_var", "layernorm"])
def test_a_one_pass_variance_fails_on_rows_far_from_zero_alone(name, build_dir):
    """E[x^2] - mean^2 on rows of shifted_from's length (the shifted spread's test taken out, every row
    taken as centred) passes every class of inputs near 0 and fails the "offset" rows, at the spec's
    shapes where the judge draws them, and mean/var's "structured" rows too (a row of one value
    repeated gets a spread of -6e-7, not 0); the verified shifted kernel passes them all."""
    spec = SPECS[name].with_shapes({i.name: (64, 1024)[-len(i.shape):] for i in SPECS[name].inputs})
    f = front(spec)
    (k,) = [k for k in f.kernels if k is not None]
    source = BE.render(k, next(s for s in BE.schedules_for(k) if s.name == "rows_shifted_v16"))
    (m,) = [m for m in plant(k, source) if m.bug == "one_pass_variance"]
    assert isinstance(m, Mutant) and "if (1)" in m.source and "if (N >= " in m.source
    exact = all(n.op in EXACT for n in f.canonical.nodes)
    for src, caught in ((source, set()), (m.source, {"offset"} | ({"structured"} if name == "mean_var" else set()))):
        built = BE.build(src, build_dir)
        assert built.ok, built.log
        prog = program(f, {k.name: BE.Kernel(k, built.library)})
        failed = {cls for cls in judge.CLASSES
                  if not judge.check_shape(f, prog, spec, cls, np.random.default_rng(seed_for(name, cls)), exact)["passed"]}
        assert failed == caught
    assert "offset" in judge.call_classes(spec)
    others = [p for p in plant(k, BE.render(k, BE.schedules_for(k)[0])) if p.bug == "one_pass_variance"]
    assert isinstance(others[0], NotApplicable) and "pass of their own" in others[0].reason


RACE_TRIES = 8


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a race needs two threads")
@pytest.mark.parametrize("op, variant", [("softmax", "libm"), ("softmax", "libmvec_scratch_v16"),
                                         ("chain", "block16k"), ("chain", "block16k_v16")])
def test_a_planted_race_is_rejected(build_dir, op, variant):
    """In a `parallel for` and in a `parallel` region with its `for` inside (the streaming variants,
    whose threads fence their stores before the region ends); rows shared, or an elementwise
    kernel's blocks."""
    spec = SPECS[op].with_shapes({i.name: (2048, 1024) if op == "softmax" else (1 << 20,)
                                  for i in SPECS[op].inputs})
    (k,) = [k for k in front(spec).kernels if k is not None]
    schedule = next(s for s in BE.schedules_for(k) if s.name == variant)
    source = BE.render(k, schedule)
    assert ("#pragma omp parallel for" in source) == (variant in ("libm", "block16k"))
    (race,) = [m for m in plant(k, source) if m.bug == "race"]
    built = BE.build(race.source, build_dir)
    # A race does harm only where the two threads run at once. On a loaded machine one thread may
    # finish its share before the other is scheduled (CI beside a mutants run let the softmax and
    # chain races pass), so the judge gets up to RACE_TRIES runs to see it.
    for _ in range(RACE_TRIES):
        verdict = judge_candidates(spec, "cpu", {k.name: built.library}, Settings(shapes=0, hidden_draws=0), None)
        if not verdict["passed"]:
            break
    assert not verdict["passed"]
    assert "unwritten" in verdict["reason"] or "differs from the first run" in verdict["reason"] \
        or "expected" in verdict["reason"], verdict["reason"]


def test_mutants_stage_counts_the_judge_and_allclose(build_dir, tmp_path, monkeypatch):
    """Two classes through the real children: a dropped weight (both checks catch it) and a missing
    epsilon (a relative change of ~1e-6 on normal inputs: only the judge does)."""
    monkeypatch.setattr(mutants, "BUGS", {b: BUGS[b] for b in ("dropped_term", "missing_epsilon")})
    inputs = {"x": {"shape": [16, 40]}, "w": {"shape": [40]}}
    spec = parse_op("rms", {"fn": SPECS["rmsnorm"].fn, "inputs": inputs})
    (k,) = [k for k in front(spec).kernels if k is not None]
    first, second = BE.schedules_for(k)[:2]
    libraries = {s.name: BE.build(BE.render(k, s), build_dir).library for s in (first, second)}
    artifacts.write_json(tmp_path / "kernels.json", {"kernels": [{"kernel": k.to_json()}]})
    artifacts.write_json(tmp_path / "validation.json", {"backend": "cpu", "passed": True,
                                                        "verified": {k.name: libraries}})
    settings = {"shapes": 2, "hidden_draws": 0, "runs": 2, "timeout_s": 120.0, "memory_gb": 8.0}
    stages.mutants_stage(json.dumps(spec.to_json()), str(tmp_path / "kernels.json"),
                         str(tmp_path / "validation.json"), settings, str(build_dir),
                         str(tmp_path / "mutants.json"))
    result = json.loads((tmp_path / "mutants.json").read_text())
    # both verified variants mutated, each with both classes
    assert (result["planted"], result["caught"], result["baseline_caught"]) == (4, 4, 2)
    assert result["variants"] == {k.name: sorted([first.name, second.name])}
    assert sorted((m["variant"], m["class"]) for m in result["mutants"]) == sorted(
        (v.name, b) for v in (first, second) for b in ("dropped_term", "missing_epsilon"))
    assert [(r["variant"], r["planted"], r["control"]["passed"]) for r in result["by_variant"]] == [
        (v, 2, True) for v in sorted([first.name, second.name])]
    by_class = {m["class"]: m for m in result["mutants"] if m["variant"] == first.name}
    assert by_class["dropped_term"]["baseline"]["caught"]
    assert not by_class["missing_epsilon"]["baseline"]["caught"]
    assert "not allclose" in by_class["dropped_term"]["baseline"]["reason"]
    assert "expected" in by_class["missing_epsilon"]["judge"]["reason"]
    assert by_class["missing_epsilon"]["diff"].startswith("-")


def test_combined_mutants_count_only_variants_whose_control_passed():
    classes = {"sign_flip": ("a sign flipped", None)}
    passed = {"control": {"passed": True, "reason": "passed"}, "planted": 2, "caught": 2, "baseline_caught": 1,
              "mutants": [{"class": "sign_flip"}, {"class": "wrong_row"}],
              "not_applicable": [{"class": "race", "reason": "no threads"}], "classes": classes}
    failed = {"control": {"passed": False, "reason": "crash"}, "planted": 0, "caught": 0, "baseline_caught": 0,
              "mutants": [], "not_applicable": [], "classes": classes, "skipped": "the verified kernels fail"}
    record = stages.combine_mutants([("k", "rows", passed), ("k", "rows_v16", failed)])
    assert (record["planted"], record["caught"], record["baseline_caught"]) == (2, 2, 1)
    assert {m["variant"] for m in record["mutants"]} == {"rows"} and "skipped" not in record
    assert record["not_applicable"] == [{"class": "race", "reason": "no threads", "variant": "rows"}]
    assert [r["variant"] for r in record["by_variant"]] == ["rows", "rows_v16"]
    assert record["by_variant"][1]["skipped"] == "the verified kernels fail"
    alone = stages.combine_mutants([("k", "rows_v16", failed)])
    assert alone["planted"] == 0 and alone["skipped"] == "k.rows_v16: the verified kernels fail"


def test_mutants_stage_skips_an_op_that_failed_validation(tmp_path):
    artifacts.write_json(tmp_path / "validation.json", {"backend": "cpu", "passed": False, "reason": "wrong"})
    stages.mutants_stage(json.dumps(SPECS["chain"].to_json()), "unused", str(tmp_path / "validation.json"),
                         {}, str(tmp_path), str(tmp_path / "mutants.json"))
    result = json.loads((tmp_path / "mutants.json").read_text())
    assert (result["planted"], result["caught"], result["baseline_caught"]) == (0, 0, 0)
    assert result["skipped"] == "validation failed: wrong"


def test_report_sets_the_judge_beside_allclose(tmp_path):
    artifacts.write_json(tmp_path / "chain/cpu/mutants.json", {
        "planted": 2, "caught": 2, "baseline_caught": 1,
        "mutants": [{"class": "sign_flip", "judge": {"caught": True}, "baseline": {"caught": True}},
                    {"class": "fma_contraction", "judge": {"caught": True}, "baseline": {"caught": False}}]})
    lines = report.mutants_section(str(tmp_path), ["chain", "softmax"], ["cpu"])
    assert "| chain/cpu | 2 | 2/2 | 1/2 | – | fma_contraction |" in lines
    assert any(line.startswith("| softmax/cpu | not run") for line in lines)
    artifacts.write_json(tmp_path / "softmax/cpu/mutants.json", {
        "planted": 2, "caught": 1, "baseline_caught": 2,
        "mutants": [{"class": "skipped_tail", "variant": "rows_v16", "judge": {"caught": False},
                     "baseline": {"caught": True}},
                    {"class": "skipped_tail", "variant": "rows", "judge": {"caught": True}, "baseline": {"caught": True}}]})
    lines = report.mutants_section(str(tmp_path), ["softmax"], ["cpu"])
    assert "| softmax/cpu | 2 | 1/2 | 2/2 | skipped_tail (rows_v16) | – |" in lines
