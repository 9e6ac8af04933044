"""The kernel cache: what keys an entry, what is refused on read, invalidation, concurrent writers."""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import time
import warnings
from pathlib import Path

import mlx.core as mx
import pytest

from autoperfect import cache as kcache
from autoperfect.backends import cpu
from autoperfect.generate import provider
from autoperfect.runtime import front_of
from autoperfect.trace import trace


def rms(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def kernel_at(rows: int, cols: int, dtype: str = "float32"):
    return front_of(trace(rms, [("x", (rows, cols), dtype), ("w", (cols,), dtype)])).kernels[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One verified-looking kernel: its candidate and a real library (the cache never judges)."""
    k = kernel_at(4, 64)
    candidate = provider("compiler").generate(k, "cpu")[0]
    build = cpu.build(candidate.source, tmp_path_factory.mktemp("build"))
    assert build.ok, build.log
    return k, candidate, build.library


def store(c: kcache.Cache, built, kernel=None, verdict=None):
    k, candidate, library = built
    return c.store(kernel or k, "cpu", candidate.variant, candidate.source, library,
                   verdict or {"passed": True}, {"median_s": 1e-6}, "test")


def test_an_entry_reads_back_whole(tmp_path, built):
    c = kcache.Cache(tmp_path)
    written = store(c, built)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entry = c.lookup(kcache.key_for(built[0], "cpu"))
    assert entry == written and entry.passed and entry.origin == "test"
    assert entry.source == built[1].source
    assert entry.library.read_bytes() == Path(built[2]).read_bytes()
    assert entry.library.parent.parent == c.path(entry.key).parent


@pytest.mark.parametrize("other", [lambda: kernel_at(8, 64), lambda: kernel_at(4, 64, "float16")],
                         ids=["shape", "dtype"])
def test_another_shape_or_dtype_is_another_key(tmp_path, built, other):
    c = kcache.Cache(tmp_path)
    store(c, built)
    k = other()
    key = kcache.key_for(k, "cpu")
    assert key.digest() != kcache.key_for(built[0], "cpu").digest()
    assert c.lookup(key) is None


def test_the_key_names_backend_chip_and_compiler_version(built):
    key = kcache.key_for(built[0], "cpu").to_json()
    assert key["kernel"] == built[0].name and key["backend"] == "cpu"
    assert key["launch"]["dims"] == [4, 64] and key["dtypes"] == ["float32"] * 3
    assert key["chip"] == kcache.chip() and key["compiler"] == kcache.compiler_version("cpu")


def _truncate(path: Path, data: dict) -> None:
    path.write_text(path.read_text()[: len(path.read_text()) // 2])


def _tamper_source(path: Path, data: dict) -> None:
    data["source"] += "\n/* edited after it was verified */\n"
    path.write_text(json.dumps(data))


def _tamper_kernel(path: Path, data: dict) -> None:
    data["kernel"]["body"][1]["op"] = "add"
    path.write_text(json.dumps(data))


def _other_format(path: Path, data: dict) -> None:
    path.write_text(json.dumps({**data, "format": 0}))


def _damage_library(path: Path, data: dict) -> None:
    lib = path.parent / "lib" / data["library"]["file"]
    lib.write_bytes(lib.read_bytes()[:-16] + b"\0" * 16)


def _drop_library(path: Path, data: dict) -> None:
    (path.parent / "lib" / data["library"]["file"]).unlink()


def _missing_field(path: Path, data: dict) -> None:
    del data["verdict"]
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("damage, words", [
    (_truncate, "corrupt or truncated"),
    (lambda p, d: p.write_bytes(b"\xff\xfe\0garbage"), "corrupt or truncated"),
    (_other_format, "not an entry of format"),
    (_tamper_source, "source does not match its sha256"),
    (_tamper_kernel, "malformed"),
    (_damage_library, "does not match its sha256"),
    (_drop_library, "missing"),
    (_missing_field, "malformed"),
])
def test_a_damaged_entry_is_refused_with_a_warning(tmp_path, built, damage, words):
    c = kcache.Cache(tmp_path)
    entry = store(c, built)
    path = c.path(entry.key)
    damage(path, json.loads(path.read_text()))
    with pytest.warns(kcache.CacheWarning, match=words):
        assert c.lookup(entry.key) is None


def test_a_damaged_build_is_built_again(tmp_path, built):
    """The build directory keeps each library's sha256: one damaged since is built again, not
    reused (every load of it had failed, in every process, and the kernel ran as MLX)."""
    _, candidate, _ = built
    first = cpu.build(candidate.source, tmp_path)
    assert first.ok and not first.cached and cpu.build(candidate.source, tmp_path).cached
    library = Path(first.library)
    library.write_bytes(library.read_bytes()[:100])
    again = cpu.build(candidate.source, tmp_path)
    assert again.ok and not again.cached and again.library == first.library
    ctypes.CDLL(again.library)


def test_an_entry_moved_under_another_key_is_foreign(tmp_path, built):
    c = kcache.Cache(tmp_path)
    entry = store(c, built)
    other = kcache.key_for(kernel_at(8, 64), "cpu")
    c.path(other).write_text(c.path(entry.key).read_text())
    with pytest.warns(kcache.CacheWarning, match="another key"):
        assert c.lookup(other) is None


def test_a_failed_verdict_is_kept_without_a_library(tmp_path, built):
    c = kcache.Cache(tmp_path)
    k, candidate, _ = built
    c.store(k, "cpu", candidate.variant, candidate.source, None, {"passed": False, "reason": "wrong"}, {},
            "test")
    entry = c.lookup(kcache.key_for(k, "cpu"))
    assert entry is not None and not entry.passed and entry.library is None


def test_a_new_compiler_version_invalidates_every_entry(tmp_path, built, monkeypatch):
    c = kcache.Cache(tmp_path)
    old = store(c, built)
    monkeypatch.setattr(kcache, "compiler_version", lambda backend: "f" * 16)
    key = kcache.key_for(built[0], "cpu")
    assert key.compiler != old.key.compiler
    assert c.lookup(key) is None
    assert c.prune("cpu") == [f"cpu-{old.key.compiler}"]
    assert not c.path(old.key).exists()


def test_the_compiler_version_follows_the_code(monkeypatch):
    before = kcache.compiler_version("cpu")
    kcache.compiler_version.cache_clear()
    monkeypatch.setattr(kcache, "stage_hash", lambda *modules: "changed")
    try:
        assert kcache.compiler_version("cpu") != before
    finally:
        kcache.compiler_version.cache_clear()



def test_the_compiler_version_covers_the_judge_and_the_runtimes_gate(monkeypatch):
    """A runtime entry's verdict is the quick gate's (runtime.gate), which judge.py does not import:
    a change to the gate must invalidate those verdicts too."""
    hashed = []
    kcache.compiler_version.cache_clear()
    monkeypatch.setattr(kcache, "stage_hash", lambda *modules: hashed.extend(modules) or "x")
    try:
        kcache.compiler_version("cpu")
    finally:
        kcache.compiler_version.cache_clear()
    assert {"autoperfect.judge", "autoperfect.runtime", "autoperfect.generate.compiler"} <= set(hashed)

# -- two processes at once ----------------------------------------------------------------------------

SHAPES = [(rows, 64) for rows in range(1, 13)]


def _writer(root: str, built_paths: tuple[str, str, str], rounds: int) -> None:
    source, variant, library = built_paths
    c = kcache.Cache(root)
    for _ in range(rounds):
        for rows, cols in SHAPES:
            c.store(kernel_at(rows, cols), "cpu", variant, source, library, {"passed": True}, {}, "test")


def _reader(root: str, limit_s: float) -> int:
    """Looks every key up while the writers write, until it has seen them all; a refusal (half a write
    seen) raises. Returns how many keys it saw in its last round."""
    c = kcache.Cache(root)
    keys = [kcache.key_for(kernel_at(rows, cols), "cpu") for rows, cols in SHAPES]
    deadline = time.monotonic() + limit_s
    seen = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        while seen < len(keys) and time.monotonic() < deadline:
            seen = sum(c.lookup(k) is not None for k in keys)
    return seen


def test_concurrent_writers_and_a_reader_leave_a_whole_cache(tmp_path, built):
    k, candidate, library = built
    root = str(tmp_path / "kernels")
    ctx = multiprocessing.get_context("spawn")
    args = (root, (candidate.source, candidate.variant, library), 10)
    with ctx.Pool(3) as pool:
        writers = [pool.apply_async(_writer, args) for _ in range(2)]
        reader = pool.apply_async(_reader, (root, 300.0))  # a generous bound: the machine may be busy
        for w in writers:
            w.get(timeout=300)
        assert reader.get(timeout=300) == len(SHAPES)
    c = kcache.Cache(root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entries = [c.lookup(kcache.key_for(kernel_at(rows, cols), "cpu")) for rows, cols in SHAPES]
    assert all(e is not None and e.passed for e in entries)
    assert len({e.key.digest() for e in entries}) == len(SHAPES)
    assert not [p for p in Path(root).rglob("*") if p.name.endswith(".tmp")]
    assert len(list(Path(root).rglob("*.so"))) == 1  # one library, stored once under its hash


# -- the pipeline's cache stage ------------------------------------------------------------------------


def stage_inputs(tmp_path: Path, built, passed: bool = True) -> tuple[str, str, str]:
    """kernels.json, validation.json and bench.json as the stages before `cache` write them."""
    k, candidate, _ = built
    build = cpu.build(candidate.source, tmp_path / "build")  # the source lands beside the library
    kernels, validation, timed = (tmp_path / f"{name}.json" for name in ("kernels", "validation", "bench"))
    kernels.write_text(json.dumps({"op": "rms", "kernels": [{"region": 0, "kernel": k.to_json()}]}))
    verdict = {"name": candidate.name, "kernel": k.name, "variant": candidate.variant, "passed": passed}
    validation.write_text(json.dumps({
        "op": "rms", "backend": "cpu", "passed": passed, "candidates": [verdict],
        **({"verified": {k.name: {candidate.variant: build.library}}} if passed else {"reason": "wrong"})}))
    timed.write_text(json.dumps({"variants": {k.name: {"chosen": candidate.variant, "median_s": {}}},
                                 "kernel": {"median_s": 1e-3, "ci95_s": [9e-4, 1.1e-3]}, "speedup": {}}
                                if passed else {"skipped": "validation failed: wrong"}))
    return str(kernels), str(validation), str(timed)


def test_the_cache_stage_hands_verified_winners_to_the_runtime(tmp_path, built):
    import autoperfect
    from autoperfect import stages

    root, index = tmp_path / "kernels", tmp_path / "rms.json"
    stages.cache_stage(*stage_inputs(tmp_path, built), str(root), str(index))
    (stored,) = json.loads(index.read_text())["entries"]
    entry = kcache.Cache(root).lookup(kcache.key_for(built[0], "cpu"))
    assert entry.key.digest() == stored["key"] and entry.origin == "pipeline" and entry.passed
    assert entry.bench["kernel"]["median_s"] == 1e-3 and entry.verdict["gate"] == "pipeline judge"
    f = autoperfect.jit(rms, cache_dir=root, allow_compile=False, race=False)
    x, w = mx.ones((4, 64)), mx.ones((64,))
    f(x, w)
    assert [(r.runs, r.cache) for r in f.last_trace.kernels] == [(built[0].name, "disk")]


def test_the_cache_stage_stores_nothing_that_failed(tmp_path, built):
    from autoperfect import stages

    root, index = tmp_path / "kernels", tmp_path / "rms.json"
    stages.cache_stage(*stage_inputs(tmp_path, built, passed=False), str(root), str(index))
    written = json.loads(index.read_text())
    assert written["entries"] == [] and "wrong" in written["skipped"]
    assert kcache.Cache(root).lookup(kcache.key_for(built[0], "cpu")) is None


def test_all_runs_the_cache_stage_and_with_a_runtime_section_the_runtime_benchmarks(tmp_path):
    from test_workflow import TINY, copy_workflow, snakemake

    runtime = TINY.replace("ops:\n", "runtime: {ops: [rms], model: {hidden_size: 64, tokens: 2}}\nops:\n", 1)
    planned = snakemake(copy_workflow(tmp_path / "w", runtime), "all", "-n")
    assert planned.returncode == 0, planned.stderr[-2000:]
    for rule in ("cache", "runtime_bench", "model_e2e", "report"):
        assert f"rule {rule}:" in planned.stdout


def test_timed_variants_are_indexed_by_kernel_across_launches(tmp_path, built):
    """A runtime choice's medians and a pipeline benchmark's are kept per kernel, by launch, for the
    runtime to rank a new launch's variants by; a single timing is not a ranking; an unreadable
    index is no timings, never an error."""
    k, candidate, library = built
    other = kernel_at(8, 64)
    assert other.name == k.name and other.launch != k.launch  # one kernel, two launches
    c = kcache.Cache(tmp_path)
    c.store(k, "cpu", "a", candidate.source, library, {"passed": True},
            {"chosen": "a", "median_s": {"a": 1.0, "b": 2.0}}, "runtime")
    c.store(other, "cpu", "b", candidate.source, library, {"passed": True},
            {"op": "rms", "variants": {"chosen": "b", "median_s": {"a": 3.0, "b": 1.0}}}, "pipeline")
    c.store(other, "cpu", "b", candidate.source, library, {"passed": True}, {"median_s": {"b": 1.0}}, "runtime")
    got = sorted(c.timings(k.name, "cpu"), key=lambda t: t["dims"])
    assert got == [{"dims": [4, 64], "median_s": {"a": 1.0, "b": 2.0}},
                   {"dims": [8, 64], "median_s": {"a": 3.0, "b": 1.0}}]
    assert c.timings(k.name, "cuda") == [] and c.timings("k_other", "cpu") == []
    c.timings_path(k.name, "cpu").write_text("{")
    assert c.timings(k.name, "cpu") == []
