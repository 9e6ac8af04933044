"""Each pipeline stage as one function from artifact files to artifact files.

The Snakemake scripts are adapters around these; a person can also call them from Python. The
deterministic stages (trace to candidates) write byte-identical files for the same inputs;
measuring stages (validate, bench) record the machine and the time.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import artifacts, backends, bench, contenders, cost, roofline, schedule_model, static
from .backends.cfamily import Unsupported, computes
from .canon import canonicalize
from .fuse import Partition, fuse
from .generate import CHAT_PROVIDERS, Candidate, provider
from .graph import Graph
from .judge import Settings, run_isolated
from .kernel_ir import KernelIR
from .pipeline import front, lower_all, trace_op
from .spec import OpSpec


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
    partition = fuse(g)
    artifacts.write_json(out, {**partition.to_json(), "cost": cost.describe(partition)})


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
    """Candidate sources for every kernel, plus `index.json` naming them (and what failed).

    Always the compiler's: a language model (anthropic, replay) adds its drafts in the llm stage,
    after compile, where the judge can check each one (autoperfect.generate.llm)."""
    gen = provider("compiler" if provider_name in CHAT_PROVIDERS else provider_name)
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
    artifacts.write_json(out / "index.json", {"backend": backend, "provider": gen.name, "candidates": index})


def compile_stage(candidates_dir: str, cache_dir: str, out: str) -> None:
    """Check every candidate's source statically, then build the ones that pass (cached by source
    hash); keep every attempt and its log. A rejected source is never compiled."""
    index = artifacts.read_json(Path(candidates_dir) / "index.json")
    be = backends.get(index["backend"])
    records = []
    for c in index["candidates"]:
        if "error" in c:
            records.append(c)
            continue
        source = (Path(candidates_dir) / c["file"]).read_text()
        verdict = static.check(source, index["backend"], c["kernel"])
        if not verdict.passed:
            records.append({**c, "static": verdict.to_json(), "attempts": [], "ok": False, "library": None})
            continue
        b = be.build(source, Path(cache_dir))
        records.append({**c, "static": verdict.to_json(), "attempts": [b.to_json()], "ok": b.ok,
                        "library": b.library})
    artifacts.write_json(out, {"backend": index["backend"], "candidates": records, "compiler": be.compiler(),
                               "machine": bench.machine(), "measured_at": bench.measured_at()})


def validate(spec_json: str, kernels_path: str, compile_path: str, settings: dict, out: str,
             llm_path: str | None = None, jobs: int = 1) -> None:
    """Judge every compiled candidate (`jobs` at a time, each in its own child); the op passes when
    every kernel has a verified candidate."""
    spec = OpSpec.from_json(json.loads(spec_json))
    compiled = artifacts.read_json(compile_path)
    if llm_path:  # the llm stage's model-written champions, judged again here with a fresh hidden draw
        compiled["candidates"] = compiled["candidates"] + artifacts.read_json(llm_path)["candidates"]
    backend = compiled["backend"]
    judge = Settings(**settings)
    names = [k.name for k in load_kernels(kernels_path)]
    by_kernel = {n: [c for c in compiled["candidates"] if c["kernel"] == n] for n in names}
    result = {"op": spec.name, "backend": backend, "judge": settings, "machine": bench.machine(),
              "measured_at": bench.measured_at(), "candidates": []}
    unrendered = [f"{c['kernel']}: {c['error']}" for cs in by_kernel.values() for c in cs if "error" in c]
    uncompiled = [f"{n}: no candidate compiled" for n, cs in by_kernel.items()
                  if not any(c.get("ok") for c in cs) and not any("error" in c for c in cs)]
    if unrendered or uncompiled:  # a kernel the backend can't render is unsupported, not a wrong result
        artifacts.write_json(out, {**result, "passed": False, "reason": "; ".join(unrendered + uncompiled),
                                   **({"unsupported": True} if not uncompiled else {})})
        return
    missing = backends.missing_device(backend)  # a GPU backend renders and compiles anywhere
    if missing:
        artifacts.write_json(out, {**result, "passed": False, "reason": f"no GPU: not run ({missing})"})
        return
    default = {n: next(c["library"] for c in cs if c.get("ok")) for n, cs in by_kernel.items()}
    verified: dict[str, dict[str, str]] = {n: {} for n in names}
    built = [(n, c) for n, cs in by_kernel.items() for c in cs if c.get("ok")]
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        verdicts = dict(zip([c["name"] for _, c in built], pool.map(
            lambda nc: run_isolated(spec, backend, {**default, nc[0]: nc[1]["library"]}, judge), built)))
    for n, cs in by_kernel.items():
        for c in cs:
            if not c.get("ok"):
                why = c.get("static", {}).get("reason") or "did not compile"
                result["candidates"].append({"name": c["name"], "passed": False, "reason": why})
                continue
            verdict = verdicts[c["name"]]
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
    head = {"op": spec.name, "backend": validation["backend"], "measured_at": bench.measured_at()}
    if not validation["passed"]:
        artifacts.write_json(out, {**head, "skipped": f"validation failed: {validation['reason']}"})
        return
    payload = {"spec": spec.to_json(), "backend": validation["backend"], "variants": validation["verified"],
               "warmup": settings["warmup"], "repeats": settings["repeats"]}
    timeout = settings.get("timeout_s", 900)
    ceiling = artifacts.read_json(roofline_path)
    warm = bench.run_condition("warm", "autoperfect.contenders:measure",
                               {**payload, "scaling": True, "steady": True, "stream_sizes": ceiling.get("sizes")},
                               timeout)
    cold = bench.run_condition("default", "autoperfect.contenders:measure", payload, timeout)
    chosen = {k: payload["variants"][k][v["chosen"]] for k, v in warm["variants"].items()}
    warm.update(contenders.median_child([bench.run_condition("warm", "autoperfect.contenders:measure_in_cache",
                                                             {**payload, "chosen": chosen}, timeout)
                                         for _ in range(contenders.IN_CACHE_CHILDREN)]))
    limit = roofline.bound(warm["bytes_moved"], cost.kernel_work(_computed(validation["backend"], spec, chosen)),
                           ceiling, warm["bytes_read"])
    steady = {}
    if "steady" in warm:
        steady = {"steady": {**warm["steady"], **_shares(warm["bytes_moved"], warm["steady"], ceiling, limit),
                             "condition": f"{warm['condition']}; {contenders.STEADY}"}}
    artifacts.write_json(out, {
        **head, **{k: warm[k] for k in ("kernel", "baselines", "speedup", "variants", "baseline_checks",
                                        "bytes_moved", "bytes_read", "machine", "condition", "dispatch", "compile_s", "scaling",
                                        "stream_in_rounds", "dispatch_floor", "host_steal", "in_cache",
                                        "roofline_in_process")
                   if k in warm},
        **_shares(warm["bytes_moved"], warm, ceiling, limit),
        "roofline": {k: ceiling.get(k) for k in ("bandwidth_gbps", "read_gbps", "fma_gflops", "measured_at")},
        "classification": limit, **steady,
        "default_allocator": {k: cold[k] for k in ("kernel", "baselines", "speedup", "condition", "dispatch",
                                                   "stream_in_rounds", "dispatch_floor", "host_steal")
                                              if k in cold}})


def _computed(backend: str, spec: OpSpec, chosen: dict[str, str]) -> list[KernelIR]:
    """The KernelIR each kernel's chosen library computes (`chosen`: kernel -> library), read from
    the source it was built from (cfamily.computes: GELU's `_sigmoid` twins compute one exp and a
    division where the kernel has a tanh), so that the roofline's work is what runs."""
    be = backends.get(backend)

    def source(k: KernelIR) -> str:
        path = be.source_of(chosen[k.name]) if k.name in chosen else None
        return path.read_text() if path is not None and path.is_file() else ""
    return [computes(k, source(k)) for k in front(spec).kernels if k is not None]


