"""The judge: correct kernels pass however they order a reduction, at every dtype, run after run;
kernels that crash, hang, write out of bounds or into their inputs, or disagree with themselves are
rejected with a reason; approximated functions are measured in ULPs against their stated bounds."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import numpy as np
import pytest

import autoperfect

from autoperfect import artifacts, backends, interp, judge, program, static, stages
from autoperfect.backends import cpu
from autoperfect.backends.cfamily import Schedule
from autoperfect.bounds import propagate
from autoperfect.judge import Settings, judge_candidates, run_isolated
from autoperfect.mutants import Mutant, plant
from autoperfect.pipeline import front
from autoperfect.spec import parse_op, seed_for

from op_table import config_specs, small_shapes

BE = backends.get("cpu")


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    """Builds, and the judge's probe builds (through AUTOPERFECT_CACHE), in one place per module."""
    root = tmp_path_factory.mktemp("judge-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOPERFECT_CACHE", str(root))
        yield root / "build"


def build(source: str, where: Path) -> str:
    b = BE.build(source, where)
    assert b.ok, b.log
    return b.library


def compiled(spec, where: Path) -> list[dict[str, str]]:
    """Every choice of the compiler's candidates for `spec` (one kernel here: one dict per variant)."""
    out = []
    for k in (k for k in front(spec).kernels if k is not None):
        out += [{k.name: build(BE.render(k, s), where)} for s in BE.schedules_for(k)]
    return out


def op(name: str, fn: str, **inputs) -> object:
    return parse_op(name, {"fn": fn, "inputs": inputs})


# -- the compiler's own kernels: every config op, several fresh hidden draws ---------------------------

SPECS = config_specs()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_config_ops_pass_draw_after_draw(name, build_dir):
    """Every candidate of every config op, at small shapes, with three fresh hidden draws per shape."""
    spec = SPECS[name]
    spec = spec.with_shapes(small_shapes(spec.inputs))
    approximated = {i.op.value for k in front(spec).kernels if k is not None for i in k.body
                    if i.op in judge.ULP_BOUND}
    for n, libraries in enumerate(compiled(spec, build_dir)):
        hidden = seed_for("draws", name, str(n))
        verdict = judge_candidates(spec, "cpu", libraries, Settings(hidden_draws=3), hidden)
        assert verdict["passed"], verdict["reason"]
        assert verdict["hidden"] == {"draws": 3 * judge.Settings().shapes, "failed": 0}
        assert set(verdict["ulp"]) == approximated
        assert all(u["within_bound"] for u in verdict["ulp"].values())


# -- float16 and bfloat16 ----------------------------------------------------------------------------

SIXTEEN = {
    "half_softmax": op("half_softmax", "def half_softmax(x):\n    return mx.softmax(x, axis=-1)\n",
                       x={"shape": [24, 100], "dtype": "float16"}),
    # as models write it: computed in float32, cast back (one kernel: the weight's cast is recomputed
    # at each element), at a size where some float32 results round to the other bfloat16 neighbour
    "bf16_rmsnorm_upcast": op("bf16_rmsnorm_upcast", "def bf16_rmsnorm_upcast(x, w):\n"
                              "    xf = x.astype(mx.float32)\n"
                              "    y = xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-5)\n"
                              "    return (y * w.astype(mx.float32)).astype(x.dtype)\n",
                              x={"shape": [128, 512], "dtype": "bfloat16"}, w={"shape": [512], "dtype": "bfloat16"}),
    "bf16_rmsnorm": op("bf16_rmsnorm", "def bf16_rmsnorm(x, w):\n"
                       "    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w\n",
                       x={"shape": [24, 100], "dtype": "bfloat16"}, w={"shape": [100], "dtype": "bfloat16"}),
}


@pytest.mark.parametrize("name", sorted(SIXTEEN))
def test_sixteen_bit_ops_pass_and_their_mutants_fail(name, build_dir):
    """The spec's dtype decides what is drawn, computed and compared; a 16-bit kernel passes, and
    every planted bug but the race (too small a shape for threads to meet) is caught in it."""
    spec = SIXTEEN[name]
    (libraries,) = compiled(spec, build_dir)[:1]
    verdict = judge_candidates(spec, "cpu", libraries, Settings(), seed_for("sixteen", name))
    assert verdict["passed"], verdict["reason"]
    (k,) = [k for k in front(spec).kernels if k is not None]
    # each approximated function is probed in the dtype it computes in (float32 where the op upcasts)
    assert {u["dtype"] for u in verdict["ulp"].values()} == {i.dtype for i in k.body if i.op in judge.ULP_BOUND}
    source = Path(libraries[k.name]).with_suffix(".c").read_text()
    mutants = [m for m in plant(k, source) if isinstance(m, Mutant) and m.bug != "race"]
    assert len(mutants) >= 8
    for m in mutants:
        v = judge_candidates(spec, "cpu", {k.name: build(m.source, build_dir)}, Settings(), None)
        assert not v["passed"], f"{name}: the {m.bug} mutant passed\n{m.diff}"


