"""autoperfect.jit: eager results, cached dispatch, refused entries, the gate, fallbacks, the trace."""

from __future__ import annotations

import functools
import json
import os
import re
import time
import warnings
from dataclasses import replace
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

import autoperfect
from autoperfect import cache as kcache
from autoperfect import judge, native, runtime
from autoperfect import program as program_module
from autoperfect.backends import cpu
from autoperfect.generate import provider as real_provider
from autoperfect.spec import seed_for


pytestmark = pytest.mark.usefixtures("on_the_cpu")  # the runtime's logic on the cpu backend (conftest.py)


# The runtime's logic, without the first call's race against MLX's own ops (whose outcome is the
# machine's timing): the race's own tests below turn it on.
jit = functools.partial(autoperfect.jit, race=False)


def swish_shift(x, b):
    return (x + b) * mx.tanh(x + b) - 0.5


def rows_and_sums(x):
    m = mx.sum(x, axis=0, keepdims=True)
    return mx.exp(x) * 2.0 - m, m


def arrays(name: str, *shapes) -> list:
    rng = np.random.default_rng(seed_for("test_runtime", name))
    return [mx.array(rng.standard_normal(s).astype(np.float32)) for s in shapes]


def assert_close(got, want) -> None:
    got, want = (got, want) if isinstance(want, (tuple, list)) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=2e-6, atol=1e-6)


def entry_files(root: Path) -> list[Path]:
    return sorted(root.glob("cpu-*/*.json"))


class Mutating:
    """The compiler provider, with `mutate` applied to the sources of the kernels it names (every
    variant's, or with `first_only` the first variant's alone)."""
    name = "compiler"

    def __init__(self, mutate, kernels=None, first_only=False):
        self.mutate, self.kernels, self.first_only = mutate, kernels, first_only

    def generate(self, kernel, backend):
        candidates = real_provider("compiler").generate(kernel, backend)
        if self.kernels is not None and kernel.name not in self.kernels:
            return candidates
        count = 1 if self.first_only else len(candidates)
        changed = [replace(c, source=self.mutate(c.source)) for c in candidates[:count]]
        assert all(a.source != b.source for a, b in zip(changed, candidates))
        return changed + candidates[count:]


def off_by_a_little(source: str) -> str:
    """Every stored element 1e-4 too large: a few hundred ulps, far outside any float32 bound."""
    return re.sub(r"(out\d+\[[^\]]*\] = )([vr]\d+);", r"\1\2 * 1.0001f;", source)


def at_entry(code: str):
    """A mutation putting `code` first in the kernel's body."""
    return lambda source: re.sub(r"(void k_\w+\([^)]*\) \{)", lambda m: f"{m.group(1)} {code}", source, count=1)


null_write = at_entry("*(volatile int *)0 = 0;")
endless_loop = at_entry("volatile int spin = 1; while (spin) {}")


def test_an_unseen_function_matches_eager_and_hits_the_cache_on_its_second_call(tmp_path):
    x, b = arrays("unseen", (6, 40), (40,))
    f = jit(swish_shift, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b))
    (first,) = f.last_trace.kernels
    assert first.cache == "compiled" and f.last_trace.setup["gate"] > 0
    assert_close(f(x, b), swish_shift(x, b))
    (second,) = f.last_trace.kernels
    assert second.cache == "memory" and second.runs == first.runs and not f.last_trace.setup
    assert any(line.startswith(__file__) and "mx.tanh(x + b) - 0.5" in line for line in second.lines)
    again = jit(swish_shift, cache_dir=tmp_path, allow_compile=False)
    assert_close(again(x, b), swish_shift(x, b))
    assert [r.cache for r in again.last_trace.kernels] == ["disk"]
    assert "gate" not in again.last_trace.setup
    assert f.stats()["kernel_sources"] == {"compiled": 1, "memory": 1}


def test_inside_mx_compile_the_first_call_compiles_and_dispatches_its_kernel(tmp_path):
    """The usual MLX model step: the jitted function called inside mx.compile, whose arguments are
    placeholders that can't be evaluated. The variants are timed on arrays of their own, so the
    first call still compiles, and the compiled step keeps the kernel (not an eager fallback)."""
    x, b = arrays("inside compile", (6, 40), (40,))
    f = jit(swish_shift, cache_dir=tmp_path)
    step = mx.compile(lambda x, b: f(x * 2.0, b))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the compiler's failure is a warning: none may come
        assert_close(step(x, b), swish_shift(x * 2.0, b))
    trace = f.last_trace
    assert not trace.eager and [r.cache for r in trace.kernels] == ["compiled"], trace.describe()
    assert_close(step(b + x, b), swish_shift((b + x) * 2.0, b))  # replayed, on new values


def test_both_decorator_forms(tmp_path):
    @jit
    def plain(x):
        return x * 3.0

    @jit(allow_compile=False, cache_dir=tmp_path)
    def cached_only(x):
        return x * 3.0

    assert isinstance(plain, runtime.Jit) and plain.__name__ == "plain"
    (x,) = arrays("decorators", (5, 7))
    out = cached_only(x)
    assert np.array_equal(np.array(out), np.array(x * 3.0))
    assert "compiling is off" in cached_only.last_trace.eager + " ".join(cached_only.last_trace.misses)
    assert entry_files(tmp_path) == []


def test_tuple_and_list_results_keep_their_structure(tmp_path):
    def pair(x):
        return x + 1.0, x * x

    def single_list(x):
        return [x * 2.0 - 1.0]

    (x,) = arrays("structure", (3, 9))
    got = jit(pair, cache_dir=tmp_path)(x)
    assert isinstance(got, tuple) and len(got) == 2
    assert_close(got, pair(x))
    f = jit(single_list, cache_dir=tmp_path)
    got = f(x)
    assert isinstance(got, list) and f.last_trace.kernels
    assert_close(got, single_list(x))


def test_grad_jvp_and_vmap_go_through_the_kernels(tmp_path):
    """MLX's transformations of a function calling jitted ones: the derivatives are MLX's own of
    the function (the kernels know none), the forward values still the kernels' bits, a batch run
    as one kernel call per example; several outputs, an unbatched argument, a batch along a middle
    axis, and mx.compile around mx.grad."""
    x, b = arrays("transforms", (6, 40), (40,))
    f, g = jit(swish_shift, cache_dir=tmp_path), jit(rows_and_sums, cache_dir=tmp_path)
    forward = [np.array(f(x, b)), *map(np.array, g(x))]
    assert f.last_trace.kernels and g.last_trace.kernels

    def loss(h):
        return lambda x, b: mx.sum(h(x, b) * mx.cos(x))

    def loss2(h):
        return lambda x: mx.sum(h(x)[0] * mx.sin(x)) + mx.sum(h(x)[1] ** 2)

    value, grads = mx.value_and_grad(loss(f), argnums=(0, 1))(x, b)
    want_value, want = mx.value_and_grad(loss(swish_shift), argnums=(0, 1))(x, b)
    assert_close(value, want_value)
    assert_close(grads, want)
    assert_close(mx.grad(loss2(g))(x), mx.grad(loss2(rows_and_sums))(x))
    assert_close(mx.compile(mx.grad(loss(f)))(x, b), mx.grad(loss(swish_shift))(x, b))
    tangents = arrays("transforms tangents", (6, 40), (40,))
    assert_close(mx.jvp(f, [x, b], tangents)[1], mx.jvp(swish_shift, [x, b], tangents)[1])
    assert_close(mx.jvp(g, [x], tangents[:1])[1], mx.jvp(rows_and_sums, [x], tangents[:1])[1])
    (xs,) = arrays("transforms batch", (3, 6, 40))
    assert_close(mx.vmap(f, in_axes=(0, None))(xs, b), mx.vmap(swish_shift, in_axes=(0, None))(xs, b))
    middle = mx.swapaxes(xs, 0, 1)
    assert_close(mx.vmap(g, in_axes=1)(middle), mx.vmap(rows_and_sums, in_axes=1)(middle))
    assert f.last_trace.kernels and g.last_trace.kernels and not g.last_trace.eager
    # mx.grad of a vmapped call (of a twice vmapped one too): its derivative was all zeros, MLX
    # having traced the wrapping's body (under stop_gradient) where no vmap rule was given
    batched = [mx.vmap(h, in_axes=(0, None)) for h in (f, swish_shift)]
    got, want = (mx.grad(loss(h), argnums=(0, 1))(xs, b) for h in batched)
    assert np.abs(np.array(got[0])).sum() > 0
    assert_close(got, want)
    twice = [mx.vmap(mx.vmap(h, in_axes=(0, None)), in_axes=(1, None)) for h in (f, swish_shift)]
    assert_close(*(mx.grad(lambda x, h=h: mx.sum(mx.sin(h(x, b))))(middle) for h in twice))
    assert_close(*(mx.grad(lambda x, h=h: mx.sum(mx.vmap(h, in_axes=1)(x)[1]))(middle) for h in (g, rows_and_sums)))
    # the forward values are the kernels' own, bit for bit, before and after
    for got, want in zip([f(x, b), *g(x)], forward):
        assert np.array_equal(np.array(got), want)


