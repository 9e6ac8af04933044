"""Each pipeline stage as one function from artifact files to artifact files.

The Snakemake scripts are adapters around these; a person can also call them from Python. The
deterministic stages (trace to candidates) write byte-identical files for the same inputs;
measuring stages (validate, bench) record the machine and the time.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from . import artifacts, backends, bench, roofline
from .backends.cfamily import Unsupported
from .canon import canonicalize
from .fuse import Partition, fuse
from .generate import Candidate, provider
from .graph import Graph
from .judge import Settings, run_isolated
from .kernel_ir import KernelIR
from .pipeline import lower_all, trace_op
from .spec import OpSpec


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _graph_artifact(g: Graph, **extra) -> dict:
    return {"op": g.name, "digest": g.digest(), "graph": g.to_json(), "listing": g.pretty().splitlines(),
            **extra}


def trace(spec_json: str, out: str) -> None:
    spec = OpSpec.from_json(json.loads(spec_json))
    g = trace_op(spec)
    artifacts.write_json(out, _graph_artifact(g, spec=spec.to_json(), spec_digest=spec.digest()))


def canon(graph_path: str, out: str) -> None:
    g = Graph.from_json(artifacts.read_json(graph_path)["graph"])
    log: list[str] = []
    c = canonicalize(g, log)
    artifacts.write_json(out, _graph_artifact(c, passes=log))


def fuse_stage(canonical_path: str, out: str) -> None:
    g = Graph.from_json(artifacts.read_json(canonical_path)["graph"])
    artifacts.write_json(out, fuse(g).to_json())


def lower(canonical_path: str, regions_path: str, out: str) -> None:
    g = Graph.from_json(artifacts.read_json(canonical_path)["graph"])
    partition = Partition.from_json(g, artifacts.read_json(regions_path))
    entries = []
    for region, k in zip(partition.regions, lower_all(partition)):
        if k is None:
            entries.append({"region": region.index, "left_to_mlx": region.reason})
        else:
            entries.append({"region": region.index, "kernel": k.to_json(), "listing": k.pretty().splitlines(),
                            "bytes_moved": k.bytes_moved()})
    artifacts.write_json(out, {"op": g.name, "kernels": entries})


def load_kernels(kernels_path: str) -> list[KernelIR]:
    return [KernelIR.from_json(e["kernel"]) for e in artifacts.read_json(kernels_path)["kernels"] if "kernel" in e]


def generate(kernels_path: str, backend: str, provider_name: str, out_dir: str) -> None:
    """Candidate sources for every kernel, plus `index.json` naming them (and what failed)."""
    gen = provider(provider_name)
    out = Path(out_dir)
    index = []
    for k in load_kernels(kernels_path):
        try:
            candidates: list[Candidate] = gen.generate(k, backend)
        except Unsupported as e:
            index.append({"kernel": k.name, "error": f"the {backend} backend can't render it: {e}"})
            continue
        for c in candidates:
            artifacts.write_text(out / f"{c.name}.c", c.source)
            index.append({**c.to_json(), "file": f"{c.name}.c"})
    artifacts.write_json(out / "index.json", {"backend": backend, "provider": provider_name, "candidates": index})


def compile_stage(candidates_dir: str, cache_dir: str, out: str) -> None:
    """Build every candidate (cached by source hash); keep every attempt and its log."""
    index = artifacts.read_json(Path(candidates_dir) / "index.json")
    be = backends.get(index["backend"])
    records = []
    for c in index["candidates"]:
        if "error" in c:
            records.append(c)
            continue
        source = (Path(candidates_dir) / c["file"]).read_text()
        b = be.build(source, Path(cache_dir))
        records.append({**c, "attempts": [b.to_json()], "ok": b.ok, "library": b.library})
    artifacts.write_json(out, {"backend": index["backend"], "candidates": records, "compiler": be.compiler(),
                               "machine": bench.machine(), "measured_at": _now()})


def validate(spec_json: str, kernels_path: str, compile_path: str, settings: dict, out: str) -> None:
    """Judge every compiled candidate; the op passes when every kernel has a verified candidate."""
    spec = OpSpec.from_json(json.loads(spec_json))
    compiled = artifacts.read_json(compile_path)
    backend = compiled["backend"]
    judge = Settings(**settings)
    names = [k.name for k in load_kernels(kernels_path)]
    by_kernel = {n: [c for c in compiled["candidates"] if c["kernel"] == n] for n in names}
    result = {"op": spec.name, "backend": backend, "judge": settings, "machine": bench.machine(),
              "measured_at": _now(), "candidates": []}
    problems = [f"{c['kernel']}: {c['error']}" for cs in by_kernel.values() for c in cs if "error" in c]
    problems += [f"{n}: no candidate compiled" for n, cs in by_kernel.items()
                 if not any(c.get("ok") for c in cs) and not any("error" in c for c in cs)]
    if problems:
        artifacts.write_json(out, {**result, "passed": False, "reason": "; ".join(problems)})
        return
    default = {n: next(c["library"] for c in cs if c.get("ok")) for n, cs in by_kernel.items()}
    verified: dict[str, dict[str, str]] = {n: {} for n in names}
    for n, cs in by_kernel.items():
        for c in cs:
            if not c.get("ok"):
                result["candidates"].append({"name": c["name"], "passed": False, "reason": "did not compile"})
                continue
            verdict = run_isolated(spec, backend, {**default, n: c["library"]}, judge)
            result["candidates"].append({"name": c["name"], "kernel": n, "variant": c["variant"], **verdict})
            if verdict["passed"]:
                verified[n][c["variant"]] = c["library"]
    failed = [n for n, v in verified.items() if not v]
    if failed:
        reasons = [c["reason"] for c in result["candidates"] if not c["passed"]]
        result.update(passed=False, reason=f"no verified candidate for {', '.join(failed)}: {reasons[0]}")
    else:
        result.update(passed=True, verified=verified)
    artifacts.write_json(out, result)


def bench_stage(spec_json: str, validation_path: str, roofline_path: str, settings: dict, out: str) -> None:
    """Time the verified op against its baselines under both allocator conditions."""
    spec = OpSpec.from_json(json.loads(spec_json))
    validation = artifacts.read_json(validation_path)
    head = {"op": spec.name, "backend": validation["backend"], "measured_at": _now()}
    if not validation["passed"]:
        artifacts.write_json(out, {**head, "skipped": f"validation failed: {validation['reason']}"})
        return
    payload = {"spec": spec.to_json(), "backend": validation["backend"], "variants": validation["verified"],
               "warmup": settings["warmup"], "repeats": settings["repeats"]}
    timeout = settings.get("timeout_s", 900)
    warm = bench.run_condition("warm", "autoperfect.contenders:measure", payload, timeout)
    cold = bench.run_condition("default", "autoperfect.contenders:measure", payload, timeout)
    ceiling = artifacts.read_json(roofline_path)
    fraction = roofline.fraction(warm["bytes_moved"], warm["kernel"]["median_s"], ceiling)
    artifacts.write_json(out, {
        **head, **{k: warm[k] for k in ("kernel", "baselines", "speedup", "variants", "baseline_checks",
                                        "bytes_moved", "machine", "condition")},
        "achieved_gbps": warm["bytes_moved"] / warm["kernel"]["median_s"] / 1e9,
        "roofline_fraction": fraction, "roofline": {"bandwidth_gbps": ceiling["bandwidth_gbps"],
                                                    "measured_at": ceiling.get("measured_at")},
        "default_allocator": {k: cold[k] for k in ("kernel", "baselines", "speedup", "condition")}})