def test_a_cast_bounds_both_roundings_where_its_source_is_inexact():
    """A float32 sum that lands exactly on a bfloat16 tie (1 + 2^-8) rounds to even, down to 1, while
    the exact sum, a hair above the tie, rounds up to 1 + 2^-7: a correct kernel, computing in
    float32 and casting as asked, is a whole bfloat16 ulp from the reference, so the cast's bound is
    its source's error plus two roundings, not one; where the source is exact, one rounding."""
    tie = front(op("tie", "def tie(x, y):\n    return (x + y).astype(mx.bfloat16)\n",
                   x={"shape": [2], "dtype": "float32"}, y={"shape": [2], "dtype": "float32"}))
    xs = [np.float32([1 + 2 ** -8, 1 + 2 ** -8]), np.float32([2 ** -30, 0.0])]
    ref = interp.evaluate(tie.traced, xs, "float64")[0]
    native = interp.evaluate(tie.canonical, xs, "native")[0]
    bound = propagate(tie.canonical, xs)[1][tie.canonical.outputs[0]]
    assert ref[0] == 1 + 2 ** -7 and native[0] == 1.0
    assert abs(native[0] - ref[0]) <= bound[0] < 2 ** -6
    cast = front(op("cast", "def cast(x):\n    return x.astype(mx.bfloat16)\n", x={"shape": [2], "dtype": "float32"}))
    bound = propagate(cast.canonical, xs[:1])[1][cast.canonical.outputs[0]]
    assert np.all(bound <= 2 ** -8 * (1 + 2 ** -7))


def test_sums_whose_terms_add_past_the_largest_float_are_not_judged_where_they_cancel():
    """A sum in some order may overflow on the way where its terms' magnitudes add up past float32's
    largest value although it cancels to a finite value: MLX's float32 matmul gave -inf where
    float64 held -1.5e38 (a matmul epilogue never passed the judge's special inputs). Such elements
    get no bound (NaN: not judged); a row whose magnitudes stay below it is judged as before, and a
    kernel that returns inf for it fails."""
    big = float(np.float32(0.9 * np.finfo(np.float32).max))
    xs = [np.float32([[big, big, -big, -big], [big, -1.0, 2.0, 3.0]])]
    e = judge.expected(*[r[ROWSUM_SMALL.canonical.outputs[0]] for r in propagate(ROWSUM_SMALL.canonical, xs)])
    assert e.judgeable.tolist() == [[False], [True]]
    got = np.array([[np.inf], [np.inf]])
    assert judge.compare(got, e, 0)[0].index == (1, 0)
    mm = front(op("mm", "def mm(x, w):\n    return mx.maximum(x @ w, 0.0)\n", x={"shape": [2, 4]}, w={"shape": [4, 1]}))
    vals, errs = propagate(mm.canonical, [xs[0], np.float32([[1.0], [1.0], [1.0], [1.0]])])
    assert np.isnan(errs[mm.canonical.outputs[0]]).tolist() == [[True], [False]]


def test_an_approximated_function_may_flush_a_subnormal_result_to_zero():
    """MLX's exp flushes what lies below float32's smallest normal value (mx.exp(-103.) is 0, not
    1.4e-45), as GPU math libraries' fast paths do: a kernel downstream of it must not be blamed,
    so an approximated function's result below the smallest normal may be 0; a normal one may not."""
    f = front(op("e", "def e(x):\n    return mx.exp(x)\n", x={"shape": [3]}))
    xs = [np.float32([-103.0, -88.0, -80.0])]
    vals, errs = propagate(f.canonical, xs)
    out = f.canonical.outputs[0]
    ok, _ = judge.compare(np.array([0.0, 0.0, np.exp(-80.0)]), judge.expected(vals[out], errs[out]), 0)
    assert ok is None
    wrong, _ = judge.compare(np.array([0.0, 0.0, 0.0]), judge.expected(vals[out], errs[out]), 0)
    assert wrong.index == (2,)
    assert float(mx_exp(-103.0)) == 0.0  # what the allowance is for


@pytest.mark.parametrize("fn", ["exp", "sigmoid", "erf"])
def test_an_answer_key_for_mlxs_regions_allows_mlxs_functions(fn):
    """The jit's gate computes every region but the gated kernel's with MLX, whose exp and sigmoid
    on this CPU are off by about |x| ulps and whose erf by an absolute 4e-7 (0 for erf(4e-16)):
    an answer key with `mlx` holds them within its bounds over the ramp's [-64, 64] and near 0,
    and still rejects a value a hundredth off."""
    import mlx.core as mx

    f = front(op("f", f"def f(x):\n    return mx.{fn}(x)\n", x={"shape": [8193 + 401]}))
    x = np.concatenate([np.linspace(-64, 64, 8193), np.float32(10.0) ** np.linspace(-30, 0, 401)]).astype(np.float32)
    got = np.array(getattr(mx, fn)(mx.array(x))).astype(np.float64)
    out = f.canonical.outputs[0]
    vals, errs = propagate(f.canonical, [x], mlx=True)
    assert judge.compare(got, judge.expected(vals[out], errs[out]), 0)[0] is None
    off, _ = judge.compare(got * 1.01, judge.expected(vals[out], errs[out]), 0)
    assert off is not None
    vals, errs = propagate(f.canonical, [x])
    assert judge.compare(got, judge.expected(vals[out], errs[out]), 0)[0] is not None  # what it is for


ROWSUM_SMALL = front(op("rowsum4", "def rowsum4(x):\n    return mx.sum(x, axis=-1, keepdims=True)\n", x={"shape": [2, 4]}))


def mx_exp(x: float):
    import mlx.core as mx
    return mx.exp(mx.array(x, dtype=mx.float32)).item()


# -- no false rejections: hand-written kernels that order their sums otherwise ---------------------------

ROWSUM = op("rowsum", "def rowsum(x):\n    return mx.sum(x, axis=-1, keepdims=True)\n",
            x={"shape": [64, 300]})
LAYERNORM = op("layernorm", SPECS["layernorm"].fn, x={"shape": [48, 200]}, w={"shape": [200]},
               b={"shape": [200]})