def test_a_kernel_run_at_once_leaves_a_transformations_call_to_mlx_and_keeps_its_plan(tmp_path, monkeypatch):
    """The ctypes path evaluates its inputs, which MLX refuses inside mx.vmap and mx.compile: that
    call runs as MLX and says why, and the signature's next call runs its kernel again."""
    monkeypatch.setenv(native.DISABLE, "0")
    x, b = arrays("ctypes transforms", (6, 40), (40,))
    f = jit(swish_shift, cache_dir=tmp_path)
    f(x, b)
    assert [r.dispatch for r in f.last_trace.kernels] == ["ctypes"]
    xs = mx.stack([x, x * 2.0])
    assert_close(mx.vmap(f, in_axes=(0, None))(xs, b), mx.vmap(swish_shift, in_axes=(0, None))(xs, b))
    assert "can't take the arrays of a transformation" in f.last_trace.eager
    assert_close(mx.compile(f)(x, b), swish_shift(x, b))
    assert "can't take the arrays of a transformation" in f.last_trace.eager
    assert_close(mx.grad(lambda x: mx.sum(f(x, b)))(x), mx.grad(lambda x: mx.sum(swish_shift(x, b)))(x))
    assert_close(f(x, b), swish_shift(x, b))
    assert f.last_trace.kernels and not f.last_trace.eager


@pytest.mark.parametrize("damage, words", [
    (lambda d: {**d, "source": d["source"] + "\n/* edited */\n"}, "source does not match its sha256"),
    (lambda d: {**d, "key": {**d["key"], "kernel": "k_0000000000000000"}}, "another key"),
])
def test_a_corrupted_entry_is_refused_never_loaded_and_rebuilt(tmp_path, damage, words):
    x, b = arrays("corrupt", (4, 24), (24,))
    jit(swish_shift, cache_dir=tmp_path)(x, b)
    (path,) = entry_files(tmp_path)
    path.write_text(json.dumps(damage(json.loads(path.read_text()))))
    cached_only = jit(swish_shift, cache_dir=tmp_path, allow_compile=False)
    with pytest.warns(kcache.CacheWarning, match=words):
        out = cached_only(x, b)
    assert np.array_equal(np.array(out), np.array(swish_shift(x, b)))
    assert not cached_only.last_trace.kernels and "compiling is off" in cached_only.last_trace.misses[0]
    rebuilding = jit(swish_shift, cache_dir=tmp_path)
    with pytest.warns(kcache.CacheWarning, match=words):
        assert_close(rebuilding(x, b), swish_shift(x, b))
    assert [r.cache for r in rebuilding.last_trace.kernels] == ["compiled"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh = jit(swish_shift, cache_dir=tmp_path, allow_compile=False)
        fresh(x, b)
    assert [r.cache for r in fresh.last_trace.kernels] == ["disk"]


def test_a_wrong_kernel_fails_the_gate_and_its_verdict_is_remembered(tmp_path, monkeypatch):
    x, b = arrays("wrong", (5, 33), (33,))
    monkeypatch.setattr(runtime, "provider", lambda name: Mutating(off_by_a_little))
    f = jit(swish_shift, cache_dir=tmp_path)
    out = f(x, b)
    assert np.array_equal(np.array(out), np.array(swish_shift(x, b)))
    assert "no variant passed the gate" in f.last_trace.misses[0] and "expected" in f.last_trace.misses[0]
    monkeypatch.setattr(runtime, "provider", real_provider)
    again = jit(swish_shift, cache_dir=tmp_path)
    again(x, b)
    assert "cached verdict: failed" in again.last_trace.misses[0]



def test_a_gate_child_that_cannot_start_mlx_is_retried_not_remembered(tmp_path, monkeypatch):
    """On a GPU the gate's child once ran under the CPU's memory cap, and MLX's CUDA build failed to
    start there ("cudaMallocManaged failed: out of memory"): that failure was remembered as each
    kernel's verdict, so the runtime never dispatched a kernel on a GPU. A child that can't start
    MLX gives no verdict: the call runs in MLX, says why, and the next process gates again."""
    fake = tmp_path / "fake" / "mlx"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "core.py").write_text("raise ImportError('cudaMallocManaged(&data, size) failed: out of memory')\n")
    repo = str(Path(__file__).resolve().parents[1])
    # where MLX itself comes from PYTHONPATH (the device's install in /tmp/site), the retry keeps it
    path = os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
    x, b = arrays("no device", (4, 40), (40,))
    monkeypatch.setenv("PYTHONPATH", f"{fake.parent}{os.pathsep}{path}")  # the gate's children import the fake
    f = jit(swish_shift, cache_dir=tmp_path / "kernels")
    assert np.array_equal(np.array(f(x, b)), np.array(swish_shift(x, b)))
    assert "could not start MLX: ImportError: cudaMallocManaged" in f.last_trace.misses[0]
    monkeypatch.setenv("PYTHONPATH", path)
    again = jit(swish_shift, cache_dir=tmp_path / "kernels")
    assert_close(again(x, b), swish_shift(x, b))
    assert [r.cache for r in again.last_trace.kernels] == ["compiled"], again.last_trace.describe()


def test_the_gates_child_imports_this_package_wherever_the_caller_runs(tmp_path, monkeypatch):
    """Started from a directory that holds another `autoperfect` (a checkout of another version),
    the gate's child still judges with the caller's package: `python -m` would put the working
    directory first on its path."""
    other = tmp_path / "elsewhere" / "autoperfect"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("raise ImportError('the wrong autoperfect')\n")
    monkeypatch.chdir(other.parent)
    x, b = arrays("elsewhere", (4, 40), (40,))
    f = jit(swish_shift, cache_dir=tmp_path / "kernels")
    assert_close(f(x, b), swish_shift(x, b))
    assert [r.cache for r in f.last_trace.kernels] == ["compiled"], f.last_trace.describe()


def test_auto_compiles_for_mlxs_default_device(monkeypatch):
    """On a GPU machine `auto` once meant the CPU (the first backend available), so a user's GPU
    arrays were handed to CPU kernels; it follows MLX's default device now."""
    from autoperfect import backends

    assert jit(swish_shift).backend == "cpu"  # MLX computes on the CPU (on_the_cpu)
    gpu = type("Device", (), {"type": mx.DeviceType.gpu})()
    monkeypatch.setattr(mx, "default_device", lambda: gpu)
    monkeypatch.setattr(backends, "missing_device", lambda name: "" if name == "cuda" else "none here")
    assert backends.for_default_device() == "cuda"
    assert jit(swish_shift, backend="cpu").backend == "cpu"
    monkeypatch.setattr(backends, "missing_device", lambda name: "none here")
    assert backends.for_default_device() == "cpu"