def _shares(bytes_moved: int, timed: dict, ceiling: dict, limit: dict) -> dict:
    """A timing's kernel against the ceilings: GB/s achieved and its shares."""
    seconds = timed["kernel"]["median_s"]
    achieved = bytes_moved / seconds / 1e9
    return {
        "achieved_gbps": achieved,
        # the roofline's time over the kernel's: achieved bandwidth over what the op's mix of reads
        # and writes can reach for a memory-bound op, achieved work rate over the ceilings for a
        # compute-bound one
        "roofline_fraction": limit["seconds"] / seconds,
        # achieved bandwidth over the stream bandwidth (the best copy or triad), whatever the mix
        "bandwidth_fraction": roofline.fraction(bytes_moved, seconds, ceiling),
        # against the stream kernels timed in the kernel's own rounds (the same cache state), for
        # the op's mix
        "stream_in_rounds_fraction": achieved / timed["stream_in_rounds"]["mixed_gbps"]}


def schedule_model_stage(ops: list[str], backends_: list[str], results_dir: str, out: str) -> None:
    """The learned schedule model scored on this run's benchmarks: each kernel's variants ranked by a
    model fitted on the other kernels' medians (schedule_model.leave_one_out), and the model fitted
    on all of them, per backend. A kernel that failed validation, or was timed alone, is left out."""
    found = {}
    for backend in backends_:
        timed, op_of = [], {}
        for op in ops:
            where = Path(results_dir) / op
            if not artifacts.read_json(str(where / backend / "validation.json"))["passed"]:
                continue
            kernels = {k.name: k for k in load_kernels(str(where / "kernels.json"))}
            for name, c in artifacts.read_json(str(where / backend / "bench.json")).get("variants", {}).items():
                if len(c.get("median_s", {})) > 1 and name in kernels:
                    timed.append(schedule_model.Timed(kernels[name], kernels[name].launch.dims, c["median_s"]))
                    op_of[name] = op
        model = schedule_model.fit(backend, timed)
        scored = schedule_model.leave_one_out(backend, timed)
        for row in scored["launches"]:
            row["op"] = op_of[row["kernel"]]
        found[backend] = {**scored, "model": model.to_json() if model else None}
    artifacts.write_json(out, {"top": schedule_model.TOP, "min_kernels": schedule_model.MIN_KERNELS,
                               "backends": found})