# Two sums per variant: of a row, and of its squared deviations from m (no function pointers).
SUMS = {
    "pairwise": """\
static float sum_of(const float *p, int64_t n) {
  if (n <= 8) { float s = 0.0f; for (int64_t i = 0; i < n; i++) s += p[i]; return s; }
  return sum_of(p, n / 2) + sum_of(p + n / 2, n - n / 2);
}
static float dev_of(const float *p, int64_t n, float m) {
  if (n <= 8) { float s = 0.0f; for (int64_t i = 0; i < n; i++) s += (p[i] - m) * (p[i] - m); return s; }
  return dev_of(p, n / 2, m) + dev_of(p + n / 2, n - n / 2, m);
}
""",
    "kahan": """\
#define KAHAN(TERM) float s = 0.0f, c = 0.0f; \\
  for (int64_t i = 0; i < n; i++) { float y = (TERM) - c; float t = s + y; c = (t - s) - y; s = t; } \\
  return s;
static float sum_of(const float *p, int64_t n) { KAHAN(p[i]) }
static float dev_of(const float *p, int64_t n, float m) { KAHAN((p[i] - m) * (p[i] - m)) }
""",
    "four_lanes_reversed": """\
static float sum_of(const float *p, int64_t n) {
  float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = n - 1; i >= 0; i--) lane[i % 4] += p[i];
  return (lane[3] + lane[1]) + (lane[2] + lane[0]);
}
static float dev_of(const float *p, int64_t n, float m) {
  float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = n - 1; i >= 0; i--) lane[i % 4] += (p[i] - m) * (p[i] - m);
  return (lane[3] + lane[1]) + (lane[2] + lane[0]);
}
""",
}
ROWSUM_C = """\
#include <stdint.h>
#include <math.h>
{sums}
void {name}(void **bufs, const int64_t *dims, const int64_t *strides) {{
  const float *restrict x = (const float *)bufs[0];
  float *restrict out = (float *)bufs[1];
  const int64_t R = dims[0], N = dims[1];
  {rows}
  for (int64_t r = 0; r < R; r++) {{
{body}
  }}
}}
"""
# one row's sum split over threads in 4 fixed chunks, combined in a fixed order (deterministic)
CHUNKED = """\
    float part[4];
    #pragma omp parallel for schedule(static)
    for (int q = 0; q < 4; q++) part[q] = sum_of(x + r * strides[0] + q * N / 4, (q + 1) * N / 4 - q * N / 4);
    out[r] = (part[0] + part[1]) + (part[2] + part[3]);"""
WHOLE_ROW = "    out[r] = sum_of(x + r * strides[0], N);"
LAYERNORM_C = """\
#include <stdint.h>
#include <math.h>
{sums}
void {name}(void **bufs, const int64_t *dims, const int64_t *strides) {{
  const float *restrict x = (const float *)bufs[0];
  const float *restrict w = (const float *)bufs[1];
  const float *restrict b = (const float *)bufs[2];
  float *restrict out = (float *)bufs[3];
  const int64_t R = dims[0], N = dims[1];
  {rows}
  for (int64_t r = 0; r < R; r++) {{
    const float *row = x + r * strides[0];
    const float mean = sum_of(row, N) / (float)N;
    const float scale = 1.0f / sqrtf(dev_of(row, N, mean) / (float)N + 1e-5f);
    for (int64_t j = 0; j < N; j++)
      out[r * N + j] = (row[j] - mean) * scale * w[r * strides[2] + j] + b[r * strides[4] + j];
  }}
}}
"""
PARALLEL_ROWS = {"rows in parallel": "#pragma omp parallel for schedule(static)",
                 "rows dealt dynamically": "#pragma omp parallel for schedule(dynamic, 3)"}


def variants():
    """Each summation tree in both kernels, with three ways of sharing the work between threads."""
    for sums in SUMS:
        yield pytest.param(ROWSUM, ROWSUM_C, sums, PARALLEL_ROWS["rows in parallel"], WHOLE_ROW,
                           id=f"rowsum-{sums}-rows in parallel")
        yield pytest.param(LAYERNORM, LAYERNORM_C, sums, PARALLEL_ROWS["rows dealt dynamically"], "",
                           id=f"layernorm-{sums}-rows dealt dynamically")
    yield pytest.param(ROWSUM, ROWSUM_C, "kahan", "", CHUNKED, id="rowsum-kahan-chunks over threads")


@pytest.mark.parametrize("spec, template, sums, rows, body", variants())
def test_reordered_reductions_pass(spec, template, sums, rows, body, build_dir):
    (k,) = [k for k in front(spec).kernels if k is not None]
    assert [a.name for a in k.inputs] == [f"{i.name}_{n}" for n, i in enumerate(spec.inputs)]
    source = template.format(sums=SUMS[sums], name=k.name, rows=rows, body=body)
    assert static.check(source, "cpu", k.name).passed, static.check(source, "cpu", k.name).reason
    verdict = judge_candidates(spec, "cpu", {k.name: build(source, build_dir)}, Settings(),
                               seed_for("reordered", sums, rows))
    assert verdict["passed"], verdict["reason"]


# -- misbehaving kernels: a verdict with a reason each, and the run goes on -----------------------------