def test_a_crashing_kernel_is_a_verdict_not_a_crash(tmp_path, monkeypatch):
    x, b = arrays("crash", (3, 17), (17,))
    monkeypatch.setattr(runtime, "provider", lambda name: Mutating(null_write))
    f = jit(swish_shift, cache_dir=tmp_path)
    assert np.array_equal(np.array(f(x, b)), np.array(swish_shift(x, b)))
    assert "crashed with SIGSEGV" in f.last_trace.misses[0]



def test_the_variants_share_a_child_and_a_crash_is_the_verdict_of_the_variant_that_crashed(tmp_path, monkeypatch):
    """One child gates every variant (each draw's answer key is computed once); when it crashes,
    each variant is gated again alone, so the crash is charged to the variant that caused it and
    the others still pass."""
    x, b = arrays("one crashes", (6, 50), (50,))
    traced = runtime.trace(swish_shift, [("x", (6, 50), "float32"), ("b", (50,), "float32")])
    k = next(k for k in runtime.front_of(traced).kernels if k is not None)
    first, *others = [c.variant for c in real_provider("compiler").generate(k, "cpu")]
    assert others
    monkeypatch.setattr(runtime, "provider", lambda name: Mutating(null_write, first_only=True))
    f = jit(swish_shift, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b))
    (region,) = f.last_trace.kernels
    assert region.variant in others
    (entry,) = [json.loads(p.read_text()) for p in entry_files(tmp_path)]
    summary = entry["verdict"]["variants"]
    assert "crashed with SIGSEGV" in summary[first]["reason"]
    assert all(summary[v]["passed"] for v in others)


def test_a_hang_in_the_shared_child_is_the_hanging_variants_verdict_alone(tmp_path, monkeypatch):
    """Past the shared child's time limit each variant is gated alone: the one that hangs times out
    (a verdict marked retry: not remembered) and the others still pass."""
    x, b = arrays("one hangs", (6, 50), (50,))
    monkeypatch.setattr(runtime, "provider", lambda name: Mutating(endless_loop, first_only=True))
    f = jit(swish_shift, cache_dir=tmp_path, timeout_s=4)
    assert_close(f(x, b), swish_shift(x, b))
    (region,) = f.last_trace.kernels
    (entry,) = [json.loads(p.read_text()) for p in entry_files(tmp_path)]
    summary = entry["verdict"]["variants"]
    hung = [v for v, d in summary.items() if not d["passed"]]
    assert len(hung) == 1 and summary[hung[0]]["reason"].startswith("timed out after 4 s")
    assert region.variant != hung[0]

def withheld(traced, seed: int) -> str:
    """The class of the gate's hidden draw on a call's own graph (runtime._withheld)."""
    k = next(k for k in runtime.front_of(traced).kernels if k is not None)
    return runtime._withheld(runtime._draws(k.name, runtime.front_of(traced), 0), seed)


def test_the_gate_computes_each_draws_answer_key_once_for_every_variant(monkeypatch):
    traced = runtime.trace(swish_shift, [("x", (4, 40), "float32"), ("b", (40,), "float32")])
    k = next(k for k in runtime.front_of(traced).kernels if k is not None)
    libraries = {c.variant: cpu.build(c.source).library for c in real_provider("compiler").generate(k, "cpu")}
    assert len(libraries) > 1
    made = []
    real_key = runtime.judge.answer_key
    monkeypatch.setattr(runtime.judge, "answer_key", lambda *a, **kw: made.append(a[2]) or real_key(*a, **kw))
    reply = runtime.gate({"graphs": [traced.to_json()], "backend": "cpu", "libraries": {k.name: libraries},
                          "hidden_seed": 7})
    assert set(reply["verdicts"][k.name]) == set(libraries)
    assert all(v["passed"] for v in reply["verdicts"][k.name].values()), reply
    # the call's classes and the hidden draw (of a class drawn from its seed), once each (computed in
    # threads: in any order)
    assert sorted(made) == sorted([*judge.call_classes(runtime.spec_of(traced)), withheld(traced, 7)])

def two_regions(x, b):
    return mx.sum(x * b, axis=0), mx.softmax(x + b, axis=-1)


def test_one_child_gates_every_kernel_of_a_call_on_answer_keys_computed_once(monkeypatch):
    """An answer key is the traced function's, whichever region a kernel computes: the gate judges
    two kernels' variants on keys computed once for both, as many as for one kernel."""
    traced = runtime.trace(two_regions, [("x", (4, 40), "float32"), ("b", (40,), "float32")])
    ks = [k for k in runtime.front_of(traced).kernels if k is not None]
    assert len(ks) == 2
    libraries = {k.name: {c.variant: cpu.build(c.source).library
                          for c in real_provider("compiler").generate(k, "cpu")[:2]} for k in ks}
    made = []
    real_key = runtime.judge.answer_key
    monkeypatch.setattr(runtime.judge, "answer_key", lambda *a, **kw: made.append(a[2]) or real_key(*a, **kw))
    reply = runtime.gate({"graphs": [traced.to_json()], "backend": "cpu", "libraries": libraries, "hidden_seed": 7})
    assert {k: set(v) for k, v in reply["verdicts"].items()} == {k: set(v) for k, v in libraries.items()}
    assert all(v["passed"] for vs in reply["verdicts"].values() for v in vs.values()), reply
    assert sorted(made) == sorted([*judge.call_classes(runtime.spec_of(traced)), withheld(traced, 7)])


def chained(x, b):
    s = mx.sum(x * b, axis=0)
    return s, mx.softmax(x + s, axis=-1)


@pytest.mark.parametrize("fn, reach", [(two_regions, [(0,), (1,)]), (chained, [(0, 1), (1,)])],
                         ids=["independent", "chained"])
def test_a_kernel_is_judged_on_the_outputs_its_values_reach_and_mlx_asked_for_no_other(fn, reach, monkeypatch):
    """A gated kernel's checks compare the outputs its values reach and no other (the others are
    MLX's alone): the guarded run hosts those only, so a region of MLX's that only another output
    needs is never evaluated (MLX is lazy)."""
    traced = runtime.trace(fn, [("x", (6, 50), "float32"), ("b", (50,), "float32")])
    front = runtime.front_of(traced)
    ks = [k for k in front.kernels if k is not None]
    assert [runtime.reached(front.canonical, k) for k in ks] == reach
    x, b = arrays("reach", (6, 50), (50,))
    xs = [np.array(x), np.array(b)]
    for k, outputs in zip(ks, reach):
        built = cpu.build(real_provider("compiler").generate(k, "cpu")[0].source).library
        prog = runtime.program(runtime.only(front, {k.name}), {k.name: cpu.Kernel(k, built)})
        full = prog.run_guarded(xs)
        hosted = []
        real_host = program_module._host
        monkeypatch.setattr(program_module, "_host", lambda a, dtype: hosted.append(a.shape) or real_host(a, dtype))
        got = prog.run_guarded(xs, outputs)
        monkeypatch.setattr(program_module, "_host", real_host)
        assert [g.tolist() for g in got] == [full[j].tolist() for j in outputs]
        # the kernel's inputs and the outputs asked for that MLX computes, nothing else (the
        # kernel's own outputs are on the host already)
        written = set(k.binds[len(k.inputs):])
        assert hosted == [front.canonical.nodes[i].shape for i in k.binds[:len(k.inputs)]] + [
            full[j].shape for j in outputs if front.canonical.outputs[j] not in written]


