"""Cold and warm costs of autoperfect.jit, for ops of the config: what the first call pays (trace,
compile, gate), what a first call pays when the kernel is already on disk, and what every warm call
pays on top of the kernels themselves (the dispatch overhead).

Each op runs at two sizes: the spec's shapes, and one row (every axis but the last at 1), where a
call is short enough for the runtime's own cost to show. Warm calls are timed interleaved with the
same kernels run through pipeline.program (no runtime in between), MLX eager and `mx.compile`, in
one child process under the warm allocator condition (bench.run_condition), like every benchmark.
With the pipeline's cache given, a first call pointed at it (no compiling) shows whether the kernels
the `cache` stage stored reach user code.

    python -m autoperfect.bench_runtime --ops rmsnorm softmax --out results/runtime.json
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import yaml

from . import artifacts, backends, bench, contenders, native
from .cache import Cache, key_for
from .judge import draw
from .pipeline import front, program
from .runtime import jit, only
from .spec import OpSpec, parse_ops, seed_for

DEFAULTS = {"warmup": 3, "repeats": 21, "timeout_s": 1200}


def row_shapes(spec: OpSpec) -> dict[str, tuple[int, ...]]:
    return {i.name: (1,) * (len(i.shape) - 1) + i.shape[-1:] for i in spec.inputs}


def _arrays(spec: OpSpec) -> list:
    return contenders.mlx_arrays(spec, draw(spec, "normal", np.random.default_rng(seed_for(spec.name, "runtime"))))


def _first_call(f, arrays) -> dict:
    """One call of a fresh Jit, timed as the user waits for it (evaluated)."""
    start = time.perf_counter()
    contenders.evaluated(f, arrays)()
    t = f.last_trace
    return {"seconds": time.perf_counter() - start, "setup_s": t.setup,
            "kernels": [{"kernel": r.runs, "cache": r.cache, "variant": r.variant, "dispatch": r.dispatch}
                        for r in t.kernels], "misses": list(t.misses) + ([t.eager] if t.eager else []),
            "race": t.race}


def _direct_program(spec: OpSpec, cache: Cache, backend: str):
    """The same verified kernels run through pipeline.program, with no runtime in between."""
    f = front(spec)
    be = backends.get(backend)
    entries = {k.name: cache.lookup(key_for(k, backend)) for k in f.kernels if k is not None}
    usable = {name for name, e in entries.items() if e is not None and e.passed}
    if not usable:
        return None
    kernels = {k.name: k for k in f.kernels if k is not None and k.name in usable}
    return program(only(f, usable), {n: be.Kernel(k, str(entries[n].library)) for n, k in kernels.items()})


def measure_size(spec: OpSpec, settings: dict, pipeline_root: str | None) -> dict:
    import mlx.core as mx

    fn, arrays = spec.function(), _arrays(spec)
    result = {"shapes": {i.name: list(i.shape) for i in spec.inputs}}
    with tempfile.TemporaryDirectory() as tmp:
        cold = jit(fn, cache_dir=tmp)
        backend = cold.backend  # the jit's own choice ("auto": MLX's default device)
        result["cold"] = _first_call(cold, arrays)
        result["disk"] = _first_call(jit(fn, cache_dir=tmp, allow_compile=False), arrays)
        if pipeline_root:
            handed = jit(fn, cache_dir=pipeline_root, allow_compile=False)
            result["pipeline_cache"] = _first_call(handed, arrays)
        calls = {"jit": cold, "mlx_eager": fn, "mlx_compile": mx.compile(fn)}
        direct = _direct_program(spec, Cache(tmp), backend)
        if direct is not None:
            calls["program"] = direct
        seed = seed_for(spec.name, "runtime-order")
        samples = bench.time_interleaved({name: contenders.evaluated(call, arrays) for name, call in calls.items()},
                                         settings["warmup"], settings["repeats"], seed)
    jitted = samples["jit"]
    result["warm"] = {name: bench.summarize(s, seed) for name, s in samples.items()}
    result["speedup"] = {name: bench.speedup(jitted, s, seed) for name, s in samples.items()
                         if name in ("mlx_eager", "mlx_compile")}
    if "program" in samples:  # > 1: what the runtime adds to the kernels' own path
        result["jit_over_program"] = bench.speedup(samples["program"], jitted, seed)
        result["overhead_s"] = float(np.median(jitted) - np.median(samples["program"]))
    return result


def measure(payload: dict) -> dict:
    """Child entry point (bench.run_condition): payload has ops (spec JSON), settings, pipeline_root."""
    ops = {}
    for spec_json in payload["ops"]:
        spec = OpSpec.from_json(spec_json)
        sizes = {"spec": spec}
        if row_shapes(spec) != {i.name: i.shape for i in spec.inputs}:
            sizes["row"] = spec.with_shapes(row_shapes(spec))
        ops[spec.name] = {label: measure_size(s, payload["settings"], payload["pipeline_root"] if
                                              label == "spec" else None) for label, s in sizes.items()}
    # the path the jit's kernels take on this machine: the CUDA primitive's where MLX computes on a GPU
    ext = native.CUDA if backends.for_default_device() == "cuda" else native.CPU
    return {"ops": ops, "dispatch": native.describe(ext), "machine": bench.machine()}


def run(specs: list[OpSpec], settings: dict, pipeline_root: str | None, out: str) -> dict[str, str]:
    """Measure each op in a child of its own under the warm allocator condition, and write `out`
    (results/runtime.json) after each: an op whose child fails or runs past `timeout_s` is recorded
    under `failed` with the reason, and loses none of the ops measured before it. Returns the
    failures ({op: reason})."""
    settings = {**DEFAULTS, **settings}
    result: dict = {"ops": {}, "settings": settings}
    failed: dict[str, str] = {}
    for spec in specs:
        payload = {"ops": [spec.to_json()], "settings": settings, "pipeline_root": pipeline_root}
        try:
            measured = bench.run_condition("warm", "autoperfect.bench_runtime:measure", payload,
                                           settings["timeout_s"])
        except RuntimeError as err:  # the child crashed, hung or replied nothing: the next op still runs
            failed[spec.name] = str(err)[-2000:]
        else:
            result["ops"].update(measured.pop("ops"))
            result.update(measured)  # dispatch, machine, condition: the same for every op
        result["measured_at"] = bench.measured_at()
        artifacts.write_json(out, {**result, **({"failed": failed} if failed else {})})
    return failed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Cold and warm costs of autoperfect.jit on config ops.")
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--ops", nargs="+", default=["rmsnorm", "softmax"])
    parser.add_argument("--repeats", type=int, default=DEFAULTS["repeats"])
    parser.add_argument("--pipeline-cache", default=None, help="e.g. results/cache/kernels")
    parser.add_argument("--out", default="results/runtime.json")
    args = parser.parse_args(argv)
    with open(args.config) as f:
        ops = parse_ops(yaml.safe_load(f)["ops"])
    unknown = [name for name in args.ops if name not in ops]
    if unknown:
        raise SystemExit(f"no op {', '.join(map(repr, unknown))} in {args.config} (it has {', '.join(sorted(ops))})")
    failed = run([ops[name] for name in args.ops], {"repeats": args.repeats}, args.pipeline_cache, args.out)
    if failed:
        raise SystemExit("not measured: " + "; ".join(f"{op}: {why.splitlines()[0]}" for op, why in failed.items()))


if __name__ == "__main__":
    main()