BAD = {  # statement at the start of a row -> what the verdict says
    "segfault": ("*(volatile float *)0 = 1.0f;", "crashed with SIGSEGV"),
    "out_of_bounds": ("out[R + 3] = 0.0f;", "wrote out of bounds after output out0"),
    "writes_input": ("((float *)bufs[0])[r] = 0.0f;", "wrote into its input x_0"),
    # past the fence, into the address space after the buffer that no one may touch
    "far_out_of_bounds": ("if (r == 0) out[R + 300] = 0.0f;", "crashed with SIGSEGV"),
    # before the fence, and before an input's start: into the bytes beside the buffer, which
    # passed (a write into the heap beside a user's array) until they were checked
    # (program.written_beside); and a read far before an input, its value unused, which passed
    # until address space without access lay before every buffer too
    "far_before_output": ("if (r == 0) out[-300] = 0.0f;", "wrote out of bounds before output out0"),
    "before_input": ("if (r == 0) ((float *)bufs[0])[-3] = 0.0f;", "wrote out of bounds before input x_0"),
    "reads_far_before_input": ("if (r == 0 && x[-2000] == 1e30f) { out[r] = 0.0f; continue; }", "crashed with SIGSEGV"),
    # a read of the element before its input's start (a prefix sum's x[i - 1] at i = 0, unguarded),
    # which zeros there left right: the bytes beside every buffer read as NaN (program.SLACK)
    "reads_before_input": ("if (r == 0) { out[r] = x[-1] + sum_of(x, N); continue; }", "inputs 'normal'"),
    # a read of the element after its input's end, where rows are odd (a loop over pairs whose
    # last pair runs over; zeros there change nothing): the last run ends every buffer at that
    # address space (judge.FLUSH), where the others' ends leave up to 63 bytes (the alternate
    # shape's 1x1031 floats end 36 bytes before it at the first run's placement)
    "reads_past_input": ("const float past = (N & 1) && r == R - 1 ? x[r * strides[0] + N] : 0.0f; "
                         "if (past != 0.0f) { out[r] = past; continue; }", "crashed with SIGSEGV"),
    # wrong on one thread only (OMP_NUM_THREADS=1), or where its input lies 16 bytes or more past a
    # cache line: the first run (every core, buffers on 64-byte boundaries) is right
    "threads": ("int omp_get_num_threads(void); if (omp_get_num_threads() == 1) { out[r] = 1e3f; continue; }",
                "differs from the first run"),
    "address": ("if (((uintptr_t)x & 63) >= 16) { out[r] = 1.5f * sum_of(x + r * strides[0], N); continue; }",
                "differs from the first run"),
    # rows real data holds and random draws never do: all zero (left unwritten), carried from
    # bfloat16 (low 16 bits zero); a band of values no random class reaches
    "zero_rows": ("if (x[r * strides[0]] == 0.0f && x[r * strides[0] + N - 1] == 0.0f) continue;",
                  "inputs 'structured"),
    "bfloat16_rows": ("uint32_t b0; __builtin_memcpy(&b0, x + r * strides[0], 4); "
                      "if (N > 8 && b0 && !(b0 & 0xFFFF)) { out[r] = 0.0f; continue; }", "inputs 'structured"),
    "band": ("int band = 0; for (int64_t j = 0; j < N; j++) band |= x[r * strides[0] + j] > 20.0f && "
             "x[r * strides[0] + j] < 20.2f; if (band) { out[r] = 1e3f; continue; }", "inputs 'ramp'"),
    # a first row one ulp up where the output lies off a cache line: within every bound, and not
    # the same bits wherever the buffer lies (a row's head computed otherwise than its body)
    "placement": ("if (((uintptr_t)out & 63) && r == 0) { out[r] = nextafterf(sum_of(x, N), INFINITY); continue; }",
                  "differs from the first run"),
}


def rowsum_source(statement: str = "") -> tuple[str, str]:
    (k,) = [k for k in front(ROWSUM).kernels if k is not None]
    return k.name, ROWSUM_C.format(sums=SUMS["pairwise"], name=k.name, rows=PARALLEL_ROWS["rows in parallel"],
                                   body=f"    {statement}\n{WHOLE_ROW}")


def test_validate_records_each_bad_candidate_and_verifies_the_good_one(build_dir, tmp_path):
    name, good = rowsum_source()
    candidates = [{"kernel": name, "variant": "good", "name": f"{name}.good", "ok": True,
                   "library": build(good, build_dir)}]
    for variant, (statement, _) in BAD.items():
        candidates.append({"kernel": name, "variant": variant, "name": f"{name}.{variant}", "ok": True,
                           "library": build(rowsum_source(statement)[1], build_dir)})
    artifacts.write_json(tmp_path / "compile.json", {"backend": "cpu", "candidates": candidates})
    (k,) = [k for k in front(ROWSUM).kernels if k is not None]
    artifacts.write_json(tmp_path / "kernels.json", {"kernels": [{"kernel": k.to_json()}]})
    settings = {"shapes": 1, "hidden_draws": 0, "runs": 3, "timeout_s": 120.0, "memory_gb": 8.0}
    stages.validate(json.dumps(ROWSUM.to_json()), str(tmp_path / "kernels.json"),
                    str(tmp_path / "compile.json"), settings, str(tmp_path / "validation.json"))
    result = json.loads((tmp_path / "validation.json").read_text())
    assert result["passed"] and list(result["verified"][name]) == ["good"]
    reasons = {c["variant"]: c.get("reason", "") for c in result["candidates"]}
    for variant, (_, words) in BAD.items():
        assert words in reasons[variant], (variant, reasons[variant])