def test_a_calls_kernels_are_gated_together_and_a_crash_is_charged_to_its_own_kernel(tmp_path, monkeypatch):
    """A first call's kernels share the gate's child; when it crashes, each kernel is gated again
    in a child of its own, and the one that crashed again gates each of its variants alone: the
    other kernel passes in its one child, and the crashing variant's kernel runs another variant."""
    names = [k.name for k in runtime.front_of(runtime.trace(
        two_regions, [("x", (6, 50), "float32"), ("b", (50,), "float32")])).kernels if k is not None]
    gated = []
    real = runtime.quick_gate

    def recording(graphs, backend, libraries, timeout_s):
        gated.append({k: sorted(v) for k, v in libraries.items()})
        return real(graphs, backend, libraries, timeout_s)

    monkeypatch.setattr(runtime, "quick_gate", recording)
    monkeypatch.setattr(runtime, "provider", lambda name: Mutating(null_write, kernels={names[0]}, first_only=True))
    x, b = arrays("two regions", (6, 50), (50,))
    f = jit(two_regions, cache_dir=tmp_path)
    for got, want in zip(f(x, b), two_regions(x, b)):
        assert_close(got, want)
    assert list(gated[0]) == names  # both kernels in the first child
    assert gated[1] == {names[0]: gated[0][names[0]]}  # the crash: the first kernel alone, crashing again
    alone = gated[2:-1]  # then each of its variants
    assert sorted(v for g in alone for v in g[names[0]]) == gated[0][names[0]]
    assert gated[-1] == {names[1]: gated[0][names[1]]}  # the other kernel in a child of its own
    assert [r.runs for r in f.last_trace.kernels] == names
    entries = {e["kernel"]["name"]: e for e in (json.loads(p.read_text()) for p in entry_files(tmp_path))}
    crashed = {k: [v for v, d in e["verdict"]["variants"].items() if not d["passed"]] for k, e in entries.items()}
    assert crashed[names[1]] == [] and len(crashed[names[0]]) == 1
    assert "crashed with SIGSEGV" in entries[names[0]]["verdict"]["variants"][crashed[names[0]][0]]["reason"]
    assert entries[names[0]]["variant"] != crashed[names[0]][0]


def test_each_kernels_variants_are_timed_in_the_plan_they_will_run_in(tmp_path, monkeypatch):
    """The verified variants of a call's kernels are timed together: each kernel's with the other's
    first verified variant running its region (not MLX's ops, which on the CPU would take most of
    each timed call), and each entry records the medians its choice was made on."""
    timed = []
    real = runtime.contenders.choose_variants

    def recording(f, variants, *args, **kwargs):
        timed.append(([k.name for k in f.kernels if k is not None], {k: sorted(v) for k, v in variants.items()}))
        return real(f, variants, *args, **kwargs)

    monkeypatch.setattr(runtime.contenders, "choose_variants", recording)
    x, b = arrays("timed together", (6, 50), (50,))
    f = jit(two_regions, cache_dir=tmp_path, race=False)
    for got, want in zip(f(x, b), two_regions(x, b)):
        assert_close(got, want)
    ((in_front, variants),) = timed
    assert sorted(in_front) == sorted(variants) and len(variants) == 2
    assert all(len(v) > 1 for v in variants.values())
    for e in (json.loads(p.read_text()) for p in entry_files(tmp_path)):
        assert sorted(e["bench"]["median_s"]) == variants[e["kernel"]["name"]]
        assert e["variant"] == min(e["bench"]["median_s"], key=e["bench"]["median_s"].get)


def test_a_region_that_fails_the_gate_runs_in_mlx_while_the_others_run_kernels(tmp_path, monkeypatch):
    (x,) = arrays("partial", (6, 20))
    names = [k.name for k in runtime.front_of(
        runtime.trace(rows_and_sums, [("x", (6, 20), "float32")])).kernels]
    assert len(names) == 2
    monkeypatch.setattr(runtime, "provider", lambda name: Mutating(off_by_a_little, {names[0]}))
    f = jit(rows_and_sums, cache_dir=tmp_path)
    assert_close(f(x), rows_and_sums(x))
    ran = {r.runs for r in f.last_trace.regions}
    assert ran == {"mlx", names[1]}
    assert len(f.last_trace.misses) == 1 and names[0] in f.last_trace.misses[0]


def test_what_the_compiler_cannot_take_runs_eagerly_and_says_why(tmp_path):
    def ranks(a, b):
        return mx.argsort(a, axis=-1).astype(mx.float32) + b

    a, b = arrays("unsupported", (4, 4), (4, 4))
    f = jit(ranks, cache_dir=tmp_path)
    assert np.array_equal(np.array(f(a, b)), np.array(ranks(a, b)))
    assert "mx.argsort is not supported" in f.last_trace.eager
    def first_factor(x, factors):
        return x * factors[0]

    h = jit(first_factor, cache_dir=tmp_path)
    assert np.array_equal(np.array(h(a, [2.0])), np.array(a * 2.0))
    assert "argument 1 is a list, not an MLX array or a Python number" in h.last_trace.eager
    g = jit(swish_shift, cache_dir=tmp_path)
    assert_close(g(a, b=b), swish_shift(a, b=b))
    assert "keyword argument b is a array: arrays are taken by position" in g.last_trace.eager
    assert h.stats()["eager_calls"] == g.stats()["eager_calls"] == 1 and entry_files(tmp_path) == []


def test_python_arguments_are_compiled_into_the_kernel_one_plan_per_value(tmp_path, monkeypatch):
    """As under mx.compile, a Python number, string, None or tuple argument (by position or keyword)
    is a constant of the traced function: each value gets its plan and kernel, the same value finds
    it again warm, 0.0 and -0.0 (or 1, 1.0 and True) are different values; past SPECIALIZATIONS sets
    of values a new one runs as MLX and says so, while those planned keep their kernels."""
    def scaled(x, b, k, axis=-1, shift=None):
        y = mx.sum(x + b, axis=axis, keepdims=True)
        return x * k, (y if shift is None else y - shift)

    x, b = arrays("python arguments", (6, 40), (40,))
    monkeypatch.setattr(runtime, "SPECIALIZATIONS", 3)
    f = jit(scaled, cache_dir=tmp_path)
    calls = [((x, b, 0.5), {}), ((x, b, 0.5), {}), ((x, b, -0.0), {"axis": 0}), ((x, b, 0.0), {"axis": 0}),
             ((x, b, 0.5), {}), ((x, b, 2), {"shift": 1.5})]
    seen = []
    for args, kwargs in calls:
        got, want = f(*args, **kwargs), scaled(*args, **kwargs)
        assert np.array_equal(np.array(got[0]), np.array(want[0])), (args[2:], kwargs)
        assert np.array_equal(np.signbit(np.array(got[0])), np.signbit(np.array(want[0])))
        assert_close(got[1], want[1])
        trace = f.last_trace
        seen.append((trace.eager, [r.cache for r in trace.kernels], [r.runs for r in trace.kernels]))
    # (x * k and the sum: two kernels a plan; the sum over axis 0 is the same kernel for -0.0 and 0.0)
    assert [sorted(s[1]) for s in seen[:5]] == [["compiled"] * 2, ["memory"] * 2, ["compiled"] * 2,
                                                ["compiled", "disk"], ["memory"] * 2]
    assert len({name for s in seen[:4] for name in s[2]}) == 5, "-0.0 and 0.0 are two kernels of x * k"
    assert "compiled for 3 sets of its Python arguments already" in seen[5][0]
    assert "float32[6, 40], float32[40], 2, shift=1.5" in f.last_trace.describe()
    assert f.stats()["signatures"] == 3 and f.stats()["eager_calls"] == 1
    # a derivative through a plan with Python arguments: MLX's own of the function, those put back
    def loss(h):
        return lambda x, b: mx.sum(h(x, b, 0.5)[0] * h(x, b, 0.5)[1])
    assert_close(mx.grad(loss(f), argnums=(0, 1))(x, b), mx.grad(loss(scaled), argnums=(0, 1))(x, b))
    assert f.last_trace.kernels and not f.last_trace.eager