def cache_stage(kernels_path: str, validation_path: str, bench_path: str, root: str, out: str) -> None:
    """Store each kernel's benchmarked winner (source, library, verdict, figures) in the kernel cache
    at `root`, where autoperfect.jit finds it; `out` indexes what was stored, or says why nothing was."""
    from .cache import Cache, compiler_version

    validation, timed = artifacts.read_json(validation_path), artifacts.read_json(bench_path)
    backend = validation["backend"]
    head = {"op": validation["op"], "backend": backend, "root": root, "compiler": compiler_version(backend)}
    if not validation["passed"] or "skipped" in timed:
        why = validation.get("reason") or timed.get("skipped")
        artifacts.write_json(out, {**head, "entries": [], "skipped": f"nothing verified to cache: {why}"})
        return
    store = Cache(root)
    figures = {k: timed[k] for k in ("kernel", "speedup", "roofline_fraction", "condition", "measured_at")
               if k in timed}
    entries = []
    for k in load_kernels(kernels_path):
        variant = timed["variants"][k.name]["chosen"]
        library = validation["verified"][k.name][variant]
        verdict = next(c for c in validation["candidates"]
                       if c.get("kernel") == k.name and c["variant"] == variant)
        entry = store.store(k, backend, variant, backends.get(backend).source_of(library).read_text(), library,
                            {**verdict, "gate": "pipeline judge"},
                            {**figures, "op": validation["op"], "variants": timed["variants"][k.name]},
                            "pipeline")
        entries.append({"kernel": k.name, "variant": variant, "key": entry.key.digest(),
                        "file": str(store.path(entry.key).relative_to(store.root))})
    artifacts.write_json(out, {**head, "entries": entries, "pruned": store.prune(backend)})