def test_a_guarded_region_is_lent_again_once_its_array_is_gone_and_cleared_outside_the_new_data(monkeypatch):
    """The guarded runs keep their regions for the next buffer of the same size (a fresh one's
    page faults cost most of the gate's runs at 4096x1024): never one whose array (or a view of it)
    is alive, and with nothing another run left beside the data."""
    monkeypatch.setattr(program, "_REGIONS", program._Regions())  # none kept from other tests
    a = program.placed((1000,), np.float32, 8, guard=True)
    region = a.base.base.obj  # the mmap: a guard, its usable bytes, a guard
    whole = np.frombuffer(region, np.uint8, count=len(region) - 2 * program.GUARD, offset=program.GUARD)
    whole[:] = 0xAB  # what a kernel might leave before and after its buffer
    alive = program.placed((1000,), np.float32, 8, guard=True)
    assert alive.base.base.obj is not region
    del a
    again = program.placed((1000,), np.float32, 0, guard=True)
    assert again.base.base.obj is region
    start = again.ctypes.data - whole.ctypes.data
    assert start % 64 == 0 and 0 <= len(whole) - (start + again.nbytes) < 64
    assert (whole[:start] == program.SLACK).all() and (whole[start + again.nbytes:] == program.SLACK).all()
    assert (whole[start:start + again.nbytes] == 0xAB).all()  # the data is the caller's
    assert program.written_beside(again) is None
    whole[start - 3] = 0
    assert program.written_beside(again) == ("before", 3)


def test_a_flush_buffer_of_whole_pages_meets_address_space_without_access_at_both_ends():
    """The check's last run (judge.FLUSH) ends every buffer at the guard after it, in a region just
    large enough, so a buffer of whole pages (a 4096x1024 float32's) also starts right after the
    guard before it: a read of the element before it or after it faults (test_validate_records_...
    plants both)."""
    a = program.placed((2, 1024), np.float32, None, guard=True)
    region = a.base.base.obj
    assert a.ctypes.data - ctypes.addressof(ctypes.c_char.from_buffer(region)) == program.GUARD
    assert len(region) == 2 * program.GUARD + a.nbytes


def test_a_nan_of_another_sign_where_the_buffers_lie_elsewhere_is_the_same_result(build_dir):
    """A check's later runs place every buffer elsewhere (judge.run_placement) and must
    give the same bits, but for NaN: IEEE 754 does not interpret a NaN's sign, and a compiler may
    order a commutative operation's operands otherwise in a row's head and body (the LayerNorm
    backward's contracted variants did: docs/experiments/2026-12-07d-cpu/placement.out)."""
    (k,) = [k for k in front(ROWSUM).kernels if k is not None]
    flips = "\n    if (((uintptr_t)out & 63) && out[r] != out[r]) out[r] = -out[r];"
    library = build(ROWSUM_C.format(sums=SUMS["pairwise"], name=k.name, rows="", body=WHOLE_ROW + flips), build_dir)
    x = np.ones((64, 300), np.float32)
    x[1, 3] = np.nan
    runs = [program.guarded_call(cpu.Kernel(k, library), k, [x], offset=offset)[0].reshape(-1).view(np.uint32)
            for offset in (0, 8)]
    assert np.isnan(runs[0][1:2].view(np.float32)).all() and runs[0][1] != runs[1][1]  # the kernel flips it
    assert (np.delete(runs[0], 1) == np.delete(runs[1], 1)).all()
    verdict = judge_candidates(ROWSUM, "cpu", {k.name: library}, Settings(), seed_for("nan sign"))
    assert verdict["passed"], verdict["reason"]
    specials = [c for s in verdict["shapes"] if s.get("status") == "checked" for c in s["checks"]
                if c["class"] == "special"]
    assert specials and all(c["not_judgeable"] + c["judged"] > 0 for c in specials)


def test_a_hang_is_a_verdict(build_dir):
    name, source = rowsum_source("volatile int spin = 1; while (spin) {}")
    verdict = run_isolated(ROWSUM, "cpu", {name: build(source, build_dir)}, Settings(timeout_s=3.0))
    assert not verdict["passed"] and verdict["reason"].startswith("timed out after 3 s")



@pytest.mark.parametrize("gpu", [False, True])
def test_a_child_is_capped_at_the_judges_memory_only_where_mlx_drives_no_gpu(tmp_path, monkeypatch, gpu):
    """A GPU context reserves far more address space than it uses; MLX's CUDA build starts the GPU
    when imported (for the CPU's kernels too) and fails under the CPU's cap, which once made every
    kernel the runtime gated on the H200 fail."""
    import resource

    (tmp_path / "rlimit_probe.py").write_text(
        "import json, resource, sys\nsys.stdin.read()\n"
        "print(json.dumps({'passed': True, 'as': resource.getrlimit(resource.RLIMIT_AS)[0]}))\n")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{Path(__file__).resolve().parents[1]}")
    monkeypatch.setattr(backends, "drives_gpu", lambda: gpu)
    settings = Settings(memory_gb=3.0)
    caps = {b: judge.run_child("rlimit_probe", {}, settings, b)["as"] for b in ("cpu", "mlx", "cuda", "metal")}
    unlimited = resource.getrlimit(resource.RLIMIT_AS)[0]
    assert unlimited != 3 * 2**30
    assert caps == {"cpu": unlimited if gpu else 3 * 2**30, "mlx": unlimited if gpu else 3 * 2**30,
                    "cuda": unlimited, "metal": unlimited}


@pytest.mark.skipif(len(autoperfect.CPUS) < 2, reason="one CPU: nothing to unpin")
def test_a_child_runs_on_every_cpu_where_the_thread_starting_it_is_pinned_to_one(tmp_path, monkeypatch):
    """Bound OpenMP pins the thread that loads libgomp (the first kernel's library) to one core, and
    what that thread starts inherits it: a first call's gate ran on one of two cores for it. The
    judge's children (and compilers, and the benchmarks' children) are started unpinned."""
    import os

    (tmp_path / "affinity_probe.py").write_text(
        "import json, os, sys\nsys.stdin.read()\n"
        "print(json.dumps({'passed': True, 'cpus': sorted(os.sched_getaffinity(0))}))\n")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{Path(__file__).resolve().parents[1]}")
    mine, one = os.sched_getaffinity(0), {min(autoperfect.CPUS)}
    os.sched_setaffinity(0, one)
    try:
        reply = judge.run_child("affinity_probe", {}, Settings(), "cpu")
        after = os.sched_getaffinity(0)
    finally:
        os.sched_setaffinity(0, mine)
    assert reply["cpus"] == sorted(autoperfect.CPUS) and after == one