def test_a_region_is_timed_only_where_its_kernel_runs_at_once(tmp_path, monkeypatch):
    x, b = arrays("timed", (6, 40), (40,))
    native.build()
    for setting, dispatch in (("1", "native"), ("0", "ctypes")):
        monkeypatch.setenv(native.DISABLE, setting)
        f = jit(swish_shift, cache_dir=tmp_path)
        f(x, b)
        assert_close(f(x, b), swish_shift(x, b))
        (region,) = f.last_trace.kernels
        assert region.dispatch == dispatch
        # ctypes runs the kernel in the call; a native call queues an MLX op, whose host time is not it
        assert (region.seconds > 0) if dispatch == "ctypes" else region.seconds is None
        assert bool(re.search(r"\d\.\d{3} ms$", region.describe().splitlines()[0])) == (dispatch == "ctypes")


def test_a_kernel_that_fails_at_run_time_sends_its_signature_back_to_mlx(tmp_path, monkeypatch):
    x, b = arrays("runtime-failure", (4, 16), (16,))
    gone = []
    bind = cpu.Kernel.bind

    def failing_later(self, launch):  # the kernel's bound call, which fails once `gone` says so
        call = bind(self, launch)

        def run(inputs):
            if gone:
                raise RuntimeError("the library went away")
            return call(inputs)
        return run

    monkeypatch.setattr(cpu.Kernel, "bind", failing_later)
    f = jit(swish_shift, cache_dir=tmp_path)
    f(x, b)
    assert f.last_trace.kernels
    gone.append(True)
    assert np.array_equal(np.array(f(x, b)), np.array(swish_shift(x, b)))
    assert "failed at run time" in f.last_trace.eager and "went away" in f.last_trace.eager
    f(x, b)
    assert f.stats()["eager_calls"] == 2 and f.stats()["kernel_calls"] == 1


def test_the_trace_describes_every_region_and_each_signature_is_planned_once(tmp_path):
    f = jit(rows_and_sums, cache_dir=tmp_path)
    for rows in (3, 5, 3):
        (x,) = arrays(f"signatures{rows}", (rows, 12))
        assert_close(f(x), rows_and_sums(x))
    stats = f.stats()
    assert stats["signatures"] == 2 and stats["calls"] == 3 and stats["kernel_calls"] == 6
    text = f.last_trace.describe()
    assert text.startswith("rows_and_sums(float32[3, 12])") and text.count("from memory") == 2
    assert "mx.exp(x) * 2.0 - m" in text


def test_a_failure_inside_the_compiler_warns_and_runs_eagerly(tmp_path, monkeypatch):
    def broken_key(kernel, backend):
        raise OSError("the cache disk went away")

    monkeypatch.setattr(runtime, "key_for", broken_key)
    x, b = arrays("compiler-failure", (2, 8), (8,))
    f = jit(swish_shift, cache_dir=tmp_path)
    with pytest.warns(RuntimeWarning, match="cache disk went away"):
        out = f(x, b)
    assert np.array_equal(np.array(out), np.array(swish_shift(x, b)))
    assert "the compiler failed: OSError" in f.last_trace.eager


def test_the_runtime_benchmark_measures_cold_disk_and_warm_calls_and_the_report_shows_them(tmp_path):
    from autoperfect import bench_runtime, report
    from autoperfect.spec import parse_op

    spec = parse_op("norm", {"fn": "def norm(x, w):\n    return x * mx.rsqrt(mx.mean(x * x, axis=-1, "
                                   "keepdims=True) + 1e-6) * w\n",
                             "inputs": {"x": {"shape": [8, 48]}, "w": {"shape": [48]}}})
    measured = bench_runtime.measure({"ops": [spec.to_json()], "settings": {"warmup": 1, "repeats": 3},
                                      "pipeline_root": None})
    sizes = measured["ops"]["norm"]
    assert set(sizes) == {"spec", "row"} and sizes["row"]["shapes"] == {"x": [1, 48], "w": [48]}
    for r in sizes.values():
        assert {"trace", "compile", "gate"} <= set(r["cold"]["setup_s"])
        assert "gate" not in r["disk"]["setup_s"] and "race" in r["disk"]["setup_s"]
        # the kernel from disk runs, unless MLX's own ops won that call's race (a shape this small may go either way)
        assert [k["cache"] for k in r["disk"]["kernels"]] == ([] if r["disk"]["race"]["mlx_runs"] else ["disk"])
        assert {"kernels_s", "mlx_s", "mlx_runs"} <= set(r["cold"]["race"])
        assert set(r["warm"]) == {"jit", "program", "mlx_eager", "mlx_compile"}
        lo, hi = r["jit_over_program"]["ci95"]
        assert lo <= r["jit_over_program"]["median"] <= hi
    (tmp_path / "runtime.json").write_text(json.dumps({**measured, "condition": "test", "measured_at": "t"}))
    text = "\n".join(report.runtime_section(str(tmp_path)))
    assert "| norm | spec |" in text and "| norm | row |" in text and "race: kernels / MLX" in text
    race = sizes["spec"]["cold"]["race"]
    assert f"| {race['kernels_s'] * 1e6:.1f} / {race['mlx_s'] * 1e6:.1f}" in text
    assert "model_e2e.json missing" in text


def test_the_runtime_benchmark_keeps_the_ops_measured_before_one_that_fails(tmp_path, monkeypatch):
    """Each op is measured in a child of its own and runtime.json is written after each: an op whose
    child runs past its limit is recorded with the reason, the op before it is kept, the next one
    still runs, and the report says which was not measured; with every op failed the report still
    renders."""
    from autoperfect import bench_runtime, report
    from autoperfect.spec import parse_op

    specs = [parse_op(name, {"fn": f"def {name}(x):\n    return x + 1\n", "inputs": {"x": {"shape": [4]}}})
             for name in ("first", "hangs", "last")]
    out = tmp_path / "runtime.json"
    seen = []

    def fake_child(condition, target, payload, timeout_s):
        name = payload["ops"][0]["name"]
        seen.append(json.loads(out.read_text())["ops"].keys() if out.exists() else set())
        if name == "hangs":
            raise RuntimeError(f"{target} under 'warm' ran past {timeout_s} s; stderr tail:\n")
        return {"ops": {name: {}}, "dispatch": {"dispatch": "native"},  # no sizes: no rows of its own
                "machine": {"load_1m": 0.5, "cores": 2}, "condition": "warm"}

    monkeypatch.setattr(bench_runtime.bench, "run_condition", fake_child)
    failed = bench_runtime.run(specs, {"timeout_s": 7}, None, str(out))
    assert set(failed) == {"hangs"} and "ran past 7 s" in failed["hangs"]
    assert [set(k) for k in seen] == [set(), {"first"}, {"first"}]  # written before each later op
    written = json.loads(out.read_text())
    assert set(written["ops"]) == {"first", "last"} and set(written["failed"]) == {"hangs"}
    row = next(line for line in report.runtime_section(str(tmp_path)) if line.startswith("| hangs |"))
    assert "not measured: autoperfect.bench_runtime:measure under 'warm' ran past 7 s" in row
    out.write_text(json.dumps({"ops": {}, "failed": {"first": "crashed"}, "measured_at": "t"}))
    assert any("not measured: crashed" in line for line in report.runtime_section(str(tmp_path)))