def mutants_stage(spec_json: str, kernels_path: str, validation_path: str, settings: dict, cache_dir: str,
                  out: str, jobs: int = 1) -> None:
    """Plant every bug class into each verified variant of each kernel and record which mutants the
    judge and a KernelBench-style allclose check reject (autoperfect.mutants). Every variant the
    bench may choose is mutated, since a bug can hide in one loop structure only (a dropped row tail
    showed only in the variants that stream). The mutated source is a verified rendering of the
    compiler's (the bugs are keyed on its spellings), read beside its library; the other kernels keep
    their first verified variant."""
    from . import mutants

    spec = OpSpec.from_json(json.loads(spec_json))
    validation = artifacts.read_json(validation_path)
    backend = validation["backend"]
    head = {"op": spec.name, "backend": backend, "judge": settings, "machine": bench.machine(),
            "measured_at": bench.measured_at()}
    why = None
    if not validation["passed"]:
        why = f"validation failed: {validation.get('reason')}"
    elif backend not in mutants.BACKENDS:
        why = f"bugs are planted in the spellings of {', '.join(mutants.BACKENDS)} sources, not {backend}'s"
    if why:
        artifacts.write_json(out, {**head, "planted": 0, "caught": 0, "baseline_caught": 0, "mutants": [],
                                   "skipped": why})
        return
    kernels = load_kernels(kernels_path)
    be = backends.get(backend)
    variants = {}
    for k in kernels:
        verified = sorted(validation["verified"][k.name])
        ours = [v for v in verified if v in {s.name for s in be.schedules_for(k)}]
        variants[k.name] = ours or verified[:1]
    first = {n: validation["verified"][n][vs[0]] for n, vs in variants.items()}
    judge_settings, runs = Settings(**settings), []
    for k in kernels:
        for v in variants[k.name]:
            libraries = {**first, k.name: validation["verified"][k.name][v]}
            source = be.source_of(libraries[k.name]).read_text()
            result = mutants.evaluate(spec, backend, [k], {k.name: source}, libraries, judge_settings,
                                      Path(cache_dir), jobs)
            runs.append((k.name, v, result))
    artifacts.write_json(out, {**head, **combine_mutants(runs), "variants": variants})


def combine_mutants(runs: list[tuple[str, str, dict]]) -> dict:
    """mutants.evaluate's results for each (kernel, variant) as one record: totals over the variants
    whose verified kernels passed the control, each mutant and inapplicable class tagged with its
    variant, and per variant its control and counts. All controls failing is a skip."""
    tag = lambda items, v: [{**item, "variant": v} for item in items]  # noqa: E731
    per = [{"kernel": k, "variant": v, "control": r["control"],
            **{key: r[key] for key in ("planted", "caught", "baseline_caught")},
            **({"skipped": r["skipped"]} if "skipped" in r else {})} for k, v, r in runs]
    done = [(v, r) for _, v, r in runs if "skipped" not in r]
    record = {"planted": sum(r["planted"] for _, r in done), "caught": sum(r["caught"] for _, r in done),
              "baseline_caught": sum(r["baseline_caught"] for _, r in done),
              "mutants": [m for v, r in done for m in tag(r["mutants"], v)],
              "not_applicable": [n for _, v, r in runs for n in tag(r["not_applicable"], v)],
              "classes": runs[0][2]["classes"] if runs else {}, "by_variant": per}
    if runs and not done:
        record["skipped"] = "; ".join(f"{p['kernel']}.{p['variant']}: {p['skipped']}" for p in per)
    return record