# -- approximated functions: ULPs measured one function at a time --------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_ulp_error_counts_units_in_the_last_place(dtype):
    ref = np.array([1.0, 3.0, -1000.0, 2.0 ** -130])
    step = np.array([2.0 ** (1 - judge.PRECISION[dtype]), 2.0 ** (2 - judge.PRECISION[dtype]),
                     2.0 ** (10 - judge.PRECISION[dtype]),
                     2.0 ** (np.log2(judge.dtypes.TINY[dtype]) + 1 - judge.PRECISION[dtype])])
    assert np.array_equal(judge.ulp_error(ref + 3 * step, ref, dtype), [3.0, 3.0, 3.0, 3.0])
    assert np.array_equal(judge.ulp_error(ref, ref, dtype), np.zeros(4))


def test_sweeps_cover_every_sixteen_bit_value_and_every_float32_binade():
    half = judge.sweep(-2.0, 2.0, "float16")
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float64)
    assert np.array_equal(half, np.unique(every[np.isfinite(every) & (np.abs(every) <= 2)]))
    x = judge.sweep(1e-30, 1e30, "float32", 4096)
    assert set(np.unique(np.floor(np.log2(x)))) >= set(range(-99, 99))


class SloppyExp:
    """The cpu backend with an exp 8 ulps high: its kernels call a sloppy function."""
    NAME, Kernel = "cpu", cpu.Kernel
    build, schedules_for, source_of = staticmethod(cpu.build), staticmethod(cpu.schedules_for), staticmethod(cpu.source_of)
    probe_schedule = staticmethod(cpu.probe_schedule)

    @staticmethod
    def render(k, schedule):
        helper = "static inline float ap_sloppy_exp(float x) { return expf(x) * (1.0f + 0x1p-21f); }\n"
        source = cpu.render(k, schedule).replace("\nstatic inline", "\n" + helper + "static inline", 1)
        return source.replace("= expf(v", "= ap_sloppy_exp(v")


def test_a_function_past_its_stated_bound_is_rejected(build_dir):
    """A source that is no rendering of the backend's (no .c beside the library) is probed with every
    schedule the backend uses for the function; the worst must hold the stated bound."""
    (k,) = front(SPECS["softmax"].with_shapes({"x": (4, 8)})).kernels
    report, reason = judge.function_accuracy(SloppyExp, [k], {k.name: str(build_dir / "none.so")})
    assert 5 < report["exp"]["worst_ulp"] < 12 and not report["exp"]["within_bound"]
    assert reason.startswith("exp (") and "its stated bound is 4 ulp" in reason
    honest, none = judge.function_accuracy(BE, [k], {k.name: str(build_dir / "none.so")})
    assert none is None and honest["exp"]["within_bound"]


@pytest.mark.parametrize("fn", sorted(judge.ULP_BOUND, key=lambda o: o.value), ids=lambda o: o.value)
def test_rendered_functions_meet_their_stated_bounds(fn, build_dir):
    """Down to the denormal results (sigmoid below -88.7, where 1/(1+expf(-x)) would give 0)."""
    for schedule in (Schedule("libm"), Schedule("libmvec", vector_math=True)):
        result = judge.probe(BE, fn, "float32", schedule)
        assert result["within_bound"], (schedule.name, result)


def test_a_process_measures_each_rendered_probe_once(build_dir, monkeypatch):
    """A gate judges several variants in one child: a probe whose rendering another variant's
    already measured is not built and run again, and a different rendering is measured anew."""
    measured = []
    real = judge._probe
    monkeypatch.setattr(judge, "_PROBED", {})
    monkeypatch.setattr(judge, "_probe", lambda be, op, dtype, s, src: measured.append(s.name) or real(be, op, dtype, s, src))
    first = judge.probe(BE, judge.Op.EXP, "float32", Schedule("libmvec", vector_math=True))
    again = judge.probe(BE, judge.Op.EXP, "float32", Schedule("another_name", vector_math=True))
    scalar = judge.probe(BE, judge.Op.EXP, "float32", Schedule("libm"))
    assert measured == ["libmvec", "libm"]
    assert again == first and scalar["schedule"] == "libm"
    sloppy = judge.probe(SloppyExp, judge.Op.EXP, "float32", Schedule("libm"))
    assert measured == ["libmvec", "libm", "libm"] and not sloppy["within_bound"]


# -- the spec's scale with odd rows --------------------------------------------------------------------