def test_variants_rank_by_the_nearest_launch_timed_before():
    timings = [{"dims": [4096, 1024], "median_s": {"a": 2.0, "b": 1.0, "c": 3.0}},
               {"dims": [64, 1024], "median_s": {"a": 1.0, "c": 2.0}}]
    order, near = runtime.rank(["a", "b", "c", "d"], timings, (2048, 1024))
    assert order == ["b", "a", "c", "d"] and near["dims"] == [4096, 1024]  # untimed there: last
    assert runtime.rank(["a", "b", "c"], timings, (32, 1024))[0] == ["a", "c", "b"]
    assert runtime.rank(["a", "b"], timings, (4096, 8)) is None  # rows 128x shorter: explored anew
    assert runtime.rank(["a", "d"], timings, (4096, 1024)) is None  # one of the two timed: no ranking
    assert runtime.rank(["a", "b"], [], (4, 4)) is None


def test_a_new_shape_of_a_kernel_timed_before_gates_its_fastest_variants_first(tmp_path, monkeypatch):
    """The first shape gates and times every variant; a nearby shape in a later process builds and
    gates only the RANKED fastest at the first one, the others marked not gated; where those fail,
    the rest is built and gated and one of them dispatched."""
    gated, fail_first, built = [], [], []
    real, real_build = runtime.quick_gate, cpu.build
    monkeypatch.setattr(cpu, "build", lambda source, where: built.append(source) or real_build(source, where))

    def recording(graphs, backend, libraries, timeout_s):
        ((kernel, libs),) = libraries.items()
        gated.append(sorted(libs))
        if fail_first and len(gated) == fail_first[0]:
            return {kernel: {v: {"passed": False, "reason": "planted failure"} for v in libs}}
        return real(graphs, backend, libraries, timeout_s)

    monkeypatch.setattr(runtime, "quick_gate", recording)
    x, b = arrays("ranked", (32, 64), (64,))
    f = jit(swish_shift, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b))
    (everything,) = gated
    assert len(everything) > runtime.RANKED
    name = f.last_trace.kernels[0].runs
    (timed,) = kcache.Cache(tmp_path).timings(name, "cpu")
    fastest = sorted(timed["median_s"], key=timed["median_s"].get)[:runtime.RANKED]

    assert len(built) == len(everything)

    (x2,) = arrays("ranked-2", (48, 64))
    g = jit(swish_shift, cache_dir=tmp_path)
    built.clear()
    assert_close(g(x2, b), swish_shift(x2, b))
    assert gated[1] == sorted(fastest) and g.last_trace.kernels[0].variant in fastest
    assert len(built) == runtime.RANKED  # the variants ranked below them are not even built
    entry = kcache.Cache(tmp_path).lookup(kcache.key_for(runtime.front_of(runtime.trace(
        swish_shift, [("x", (48, 64), "float32"), ("b", (64,), "float32")])).kernels[0], "cpu"))
    skipped = {v for v, d in entry.verdict["variants"].items() if d.get("gated") is False}
    assert skipped == set(everything) - set(fastest)
    assert entry.bench["ranked_by"]["dims"] == timed["dims"]

    fail_first.append(3)  # the next call's first gate: its ranked variants fail
    (x3,) = arrays("ranked-3", (40, 64))
    h = jit(swish_shift, cache_dir=tmp_path)
    built.clear()
    assert_close(h(x3, b), swish_shift(x3, b))
    assert len(gated[2]) == runtime.RANKED and sorted(gated[2] + gated[3]) == everything
    assert len(built) == len(everything)
    assert h.last_trace.kernels[0].variant in gated[3]


def test_a_backend_that_prepares_gets_each_gated_groups_libraries_at_the_gates_launches(tmp_path, monkeypatch):
    """Where a backend builds ahead (cuda.prepare: the instances its children will load), each group
    of variants is prepared right before its gate, at the call's and the alternate shape's launches."""
    events, fail = [], []
    real = runtime.quick_gate

    def gate(graphs, backend, libraries, timeout_s):
        ((kernel, libs),) = libraries.items()
        events.append(("gate", sorted(libs.values())))
        if fail:  # the ranked group fails: the rest is gated, and must have been prepared too
            fail.clear()
            return {kernel: {v: {"passed": False, "reason": "planted failure"} for v in libs}}
        return real(graphs, backend, libraries, timeout_s)

    monkeypatch.setattr(cpu, "prepare",
                        lambda k, libs, launches: events.append(("prepare", sorted(libs), launches)), raising=False)
    monkeypatch.setattr(runtime, "quick_gate", gate)
    x, b = arrays("prepared", (32, 64), (64,))
    f = jit(swish_shift, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b))
    (kind, libs, launches), (gated, those) = events
    assert (kind, gated) == ("prepare", "gate") and libs == those and len(libs) > runtime.RANKED
    assert [launch.dims for launch in launches][0] == (32, 64) and len(launches) == 2

    events.clear()
    fail.append(True)
    (x2,) = arrays("prepared-2", (48, 64))
    g = jit(swish_shift, cache_dir=tmp_path)
    assert_close(g(x2, b), swish_shift(x2, b))
    kinds = [e[0] for e in events]
    assert kinds == ["prepare", "gate", "prepare", "gate"]
    assert events[0][1] == events[1][1] and events[2][1] == events[3][1] and len(events[0][1]) == runtime.RANKED
    assert sorted(events[0][1] + events[2][1]) == libs


def test_the_gates_answer_keys_run_at_once_only_as_far_as_memory_allows(monkeypatch):
    """Keys are computed in threads, as many as there are draws and cores, unless their float64
    values would not fit in half the memory: then fewer, and one at least."""
    traced = runtime.trace(swish_shift, [("x", (64, 1024), "float32"), ("b", (1024,), "float32")])
    front = runtime.front_of(traced)
    draws = [runtime._draws(next(k for k in front.kernels if k is not None).name, front, 0)] * 3
    f = draws[0].f
    need = runtime.KEY_BYTES_PER_ELEMENT * max(f.traced.peak_elements(), f.canonical.peak_elements())
    monkeypatch.setattr(runtime.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(runtime.bench, "available_bytes", lambda: 100 * need)
    assert runtime._key_workers(draws) == 3
    monkeypatch.setattr(runtime.bench, "available_bytes", lambda: 4 * need + 1)
    assert runtime._key_workers(draws) == 2
    monkeypatch.setattr(runtime.bench, "available_bytes", lambda: need)
    assert runtime._key_workers(draws) == 1


def slowed_program(monkeypatch, seconds: float) -> list:
    """The plan's program made `seconds` slower per call (a verified kernel MLX beats); returns the
    list each call of it appends to."""
    real, calls = runtime.program, []

    def program(f, loaded):
        run = real(f, loaded)

        def call(*args):
            calls.append(1)
            time.sleep(seconds)
            return run(*args)
        return call
    monkeypatch.setattr(runtime, "program", program)
    return calls


def test_a_signature_whose_kernels_mlx_beats_runs_as_mlx_and_says_by_how_much(tmp_path, monkeypatch):
    calls = slowed_program(monkeypatch, 0.003)
    x, b = arrays("race lost", (6, 40), (40,))
    f = autoperfect.jit(swish_shift, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b))
    trace = f.last_trace
    assert not trace.kernels and "race" in trace.setup, trace.describe()
    assert trace.eager.startswith("MLX's own ops were faster at these shapes")
    assert all(r.why == trace.eager for r in trace.regions)
    assert trace.race["kernels_s"] > 0.003 > trace.race["mlx_s"] and trace.race["ci95"][1] < 1 and trace.race["mlx_runs"]
    assert "raced against MLX's own ops" in trace.describe()
    assert_close(f(x, b), swish_shift(x, b))
    assert f.last_trace.eager == trace.eager and not f.last_trace.race  # decided once per signature
    assert f.stats()["eager_calls"] == 2 and list(f.stats()["races"].values()) == [trace.race]
    # the kernel stays verified in the cache: it lost a race at these shapes, not the judge's checks
    kept = autoperfect.jit(swish_shift, cache_dir=tmp_path, allow_compile=False, race=False)
    assert_close(kept(x, b), swish_shift(x, b))
    assert [r.cache for r in kept.last_trace.kernels] == ["disk"] and not kept.last_trace.race
    # a later first call of the same plan races again: a race MLX won may be a loaded moment's
    before = len(calls)
    again = autoperfect.jit(swish_shift, cache_dir=tmp_path, allow_compile=False)
    assert_close(again(x, b), swish_shift(x, b))
    assert len(calls) > before and again.last_trace.eager.startswith("MLX's own ops were faster")
    assert again.last_trace.race["again"] and not again.last_trace.race.get("recorded")
    assert "raced again (the cache's record had MLX faster)" in again.last_trace.describe()
    # another function with the same kernel (the same fused region) is raced on its own
    def written_apart(x, b):
        h = x + b
        return h * mx.tanh(h) - 0.5
    other = autoperfect.jit(written_apart, cache_dir=tmp_path, allow_compile=False)
    assert_close(other(x, b), swish_shift(x, b))
    assert not other.last_trace.race.get("recorded") and len(calls) > before


def test_kernels_that_lost_a_race_in_a_loaded_moment_run_once_they_win_it_again(tmp_path, monkeypatch):
    """A race MLX won is not trusted across processes (it may be a loaded moment's): a later first
    call races again, and where the kernels now win they run, and that outcome is the one kept."""
    real = runtime.program
    slowed_program(monkeypatch, 0.003)
    x, b = arrays("race lost then won", (6, 40), (40,))
    lost = autoperfect.jit(swish_shift, cache_dir=tmp_path)
    assert_close(lost(x, b), swish_shift(x, b))
    assert lost.last_trace.race["mlx_runs"] and not lost.last_trace.kernels
    monkeypatch.setattr(runtime, "program", real)  # the moment has passed

    def slow_in_mlx(x, b):  # the same traced function (its race's record), MLX's side slowed instead
        time.sleep(0.02)
        return (x + b) * mx.tanh(x + b) - 0.5
    won = autoperfect.jit(slow_in_mlx, cache_dir=tmp_path, allow_compile=False)
    assert_close(won(x, b), swish_shift(x, b))
    assert won.last_trace.race["again"] and not won.last_trace.race["mlx_runs"], won.last_trace.describe()
    assert [r.cache for r in won.last_trace.kernels] == ["disk"] and not won.last_trace.eager
    kept = autoperfect.jit(swish_shift, cache_dir=tmp_path, allow_compile=False)
    assert_close(kept(x, b), swish_shift(x, b))
    assert kept.last_trace.race.get("recorded") and [r.cache for r in kept.last_trace.kernels] == ["disk"]


def test_a_race_mlx_loses_by_far_is_settled_by_a_call_each(tmp_path):
    def slow_in_mlx(x, b):
        time.sleep(0.02)  # in the function itself: its MLX ops, never the kernel
        return (x + b) * mx.tanh(x + b) - 0.5

    x, b = arrays("race won", (6, 40), (40,))
    f = autoperfect.jit(slow_in_mlx, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b))
    trace = f.last_trace
    assert [r.cache for r in trace.kernels] == ["compiled"] and not trace.eager
    assert trace.race["rounds"] == 1 and trace.race["mlx_s"] > runtime.CLEAR_LEAD * trace.race["kernels_s"]
    assert "one call each" in trace.describe()
    again = autoperfect.jit(slow_in_mlx, cache_dir=tmp_path, allow_compile=False)
    assert_close(again(x, b), swish_shift(x, b))
    assert [r.cache for r in again.last_trace.kernels] == ["disk"]
    assert again.last_trace.race == {**trace.race, "checked": True, "recorded": True}  # it agreed with the function


def test_the_race_and_the_variants_are_timed_as_the_backend_says(tmp_path, monkeypatch):
    """A GPU backend's TIMING (cuda.TIMING: calls queued per sample, the device's time per call) sets
    how the first call times the variants and the race; a backend without one times a call per sample."""
    assert runtime.timing(cpu) == (runtime.contenders.VARIANT_ROUNDS, 1)
    from autoperfect.backends import cuda, metal
    assert runtime.timing(cuda) == runtime.timing(metal) == (cuda.TIMING["rounds"], cuda.TIMING["pipeline"]) \
        and cuda.TIMING["pipeline"] > 1
    monkeypatch.setattr(cpu, "TIMING", {"rounds": 3, "pipeline": 4}, raising=False)
    chosen = []
    real = runtime.contenders.choose_variants

    def choose(*args, **kw):
        chosen.append((kw["rounds"], kw["pipeline"]))
        return real(*args, **kw)
    monkeypatch.setattr(runtime.contenders, "choose_variants", choose)
    calls = slowed_program(monkeypatch, 0.0)
    x, b = arrays("race timing", (6, 40), (40,))
    f = autoperfect.jit(swish_shift, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b))
    assert chosen == [(3, 4)]
    race = f.last_trace.race
    assert (race["rounds"], race["queued"]) in ((3, 4), (1, 4))
    # the first call queued, then a warm-up and 3 rounds of 4 unless the first call settled it; then
    # the user's call, if the kernels won
    raced = 4 if race["rounds"] == 1 else 4 * (1 + 1 + 3)
    assert len(calls) == raced + (0 if f.last_trace.eager else 1)


class _Layer:
    """A model-style layer: its method's first parameter is the object, its last has a default."""
    def __init__(self, shift: float):
        self.shift = shift

    def forward(self, x, scale=2.0):
        return mx.exp(x) * scale + self.shift


def test_a_bound_method_and_a_partial_trace_as_they_are_called(tmp_path):
    """A bound method traced as its function dropped its object: the arguments moved one place
    left (here x became `self` and the scale array x), and the kernels computed exp(scale) * 2."""
    x, s = arrays("bound method", (6, 40), (6, 40))
    layer = _Layer(0.25)
    f = jit(layer.forward, cache_dir=tmp_path)
    assert_close(f(x, s), layer.forward(x, s))
    assert f.last_trace.kernels and not f.last_trace.eager, f.last_trace.describe()
    g = jit(functools.partial(layer.forward, scale=3.0), cache_dir=tmp_path)
    assert_close(g(x), layer.forward(x, 3.0))
    assert g.last_trace.kernels and not g.last_trace.eager, g.last_trace.describe()


def test_kernels_that_disagree_with_the_function_itself_run_as_mlx(tmp_path, monkeypatch):
    """The judge holds kernels to the traced graph; the first call holds the traced graph to the
    function. A trace of another function (here exp(x) * 3 for exp(x) * 2) passes the gate and is
    caught there: that call and the later ones return MLX's values, and the trace says why."""
    def doubled(x):
        return mx.exp(x) * 2.0

    def tripled(x):
        return mx.exp(x) * 3.0

    (x,) = arrays("disagree", (6, 40))
    f = jit(doubled, cache_dir=tmp_path)
    monkeypatch.setattr(f, "_trace", lambda inputs, name, constants: runtime.trace(tripled, inputs, name, constants))
    assert_close(f(x), doubled(x))
    assert "disagree with the function itself" in f.last_trace.eager and not f.last_trace.kernels
    assert_close(f(x), doubled(x))
    assert f.stats()["kernel_calls"] == 0