def test_large_specs_are_also_checked_at_their_scale_with_rows_no_vector_width_divides():
    """Odd axes, the last at least 7 longer, the element count 39 past a multiple of 64 (a flat
    loop's last block keeps a tail past any aligning head of up to 15 floats)."""
    big = parse_op("norm", {"fn": "def norm(x, w):\n    return x * w\n",
                            "inputs": {"x": {"shape": [4096, 1024], "dtype": "float32"},
                                       "w": {"shape": [1024], "dtype": "float32"}}})
    assert judge.scale_shapes(big) == {"x": (4097, 1063), "w": (1063,)}
    assert 4097 * 1063 % 64 == judge.SCALE_RESIDUE
    flat = parse_op("chain", {"fn": "def chain(a, b):\n    return a * b\n",
                              "inputs": {"a": {"shape": [1 << 24], "dtype": "float32"},
                                         "b": {"shape": [1 << 24], "dtype": "float32"}}})
    assert judge.scale_shapes(flat) == {"a": ((1 << 24) + 39,), "b": ((1 << 24) + 39,)}
    square = parse_op("sq", {"fn": "def sq(x, y):\n    return x + y\n",
                             "inputs": {"x": {"shape": [2048, 2048], "dtype": "float32"},
                                        "y": {"shape": [1, 2048], "dtype": "float32"}}})
    grown = judge.scale_shapes(square)
    assert grown["x"][0] == grown["x"][1] == grown["y"][1] and grown["y"][0] == 1
    assert grown["x"] == (2048 + 7, 2048 + 7)  # no odd square is 39 past a multiple of 64 (nor of 8): 7 longer
    odd = parse_op("sq", {"fn": "def sq(x):\n    return x * x\n",
                          "inputs": {"x": {"shape": [2047, 2047], "dtype": "float32"}}})
    assert judge.scale_shapes(odd) == {"x": (2047 + 8, 2047 + 8)}  # odd still: the first odd size 7 on
    small = parse_op("norm", {"fn": "def norm(x, w):\n    return x * w\n",
                              "inputs": {"x": {"shape": [64, 1024], "dtype": "float32"},
                                         "w": {"shape": [1024], "dtype": "float32"}}})
    assert judge.scale_shapes(small) is None  # alt_shapes reach its size already


def test_a_streamed_flat_kernel_that_drops_its_last_elements_is_caught_at_scale(tmp_path, monkeypatch):
    """The chain's streaming variant over 16M elements: its last block's tail follows a head that
    aligns the output on a cache line (up to 15 floats). With the last axis only 7 longer the 7
    dropped elements fell into that head and the mutant passed (mutants.json at 4fccce0); the grown
    scale leaves 39 past a multiple of 64."""
    monkeypatch.setenv("AUTOPERFECT_CACHE", str(tmp_path))
    spec = parse_op("chain", {"fn": "def chain(a, b, c):\n    return (a * b + c) * a - b\n",
                              "inputs": {n: {"shape": [1 << 24], "dtype": "float32"} for n in "abc"}})
    (k,) = [k for k in front(spec).kernels if k is not None]
    (streaming,) = [s for s in cpu.schedules_for(k) if s.name == "block16k_stream"]
    (bug,) = [m for m in plant(k, cpu.render(k, streaming), "cpu") if isinstance(m, Mutant) and m.bug == "skipped_tail"]
    build = BE.build(bug.source, tmp_path)
    assert build.ok, build.log
    verdict = judge_candidates(spec, "cpu", {k.name: build.library}, Settings(), None)
    assert not verdict["passed"] and f"[{(1 << 24) + 39}]" in verdict["reason"], verdict["reason"]


def test_a_streamed_row_kernel_that_drops_its_last_elements_is_caught_at_scale(tmp_path, monkeypatch):
    """RMSNorm 4096x1024 streams its stores (16 MB); its rows are multiples of 8, and the small
    shapes never stream: only the spec's scale with odd rows (1063) meets the dropped tail."""
    monkeypatch.setenv("AUTOPERFECT_CACHE", str(tmp_path))
    spec = parse_op("rmsnorm", {"fn": "def rmsnorm(x, w):\n"
                                "    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w\n",
                                "inputs": {"x": {"shape": [4096, 1024], "dtype": "float32"},
                                           "w": {"shape": [1024], "dtype": "float32"}}})
    (k,) = [k for k in front(spec).kernels if k is not None]
    (wide,) = [s for s in cpu.schedules_for(k) if s.name == "rows_v16"]
    source = cpu.render(k, wide)
    assert "AP_NT_STORE" in source
    (bug,) = [m for m in plant(k, source, "cpu") if isinstance(m, Mutant) and m.bug == "skipped_tail"]
    build = BE.build(bug.source, tmp_path)
    assert build.ok, build.log
    verdict = judge_candidates(spec, "cpu", {k.name: build.library}, Settings(), None)
    assert not verdict["passed"] and "[4097, 1063]" in verdict["reason"], verdict["reason"]


def test_offset_rows_sit_far_from_zero_and_some_heads_lie():
    """Each "offset" row sits up to OFFSET times its spread from 0 (half of them by a factor in [0.5,
    1] of its own, half by one in [0.01, 0.5], either side); about one row in LYING_ROWS keeps its
    first LYING_HEAD values about 0."""
    spec = parse_op("o", {"fn": "def o(x, w):\n    return x * w\n",
                          "inputs": {"x": {"shape": [400, 300], "dtype": "float32"},
                                     "w": {"shape": [300], "dtype": "float16"}}})
    x, w = judge.draw(spec, "offset", np.random.default_rng(seed_for("offset rows")))
    tail = x[:, judge.LYING_HEAD:]
    c = np.abs(tail.mean(axis=1))
    assert np.all(c >= 0.01 * judge.OFFSET["float32"] - 1) and np.all(c <= judge.OFFSET["float32"] + 1)
    assert (c >= 0.5 * judge.OFFSET["float32"] - 1).mean() == pytest.approx(0.5, abs=0.1)
    assert (c < 0.1 * judge.OFFSET["float32"]).mean() > 0.1  # the near band is drawn (300 times and less)
    assert (tail.mean(axis=1) > 0).mean() == pytest.approx(0.5, abs=0.1)
    assert np.all(np.abs(tail.std(axis=1) - 1) < 0.2)
    head = np.abs(x[:, :judge.LYING_HEAD].mean(axis=1))
    lying = head < 10
    assert lying.sum() == pytest.approx(400 / judge.LYING_ROWS, rel=0.4)
    assert np.all(np.abs(head[~lying] - c[~lying]) < 2)
    assert 0.01 * judge.OFFSET["float16"] - 1 <= abs(w.mean()) <= judge.OFFSET["float16"] + 1  # 1-D: one row
    assert "offset" in judge.call_classes(spec)
    ranged = parse_op("r", {"fn": "def r(x):\n    return mx.log(x)\n",
                            "inputs": {"x": {"shape": [8, 8], "dtype": "float32", "range": [0.5, 2]}}})
    assert "offset" not in judge.classes_for(ranged) + judge.call_classes(ranged)