def test_an_agreement_is_kept_with_the_race_and_a_later_process_skips_the_check(tmp_path, monkeypatch):
    """The check costs a call of MLX's ops (60 ms for a softmax of 16 MB, against a 5 ms call from
    disk): a plan that agreed with the function once is not checked again where its race is kept."""
    (x,) = arrays("agreed", (6, 40))
    won = {"kernels_s": 1e-6, "mlx_s": 1e-3, "rounds": 1, "queued": 1, "median": 1e3, "ci95": None, "mlx_runs": False}
    monkeypatch.setattr(runtime.Jit, "_timed_race", lambda self, plan, args, fn: dict(won))  # the kernels won
    first = autoperfect.jit(swish_shift, cache_dir=tmp_path)   # raced: the race keeps the agreement
    assert_close(first(x, x[0]), swish_shift(x, x[0]))
    assert first.last_trace.kernels and not first.last_trace.eager, first.last_trace.describe()
    compared = []
    monkeypatch.setattr(runtime, "disagreement", lambda ours, theirs: compared.append(1))
    again = autoperfect.jit(swish_shift, cache_dir=tmp_path)
    assert_close(again(x, x[0]), swish_shift(x, x[0]))
    assert again.last_trace.kernels and again.last_trace.race.get("recorded") and compared == []


def test_disagreement_allows_roundings_and_names_what_differs():
    nan, inf = float("nan"), float("inf")
    base = mx.array([1.0, -2.0, nan, inf, 1000.0])
    assert runtime.disagreement(base, base) is None
    assert runtime.disagreement((base * (1 + 2e-7),), (base,)) is None            # a rounding's difference
    assert "beyond" in runtime.disagreement(base + 2.0, base)                      # 2 > 1e-3 of 1000
    assert "NaN" in runtime.disagreement(mx.array([1.0, -2.0, 0.0, inf, 1000.0]), base)
    assert "infinities" in runtime.disagreement(mx.array([1.0, -2.0, nan, -inf, 1000.0]), base)
    assert "outputs" in runtime.disagreement((base, base), (base,))
    assert "float16" in runtime.disagreement(base.astype(mx.float16), base)
    ints = mx.array([3, 4], dtype=mx.int32)
    assert runtime.disagreement(ints, ints) is None and "differs" in runtime.disagreement(ints + 1, ints)
    half = mx.array([256.0, -256.0], dtype=mx.bfloat16)
    assert runtime.disagreement(half, half) is None


def test_a_judges_own_failure_is_not_remembered_as_the_kernels_verdict(tmp_path, monkeypatch):
    """A gate's child that raised (its answer key could not be computed: an index out of range, a
    reduction of nothing) judged no kernel: the call runs as MLX and says why, and nothing is kept,
    so the next process gates again. It was kept, and a kernel shared with another function (an
    exp over the same shapes) ran as MLX there too."""
    x, b = arrays("harness", (4, 40), (40,))
    real_gate = runtime.quick_gate

    def raising(graphs, backend, libraries, timeout_s):
        return {k: {v: {"passed": False, "harness": True, "reason": "the judge's child failed: ValueError: no"}
                    for v in libs} for k, libs in libraries.items()}
    monkeypatch.setattr(runtime, "quick_gate", raising)
    f = jit(swish_shift, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b))
    assert "the judge's child failed: ValueError: no" in f.last_trace.misses[0] and entry_files(tmp_path) == []
    monkeypatch.setattr(runtime, "quick_gate", real_gate)
    again = jit(swish_shift, cache_dir=tmp_path)
    assert_close(again(x, b), swish_shift(x, b))
    assert [r.cache for r in again.last_trace.kernels] == ["compiled"], again.last_trace.describe()


def test_a_gather_is_gated_with_its_indices_inside_the_axis_they_index(tmp_path):
    """An index input was drawn in [-100, 100] whatever the axis' length, so the answer key of
    every function gathering from fewer than 101 rows raised and none got a kernel."""
    def gather(x, i):
        return mx.take(mx.exp(x), i, axis=0) * 2.0

    (x,) = arrays("gather", (32, 64))
    i = mx.array([3, 0, 31, 7], dtype=mx.int32)
    f = jit(gather, cache_dir=tmp_path)
    assert_close(f(x, i), gather(x, i))
    assert len(f.last_trace.kernels) == 2, f.last_trace.describe()


def test_zero_size_and_scalar_inputs(tmp_path):
    """A signature with an input of no elements runs as MLX at once (there was a gate of seconds,
    whose answer key raised); a 0-d input gets its kernel (the answer key's erf returned a Python
    float for it, and the gate's child failed)."""
    def gelu(x):
        return 0.5 * x * (1 + mx.erf(x / 1.4142135623730951))

    f = jit(lambda x: mx.softmax(x, axis=-1), cache_dir=tmp_path)
    empty = mx.zeros((16, 0))
    assert f(empty).shape == (16, 0)
    assert "no elements" in f.last_trace.eager and "gate" not in f.last_trace.setup and entry_files(tmp_path) == []
    g = jit(gelu, cache_dir=tmp_path)
    x = mx.array(0.7)
    assert_close(g(x), gelu(x))
    assert g.last_trace.kernels, g.last_trace.describe()


def test_a_backend_this_machine_cannot_run_is_refused_when_the_jit_is_made():
    from autoperfect import backends

    for name in ("cuda", "metal"):
        if backends.missing_device(name):
            with pytest.raises(backends.BackendError, match=f"backend '{name}' can't run kernels on this machine"):
                jit(swish_shift, backend=name)
    with pytest.raises(backends.BackendError, match="backend 'mlx' renders kernels as MLX ops"):
        jit(swish_shift, backend="mlx")  # which gave every signature a RuntimeWarning, then MLX


INNER = None  # a module's jitted helper, which another jitted function calls (set by the test)


def calls_a_jitted_helper(x, b):
    return INNER(x, b) * 2.0


def test_a_jitted_function_calling_a_jitted_one_traces_through_it(tmp_path, monkeypatch):
    """The helper's ops fuse with the caller's (it ran as MLX: the helper's jit was handed tracers)."""
    monkeypatch.setitem(globals(), "INNER", jit(swish_shift, cache_dir=tmp_path))
    x, b = arrays("nested", (4, 40), (40,))
    f = jit(calls_a_jitted_helper, cache_dir=tmp_path)
    assert_close(f(x, b), swish_shift(x, b) * 2.0)
    assert f.last_trace.kernels and not f.last_trace.eager, f.last_trace.describe()


def test_an_object_with_a_call_method_is_traced_through_it(tmp_path):
    class Scaled:
        def __init__(self, s):
            self.s = s

        def __call__(self, x, b):
            return swish_shift(x, b) * self.s

    x, b = arrays("callable", (4, 40), (40,))
    f = jit(Scaled(3.0), cache_dir=tmp_path)
    assert_close(f(x, b), Scaled(3.0)(x, b))
    assert f.last_trace.kernels, f.last_trace.describe()  # was: not compiled, no attribute '__globals__'


def test_a_matmuls_epilogue_gets_its_kernel_on_tiny_inputs(tmp_path):
    """relu(x @ w): the kernel only takes the max of MLX's product with 0, but on the gate's tiny
    draw MLX's matmul landed two subnormal spacings from float64's, beyond a bound with only
    relative terms, and the epilogue never got a kernel (bounds: k spacings for k products)."""
    def relu_mm(x, w):
        return mx.maximum(x @ w, 0)

    x, w = arrays("relu_mm", (32, 64), (64, 16))
    f = jit(relu_mm, cache_dir=tmp_path)
    assert_close(f(x, w), relu_mm(x, w))
    assert f.last_trace.kernels, f.last_trace.describe()