def test_structured_rows_hold_what_real_data_does_and_the_ramp_walks_every_band():
    spec = parse_op("o", {"fn": "def o(x, w):\n    return x * w\n",
                          "inputs": {"x": {"shape": [12, 40], "dtype": "float32"},
                                     "w": {"shape": [40], "dtype": "float32"}}})
    x, w = judge.draw(spec, "structured", np.random.default_rng(seed_for("structured rows")))
    low_bits = (x.view(np.uint32) & 0xFFFF) == 0
    zero = (x == 0).all(axis=1)
    constant = (x == x[:, :1]).all(axis=1) & ~zero
    carried = low_bits.all(axis=1) & ~zero & ~constant
    whole = (x == np.round(x)).all(axis=1) & ~zero & ~constant
    few = np.array([len(np.unique(row)) <= 4 for row in x]) & ~zero & ~constant
    assert zero.sum() == constant.sum() == 2 and carried.sum() >= 2 and whole.sum() >= 2 and few.sum() >= 2
    assert (w != 0).all() and ((w.view(np.uint32) & 0xFFFF) == 0).all()  # a weight: from bfloat16, no zeros
    x, w = judge.draw(spec, "ramp", np.random.default_rng(seed_for("ramp")))
    step = 2 * judge.RAMP["float32"] / (x.size - 1)
    assert np.all(np.diff(x.reshape(-1)) > 0) and x.min() >= -judge.RAMP["float32"]
    assert x.max() <= judge.RAMP["float32"] + step and np.max(np.diff(x.reshape(-1))) < 1.01 * step
    assert abs(x.sum()) > 0 and not np.all(np.diff(w) > 0)  # no sum of 0; the next input shuffled


def test_fewer_rows_than_kinds_get_every_kind_over_several_structured_draws():
    """A spec of 3x7 held three of the six kinds of row in its one structured draw, and a kernel
    leaving all-zero rows unwritten passed it (the red team's f5): such shapes get as many draws as
    it takes, "structured 2" starting where "structured" left off."""
    spec = parse_op("o", {"fn": "def o(x, w):\n    return x * w\n",
                          "inputs": {"x": {"shape": [2, 2, 7], "dtype": "float32"},
                                     "w": {"shape": [7], "dtype": "float32"}}})
    names = [c for c in judge.classes_for(spec) if c.startswith("structured")]
    assert names == ["structured", "structured 2"] and judge.call_classes(spec)[-2:] == tuple(names)
    rows = np.concatenate([judge.draw(spec, c, np.random.default_rng(seed_for("turns", c)))[0].reshape(4, 7)
                           for c in names])
    zero = (rows == 0).all(axis=1)
    constant = (rows == rows[:, :1]).all(axis=1) & ~zero
    whole = (rows == np.round(rows)).all(axis=1) & ~zero & ~constant
    few = np.array([len(np.unique(row)) <= 4 for row in rows]) & ~zero & ~constant & ~whole
    carried = ((rows.view(np.uint32) & 0xFFFF) == 0).all(axis=1) & ~zero & ~constant
    assert np.flatnonzero(zero).tolist() == [0, 6] and np.flatnonzero(constant).tolist() == [1, 7]
    assert carried[2] and whole[3] and few[4] and not (few | whole | carried)[5]  # the kinds in turn
    tall = spec.with_shapes({"x": (3, 2, 7), "w": (7,)})
    assert [c for c in judge.classes_for(tall) if c.startswith("structured")] == ["structured"]


def test_a_child_that_raises_is_the_judges_own_failure_not_a_kernels_verdict():
    """A Python exception ends the child with a status (a kernel's crash is a signal): the reply
    says so (`harness`), and the runtime keeps no verdict from it."""
    from autoperfect import judge as judge_module

    reply = judge_module.run_child("autoperfect.no_such_module", {}, judge_module.Settings(timeout_s=60), "cpu")
    assert reply["passed"] is False and reply["harness"] is True
    assert "the judge's child failed" in reply["reason"] and "no_such_module" in reply["reason"]


def test_index_inputs_are_drawn_within_the_axis_they_gather_from():
    """Wherever inputs are drawn (the gate's keys, the bench, the planted bugs' allclose), an index
    input stays inside the axis it gathers from; drawn in [-100, 100], every answer key of a gather
    from fewer than 101 rows raised."""
    from autoperfect import judge as judge_module

    spec = parse_op("gather", {"fn": "def gather(x, i):\n    return mx.take(x, i, axis=0) * 2.0\n",
                               "inputs": {"x": {"shape": [5, 3], "dtype": "float32"},
                                          "i": {"shape": [400], "dtype": "int32"}}})
    _, i = judge_module.draw(spec, "normal", np.random.default_rng(seed_for("index draws")))
    assert i.min() >= 0 and i.max() == 4
