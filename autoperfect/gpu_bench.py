"""The GPU run: the pipeline's stages for the `cuda` backend where MLX sees a CUDA GPU, the benchmark
against MLX (eager, `mx.compile`, `mx.fast`) and torch (eager, `torch.compile`), and the GPU's
roofline measured with kernels the renderer emits, called through the same `mx.fast.cuda_kernel`
path as the op kernels.

    python -m autoperfect.gpu_bench configs/h200.yaml results/h200 [--phase prepare|bench|mutants]

Phases: `prepare` (the stages and the judge), `bench` (the roofline and the benchmarks, with
`--reuse` on the verified sources an earlier run left in OUT), `mutants` (the judge's planted bugs,
judged on the GPU); `all` runs the three. It calls the stage functions Snakemake's rules call
(the lent GPU machine has no Snakemake and no package registry), one op's stages per child
process, all ops at once, then the benchmarks one after another, alone on the GPU. Artifacts land as `OUT/{op}/cuda/*.json`, `OUT/roofline.json`, and
`OUT/summary.json`.

The judge runs at smaller shapes than the benchmark (`validation_spec`: the same last axis, fewer
rows, so a row kernel runs the same code path): its float64 answer key and error bounds take
minutes of CPU per check at 134M elements. The kernel is the same at both sizes, since a KernelIR's
name hashes its size-free signature; `prepare` checks that the names agree. At the benchmark's
sizes every contender, the kernel too, is checked against MLX eager before it is timed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from . import artifacts, bench, contenders, roofline, stages
from .backends import cuda
from .graph import make_attrs
from .kernel_ir import Arg, Instr, KernelIR, Launch, validate
from .ops import Op
from .pipeline import front, program
from .spec import OpSpec, parse_ops, seed_for

VALIDATE_ELEMENTS = 1 << 21     # the judge's shapes hold at most this many elements per input
STREAM_ELEMENTS = 1 << 28       # float32 elements per roofline array (1 GiB)
STREAM_REPEATS = 20
FMA_ITERATIONS = 4096
FMA_THREADS = 1 << 22


# -- the stages, per op ----------------------------------------------------------------------------


def validation_spec(spec: OpSpec, limit: int = VALIDATE_ELEMENTS) -> OpSpec:
    """The spec at most `limit` elements per input: leading axes shrunk by one factor, the last axis
    kept (a row kernel then runs the same code path); inputs of one axis cut to `limit`."""
    largest = max(math.prod(i.shape) for i in spec.inputs)
    if largest <= limit:
        return spec

    def shrink(shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shape) == 1:
            return (min(shape[0], limit),)
        return tuple(max(1, d * limit // largest) for d in shape[:-1]) + shape[-1:]
    return spec.with_shapes({i.name: shrink(i.shape) for i in spec.inputs})


def prepare(spec: OpSpec, where: Path) -> None:
    """Trace to compile, at validation shapes; the kernels must be the benchmark's."""
    small = validation_spec(spec)
    big = [k.name for k in front(spec).kernels if k is not None]
    text = json.dumps(small.to_json(), sort_keys=True)
    stages.trace(text, where / "graph.json")
    stages.canon(where / "graph.json", where / "canonical.json")
    stages.fuse_stage(where / "canonical.json", where / "regions.json")
    stages.lower(where / "canonical.json", where / "regions.json", where / "kernels.json")
    names = [k.name for k in stages.load_kernels(where / "kernels.json")]
    if names != big:
        raise RuntimeError(f"{spec.name}: the validation shapes lower to {names}, the benchmark's to {big}")
    stages.generate(where / "kernels.json", "cuda", "compiler", where / "cuda" / "candidates")
    stages.compile_stage(where / "cuda" / "candidates", cuda.default_cache_dir(),
                         where / "cuda" / "compile.json")


def reuse_verified(where: Path) -> dict:
    """Point `where/cuda/validation.json`'s verified libraries at the op's candidate sources beside
    it (the results of an earlier GPU run, carried to a fresh machine, whose build cache is gone),
    keeping a variant only if the backend still offers its schedule and its source is, byte for
    byte, what the renderer writes now: so the benchmarked source is the judged one. Returns
    {kernel: [kept variants]}; the file records what was reused and what was dropped."""
    path = where / "cuda" / "validation.json"
    validation = artifacts.read_json(path)
    if not validation.get("passed"):
        return {}
    kept, dropped = {}, {}
    for k in stages.load_kernels(where / "kernels.json"):
        schedules = {s.name: s for s in cuda.schedules_for(k)}
        kept[k.name] = {}
        for v in sorted(validation["verified"][k.name]):
            source = where / "cuda" / "candidates" / f"{k.name}.{v}.c"
            if v in schedules and source.exists() and source.read_text() == cuda.render(k, schedules[v]):
                kept[k.name][v] = str(source.resolve())
            else:
                dropped.setdefault(k.name, []).append(v)
    if not all(kept.values()):
        raise RuntimeError(f"{where}: no verified source left to reuse for {[n for n, v in kept.items() if not v]}")
    artifacts.write_json(path, {**validation, "verified": kept,
                                "reused": {"from": "an earlier run's verdicts on these sources", "dropped": dropped}})
    return {n: sorted(v) for n, v in kept.items()}


def validate_op(spec: OpSpec, where: Path, judge: dict, jobs: int = 3) -> None:
    small = validation_spec(spec)
    stages.validate(json.dumps(small.to_json()), where / "kernels.json", where / "cuda" / "compile.json",
                    judge, where / "cuda" / "validation.json", jobs=jobs)


# -- the benchmark ---------------------------------------------------------------------------------


def _torch_calls(f, xs, checks: dict, ref: list[np.ndarray]) -> tuple[dict, dict, dict]:
    """torch eager and torch.compile on the GPU (contenders.torch_calls on the inputs moved there:
    checked against `ref`, an op torch lacks or a failed compile left out), each call synchronized,
    and PIPELINE calls queued to one synchronization; none where torch is not installed."""
    if not contenders.has_torch():
        return {}, {}, {}
    import torch

    from . import torch_baseline

    inputs = [t.cuda() for t in torch_baseline.tensors(xs, f.traced)]
    fns, compile_s = contenders.torch_calls(f, inputs, ref, checks)
    calls = {name: lambda fn=fn: (fn(*inputs), torch.cuda.synchronize()) for name, fn in fns.items()}
    queued = {name: lambda fn=fn: ([fn(*inputs) for _ in range(PIPELINE)], torch.cuda.synchronize())
              for name, fn in fns.items()}
    return calls, queued, compile_s


VARIANT_ROUNDS = cuda.TIMING["rounds"]
# calls queued per sample in the pipelined condition (contenders.pipelined): the device's time per
# call. One call per sample waits for the device each time, and that wait (0.07-0.12 ms a call on
# the H200, 2026-12-01, run 4) is a third of a 1 GiB op and varies by more than the variants differ.
PIPELINE = cuda.TIMING["pipeline"]


def choose_variants(f, variants: dict[str, dict[str, str]], arrays, seed: int) -> dict[str, dict]:
    """contenders.choose_variants on the GPU: each verified variant of a kernel timed (the others
    fixed at their first) in VARIANT_ROUNDS interleaved rounds, each sample PIPELINE calls queued
    and evaluated once, at the benchmark's shapes; the fastest median is kept and every median
    recorded."""
    return contenders.choose_variants(f, variants, arrays, cuda, seed, rounds=VARIANT_ROUNDS, pipeline=PIPELINE)


def measure(spec: OpSpec, variants: dict[str, dict[str, str]], warmup: int, repeats: int,
            burst: int = 4, copy_schedule: str = "v4u2_b256") -> dict:
    """contenders.measure for the GPU, with torch on the GPU. The kernel is timed in two interleaved
    runs, one with the MLX contenders and one with torch's (a speedup pairs the kernel with a
    baseline of its own run), once with one call per sample, once with bursts of `burst` calls
    (`steady`, each call waited for) and once with PIPELINE calls queued per sample and waited for
    once (`pipelined`: the device's time per call, as in a model's step), then every contender
    alone, back to back. On the H200 the first call after other work paid 0.02-0.17 ms that the
    next calls did not (`probe`, runs 2 and 4): all four are reported. In each timed condition a
    copy of the op's bytes (`same_bytes_copy`, schedule `copy_schedule`) runs in the MLX rounds,
    called the same way (`copy_in_rounds`): the ceiling of a call of that size in that condition,
    which the roofline's copy, larger and timed by itself, is not. Every contender is checked
    against MLX eager first (the float64 answer key is the judge's, at smaller sizes)."""
    import mlx.core as mx

    seed = seed_for(spec.name, "bench-order")
    f = front(spec)
    xs, host_arrays = contenders.inputs_for(spec)
    # MLX's CUDA build puts an array made from host data (mx.array(numpy)) in managed memory, and
    # an array a GPU op computed in device memory, as a model's activations are: the contenders
    # read inputs computed on the GPU (-(-x): the same values, bit for bit), as torch's do
    arrays = [mx.negative(mx.negative(a)) if a.dtype in (mx.float32, mx.float16, mx.bfloat16) else a
              for a in host_arrays]
    mx.eval(*arrays)
    offered = {k.name: {s.name for s in cuda.schedules_for(k)} for k in f.kernels if k}
    variants = {n: {v: lib for v, lib in libs.items() if v in offered[n]} or libs for n, libs in variants.items()}
    choice = choose_variants(f, variants, arrays, seed)
    loaded = {k.name: cuda.Kernel(k, variants[k.name][choice[k.name]["chosen"]]) for k in f.kernels if k}
    fn = spec.function()
    # the kernel is called as a compiled model step calls it: its program inside mx.compile, which
    # replays the traced call instead of building it in Python each time (on the H200 a 4096-element
    # rmsnorm queued in 27 us a call without it, 16 us with it, mx.fast.rms_norm's 15 us); the
    # program called as is (autoperfect.jit's path) is timed beside it as `kernel_uncompiled`
    lazy = {"kernel": mx.compile(program(f, loaded)), "kernel_uncompiled": program(f, loaded), "mlx_eager": fn,
            "mlx_compile": mx.compile(fn)}
    if any(k.dispatch == "native" for k in loaded.values()):
        # the same instances launched by MLX's precompiled_cuda_kernel instead of our primitive, in
        # mx.compile as the kernel is: what the primitive's dispatch is worth, in the same rounds
        via_mlx = {n: cuda.Kernel(k.k, variants[n][choice[n]["chosen"]], "mlx") for n, k in loaded.items()}
        lazy["kernel_via_mlx"] = mx.compile(program(f, via_mlx))
    fast = contenders.fast_baseline(spec)
    if fast is not None:
        lazy["mlx_fast"] = fast
    calls = {name: contenders.evaluated(g, arrays) for name, g in lazy.items()}
    kernel = calls.pop("kernel")
    ref = contenders.mlx_values(calls["mlx_eager"]())
    kinds = contenders.output_dtypes(f)
    checks = {name: contenders.agrees(contenders.mlx_values(call()), ref, kinds) for name, call in
              {"kernel": kernel, **calls}.items() if name != "mlx_eager"}
    if not checks["kernel"]:
        raise RuntimeError(f"{spec.name}: the kernel disagrees with MLX eager at the benchmark's shapes")
    torch_calls, torch_queued, compile_s = _torch_calls(f, xs, checks, ref)
    baselines = {**{n: c for n, c in calls.items() if checks.get(n, True)}, **torch_calls}
    queued = {**{n: contenders.pipelined(lazy[n], arrays, PIPELINE) for n in calls if checks.get(n, True)},
              **torch_queued}
    del ref
    mx.clear_cache()  # the checks' host copies leave no buffers behind for the timed calls to reuse
    copy, copy_args, copy_bytes = same_bytes_copy(contenders.ideal_bytes(f), copy_schedule)
    once = contenders.evaluated(copy, copy_args)
    # condition -> (the kernel's call, the baselines' calls, the copy's call, calls per burst, calls per sample)
    conditions = {"interleaved": (kernel, baselines, once, 1, 1), "steady": (kernel, baselines, once, burst, 1),
                  "pipelined": (contenders.pipelined(lazy["kernel"], arrays, PIPELINE), queued,
                                contenders.pipelined(copy, copy_args, PIPELINE), 1, PIPELINE)}
    runs = {}
    for cond, (mine_call, others, copy_call, size, per) in conditions.items():
        stats, speedup = {}, {}
        for group in ("mlx", "torch"):  # kernel_uncompiled and the copy run with MLX's
            run = {n: c for n, c in others.items() if n.startswith("torch") == (group == "torch")}
            if group == "mlx":
                run[COPY] = copy_call
            samples = bench.time_interleaved({"kernel": mine_call, **run}, warmup, repeats, seed, burst=size)
            samples = {n: [t / per for t in ts] for n, ts in samples.items()}
            mine = samples.pop("kernel")
            if group == "mlx":
                copied = bench.summarize(samples.pop(COPY), seed)
                copied.update(gbps=copy_bytes / copied["median_s"] / 1e9, bytes=copy_bytes, schedule=copy_schedule)
            stats[group] = bench.summarize(mine, seed)
            for name, s in samples.items():
                stats[name] = bench.summarize(s, seed)
                speedup[name] = bench.speedup(mine, s, seed)
        runs[cond] = {"kernel": stats.pop("mlx"), "kernel_in_torch_run": stats.pop("torch"), "baselines": stats,
                      "speedup": speedup, "copy_in_rounds": copied}
    alone = {name: bench.summarize(bench.time_interleaved({name: call}, warmup, repeats, seed)[name], seed)
             for name, call in {"kernel": kernel, **baselines}.items()}
    return {**runs["interleaved"], "steady": {**runs["steady"], "burst": burst},
            "pipelined": {**runs["pipelined"], "calls": PIPELINE}, "alone": alone, "variants": choice,
            "baseline_checks": checks, "compile_s": compile_s, "bytes_moved": contenders.ideal_bytes(f),
            "machine": machine(), "probe": probe(kernel, baselines, seed) if spec.name in PROBE_OPS else None,
            "placement": placement({n: lazy[n] for n in ("kernel", "mlx_compile", "mlx_fast") if n in lazy},
                                   host_arrays, arrays, seed)}


COPY = "copy_same_bytes"  # not a contender: the ceiling in the op's rounds (measure's copy_in_rounds)


def same_bytes_copy(bytes_moved: int, schedule: str):
    """The roofline's copy kernel over bytes_moved / 8 float32 elements (it reads and writes as many
    bytes as the op must), rendered with `schedule` and called inside mx.compile as the op's kernel
    is: (lazy function, its arguments, bytes moved)."""
    import mlx.core as mx

    n = max(1, bytes_moved // 8)
    k = stream_kernel("copy", n)
    s = next(s for s in cuda.ELEMENTWISE if s.name == schedule)
    built = cuda.build(cuda.render(k, s))
    if not built.ok:
        raise RuntimeError(f"the same-size copy kernel ({schedule}) did not compile: {built.log[-300:]}")
    kern = cuda.Kernel(k, built.library)
    x = mx.random.normal((n,))  # computed on the GPU: device memory, as the op's inputs are
    mx.eval(x)
    return mx.compile(lambda a: kern([a])[0]), [x], 8 * n


def placement(lazy: dict, host_arrays, device_arrays, seed: int) -> dict:
    """The given contenders (lazy functions: the kernel, mx.compile, mx.fast) on inputs made from
    host data (managed memory) against the same inputs computed on the GPU (device memory),
    interleaved: medians in seconds."""
    calls = {f"{name}_{where}": contenders.evaluated(fn, xs) for name, fn in lazy.items()
             for where, xs in (("host", host_arrays), ("device", device_arrays))}
    samples = bench.time_interleaved(calls, 3, 20, seed)
    return {name: float(np.median(t)) for name, t in samples.items()}


PROBE_OPS = ("layernorm", "chain")
PROBE_ROUNDS = 30
PROBE_CALLS = 3


def probe(kernel, baselines: dict, seed: int) -> dict:
    """Why a call is slower interleaved than alone: the kernel's first, second and third calls
    (each timed alone) right after something else ran: nothing, the GPU left idle for 3 ms, 3 ms of
    host work over 64 MB of host memory (no GPU), MLX eager's op, torch.compile's. A cost paid by the
    first call only is what the neighbour left behind (caches, clocks); one paid by every call is
    not. Medians in seconds, and the MLX allocator's cache and peak memory."""
    import mlx.core as mx

    host = np.ones(1 << 24, np.float32)

    def idle():
        time.sleep(0.003)

    def host_work():
        deadline = time.perf_counter() + 0.003
        while time.perf_counter() < deadline:
            host.sum()

    before = {"none": lambda: None, "gpu_idle_3ms": idle, "host_work_3ms": host_work}
    before.update({n: baselines[n] for n in ("mlx_eager", "torch_compile") if n in baselines})
    out = {}
    rng = np.random.default_rng(seed)
    order = list(before)
    samples = {n: [[] for _ in range(PROBE_CALLS)] for n in order}
    for _ in range(PROBE_ROUNDS):
        for i in rng.permutation(len(order)):
            name = order[i]
            before[name]()
            for c in range(PROBE_CALLS):
                start = time.perf_counter()
                kernel()
                samples[name][c].append(time.perf_counter() - start)
    for name in order:
        out[name] = [float(np.median(s)) for s in samples[name]]
    return {"after": out, "calls": PROBE_CALLS, "rounds": PROBE_ROUNDS,
            "cache_memory": mx.get_cache_memory(), "peak_memory": mx.get_peak_memory()}


def bench_op(spec: OpSpec, where: Path, settings: dict, ceiling: dict) -> None:
    validation = artifacts.read_json(where / "cuda" / "validation.json")
    head = {"op": spec.name, "backend": "cuda", "measured_at": bench.measured_at(),
            "shapes": {i.name: list(i.shape) for i in spec.inputs},
            "validated_at": {i.name: list(i.shape) for i in validation_spec(spec).inputs}}
    if not validation["passed"]:
        artifacts.write_json(where / "cuda" / "bench.json", {**head, "skipped": f"validation failed: "
                                                                                f"{validation['reason']}"})
        return
    copies = {k[len("copy."):]: v for k, v in ceiling.get("by_schedule", {}).items() if k.startswith("copy.")}
    m = measure(spec, validation["verified"], settings["warmup"], settings["repeats"], settings.get("burst", 4),
                max(copies, key=copies.get) if copies else cuda.ELEMENTWISE[1].name)
    seconds = m["kernel"]["median_s"]
    runs = {"interleaved": m, "steady": m["steady"], "pipelined": m["pipelined"]}
    artifacts.write_json(where / "cuda" / "bench.json", {
        **head, **m, "achieved_gbps": m["bytes_moved"] / seconds / 1e9,
        "roofline_fraction": roofline.fraction(m["bytes_moved"], seconds, ceiling),
        "roofline_fraction_alone": roofline.fraction(m["bytes_moved"], m["alone"]["kernel"]["median_s"],
                                                     ceiling),
        "roofline_fraction_steady": roofline.fraction(m["bytes_moved"], m["steady"]["kernel"]["median_s"],
                                                      ceiling),
        # against the copy and triad timed the same way (queued, waited for once)
        "roofline_fraction_pipelined": roofline.fraction(m["bytes_moved"], m["pipelined"]["kernel"]["median_s"],
                                                         ceiling, "pipelined_bandwidth_gbps"),
        # against a copy of the op's bytes called the same way, in the same rounds
        "copy_in_rounds_fraction": {cond: m["bytes_moved"] / r["kernel"]["median_s"] / 1e9 / r["copy_in_rounds"]["gbps"]
                                    for cond, r in runs.items()},
        "roofline": {k: ceiling[k] for k in ("bandwidth_gbps", "copy_gbps", "pipelined_bandwidth_gbps",
                                             "pipelined_copy_gbps", "measured_at")},
        "condition": "GPU: MLX's CUDA allocator; timings include the call, dispatch and mx.eval"})


# -- the roofline ----------------------------------------------------------------------------------


def stream_kernel(kind: str, n: int) -> KernelIR:
    """y = x (copy) or z = x + 3y (triad) as KernelIR, rendered like any op kernel."""
    loads = 1 if kind == "copy" else 2
    args = tuple(Arg(f"x{a}_{a}", "float32", "in", "elem", "contiguous") for a in range(loads))
    body = [Instr(a, Op.LOAD, "float32", "elem", (), make_attrs({"arg": a})) for a in range(loads)]
    if kind == "triad":
        body += [Instr(2, Op.CONST, "float32", "row", (), make_attrs({"value": 3.0})),
                 Instr(3, Op.MUL, "float32", "elem", (1, 2)), Instr(4, Op.ADD, "float32", "elem", (0, 3))]
    body.append(Instr(len(body), Op.STORE, "float32", "elem", (len(body) - 1,), make_attrs({"arg": loads})))
    launch = Launch((n,), ((1,),) * loads, ((n,),) * loads, ((n,),))
    return validate(KernelIR("elementwise", 1, args + (Arg("out0", "float32", "out", "elem", "contiguous"),),
                             tuple(body), launch, tuple(range(loads + 1))))


FMA_SOURCE = """\
  // CHAINS independent FMA chains per thread, so the FMA pipes never wait on a latency
  const float x = in0[0], y = in0[1];
  float acc[8];
#pragma unroll
  for (int c = 0; c < 8; c++) acc[c] = y * (float)(c + 1);
  for (int i = 0; i < ITERATIONS; i++) {
#pragma unroll
    for (int c = 0; c < 8; c++) acc[c] = fmaf(acc[c], x, y);
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < 8; c++) s += acc[c];
  out1[(int64_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
"""


def _times(call, repeats: int, queued: int = 1) -> list[float]:
    """Seconds per call, each sample `queued` calls evaluated once (contenders.pipelined), after one
    sample of warm-up."""
    run = contenders.pipelined(call, (), queued)
    run()
    return [bench.time_burst(run, 1) / queued for _ in range(repeats)]


def _best(call, repeats: int) -> float:
    return min(_times(call, repeats))


PIPELINED_SAMPLES = 8


def measure_roofline(quick: bool = False) -> dict:
    """Copy and triad bandwidth (bytes read and written) and the FMA peak, best of the repeats:
    one call waited for at a time (`copy_gbps`, ...), and PIPELINE calls queued and waited for once
    (`pipelined_copy_gbps`, ...), the ceiling of the ops' pipelined condition."""
    import mlx.core as mx

    n = STREAM_ELEMENTS // (16 if quick else 1)
    x = [mx.random.normal((n,)) for _ in range(2)]
    mx.eval(*x)
    out: dict = {"stream_elements": n, "by_schedule": {}}
    for kind, moved in (("copy", 8 * n), ("triad", 12 * n)):
        k = stream_kernel(kind, n)
        medians = {}
        for s in cuda.ELEMENTWISE:
            b = cuda.build(cuda.render(k, s))
            kern = cuda.Kernel(k, b.library)
            times = _times(lambda: kern(x[:len(k.inputs)]), STREAM_REPEATS)
            out["by_schedule"][f"{kind}.{s.name}"] = moved / min(times) / 1e9
            medians[s.name] = moved / float(np.median(times)) / 1e9
            queued = _times(lambda: kern(x[:len(k.inputs)]), PIPELINED_SAMPLES, PIPELINE)
            out["by_schedule"][f"pipelined_{kind}.{s.name}"] = moved / min(queued) / 1e9
            out["dispatch"] = kern.dispatch
        for prefix in ("", "pipelined_"):
            out[f"{prefix}{kind}_gbps"] = max(v for key, v in out["by_schedule"].items()
                                              if key.startswith(prefix + kind))
        out[f"{kind}_median_gbps"] = max(medians.values())  # the best schedule's median, for context
    out["bandwidth_gbps"] = max(out["copy_gbps"], out["triad_gbps"])
    out["pipelined_bandwidth_gbps"] = max(out["pipelined_copy_gbps"], out["pipelined_triad_gbps"])
    fma = mx.fast.cuda_kernel(name="ap_fma_peak", input_names=["in0"], output_names=["out1"],
                              source=FMA_SOURCE)
    block = 256
    args = dict(inputs=[mx.array([0.999999, 1e-6])], template=[("ITERATIONS", FMA_ITERATIONS)],
                grid=(FMA_THREADS, 1, 1), threadgroup=(block, 1, 1), output_shapes=[(FMA_THREADS,)],
                output_dtypes=[mx.float32])
    seconds = _best(lambda: fma(**args), 5)
    out["fma_gflops"] = 2 * 8 * FMA_ITERATIONS * FMA_THREADS / seconds / 1e9
    out["torch_copy_gbps"] = _torch_copy(n)
    return {**out, "method": "kernels rendered by backends.cuda (copy, triad) and one FMA kernel, called "
                             "through mx.fast.cuda_kernel and timed as call + mx.eval, best of "
                             f"{STREAM_REPEATS}; pipelined: {PIPELINE} calls queued and one mx.eval, best of "
                             f"{PIPELINED_SAMPLES}", "machine": machine(), "measured_at": bench.measured_at()}


def _torch_copy(n: int) -> float:
    """PyTorch's device-to-device copy, for comparison with the path through MLX."""
    import torch

    a, b = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
    best = math.inf
    for _ in range(STREAM_REPEATS):
        torch.cuda.synchronize()
        start = time.perf_counter()
        b.copy_(a)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return 8 * n / best / 1e9


def machine() -> dict:
    """bench.machine() plus the GPU."""
    import mlx.core as mx

    import torch

    info = bench.machine()
    info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    info["mlx_device"] = str(mx.default_device())
    return info


# -- the run ---------------------------------------------------------------------------------------


def load_config(path: str) -> tuple[dict, dict[str, OpSpec]]:
    with open(path) as f:
        config = yaml.safe_load(f)
    return config, parse_ops(config["ops"])


GOAL_FRACTION = 0.85  # of the copy bandwidth, for a memory-bound op at a large size
CONDITIONS = ("interleaved", "steady", "pipelined", "alone")


def summary(out: Path, ops: list[str]) -> dict:
    """The figures that matter, per op, from the artifacts, and how they stand against the goals:
    each op at >= 85% of the copy bandwidth, faster than the best of MLX eager, mx.compile and
    mx.fast, and a geometric mean of the speedups over torch.compile >= 1. Each goal is given per
    condition: `interleaved` (one call per sample: bench.json's kernel and baselines), `steady`
    (the same rounds with bursts of calls per sample), `pipelined` (calls queued, waited for once;
    its share is of the copy timed the same way) and `alone` (each contender by itself). Beside the
    roofline's copy, each timed condition has the share of a copy of the op's own bytes run in its
    rounds (`fraction_of_copy_in_rounds`; none alone). A condition an artifact lacks (one written
    before it was measured) is None."""
    ceiling = artifacts.read_json(out / "roofline.json")
    rows, goals = {}, {"fraction_of_copy": {}, "fraction_of_copy_in_rounds": {}, "over_best_mlx": {},
                       "over_best_mlx_ci95": {}, "over_torch_compile": {}}
    def optional(path: Path) -> dict:
        return artifacts.read_json(path) if path.exists() else {}

    for op in ops:
        where = out / op / "cuda"
        v, b, m = (optional(where / f"{name}.json") for name in ("validation", "bench", "mutants"))
        rows[op] = {"passed": v.get("passed"), "reason": v.get("reason"), "skipped": b.get("skipped"),
                    "error": b.get("error")}
        if m:
            rows[op]["mutants"] = {k: m.get(k) for k in ("planted", "caught", "baseline_caught", "skipped")}
        if "kernel" not in b:
            continue
        alone = {k: st["median_s"] for k, st in b["alone"].items()}
        steady = b.get("steady") or {"kernel": b["kernel"], "baselines": b["baselines"], "speedup": b["speedup"]}
        piped = b.get("pipelined") if ceiling.get("pipelined_copy_gbps") else None
        runs = {"interleaved": b, "steady": steady, "pipelined": piped}
        rows[op].update(shapes=b["shapes"], validated_at=b["validated_at"], kernel=b["kernel"],
                        alone_s=alone, baselines=b["baselines"], speedup=b["speedup"],
                        copy_in_rounds=b.get("copy_in_rounds"),
                        **{cond: {"kernel": r["kernel"], "baselines": r["baselines"], "speedup": r["speedup"],
                                  "burst": r.get("burst", 1), "calls": r.get("calls", 1),
                                  "copy_in_rounds": r.get("copy_in_rounds")} if r else None
                           for cond, r in runs.items() if cond != "interleaved"},
                        variant=[c["chosen"] for c in b["variants"].values()],
                        variant_medians_s=[c["median_s"] for c in b["variants"].values()],
                        gbps=b["achieved_gbps"], gbps_alone=b["bytes_moved"] / alone["kernel"] / 1e9,
                        gbps_steady=b["bytes_moved"] / steady["kernel"]["median_s"] / 1e9,
                        gbps_pipelined=b["bytes_moved"] / piped["kernel"]["median_s"] / 1e9 if piped else None,
                        probe=b.get("probe"))
        row = rows[op]
        goals["fraction_of_copy"][op] = [
            row["gbps"] / ceiling["copy_gbps"], row["gbps_steady"] / ceiling["copy_gbps"],
            row["gbps_pipelined"] / ceiling["pipelined_copy_gbps"] if piped else None,
            row["gbps_alone"] / ceiling["copy_gbps"]]
        in_rounds = b.get("copy_in_rounds_fraction") or {}
        goals["fraction_of_copy_in_rounds"][op] = [in_rounds.get(c) for c in CONDITIONS]
        mlx = [k for k in b["speedup"] if k.startswith("mlx_")]
        timed = [runs[c] for c in CONDITIONS[:3]]
        worst = [min((r["speedup"][k] for k in mlx), key=lambda sp: sp["median"]) if r else None for r in timed]
        goals["over_best_mlx"][op] = [w["median"] if w else None for w in worst]
        goals["over_best_mlx"][op].append(min(alone[k] for k in mlx) / alone["kernel"])
        goals["over_best_mlx_ci95"][op] = [w["ci95"] if w else None for w in worst] + [None]
        if "torch_compile" in b["speedup"]:
            goals["over_torch_compile"][op] = [r["speedup"]["torch_compile"]["median"] if r else None
                                               for r in timed] + [alone["torch_compile"] / alone["kernel"]]
    ratios = list(goals["over_torch_compile"].values())
    goals["geomean_over_torch_compile"] = [
        math.exp(sum(math.log(r[i]) for r in ratios) / len(ratios)) if all(r[i] for r in ratios) else None
        for i in range(len(CONDITIONS))] if ratios else None
    goals["conditions"] = list(CONDITIONS)
    return {"ops": rows, "goals": goals, "roofline": ceiling, "machine": ceiling.get("machine"),
            "measured_at": ceiling.get("measured_at")}


BASELINES = ("mlx_eager", "mlx_compile", "mlx_fast", "torch_eager", "torch_compile")


def _speedup_cell(run: dict, name: str) -> str:
    sp = run["speedup"].get(name)
    if not sp:
        return "–"
    return (f"{run['baselines'][name]['median_s'] * 1e3:.3f} ms: {sp['median']:.2f}x "
            f"[{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}]")


def _in_rounds_cell(run: dict, fraction: float | None) -> str:
    copied = run.get("copy_in_rounds")
    return f"{fraction:.0%} ({copied['gbps']:.0f})" if fraction is not None and copied else "–"


def markdown(s: dict) -> list[str]:
    """The summary as markdown: a table per condition, the roofline, the goals (docs/gpu-h200.md,
    report)."""
    r = s["roofline"]
    goals = s["goals"]
    queued = (f"; queued {PIPELINE} calls to a wait (the pipelined condition's ceiling, best of "
              f"{PIPELINED_SAMPLES}): copy {r['pipelined_copy_gbps']:.0f} GB/s, triad "
              f"{r['pipelined_triad_gbps']:.0f} GB/s") if r.get("pipelined_copy_gbps") else ""
    through = f"`{r['dispatch']}`" if r.get("dispatch") else "MLX's custom-kernel op"
    lines = [f"Roofline (kernels we emit, through {through}, one call per wait, best of "
             f"{STREAM_REPEATS}): copy {r['copy_gbps']:.0f} GB/s, triad {r['triad_gbps']:.0f} GB/s{queued}; "
             f"FMA {r['fma_gflops'] / 1e3:.1f} TFLOP/s; PyTorch's device copy {r['torch_copy_gbps']:.0f} GB/s.", ""]
    head = ["| op | kernel ms [95% CI] | GB/s | % of copy | % of a same-size copy in its rounds (GB/s) | "
            + " | ".join(BASELINES) + " | variant |", "|" + " --- |" * (6 + len(BASELINES))]
    timed = [row for row in s["ops"].values() if "kernel" in row]
    bursts = {row["steady"]["burst"] for row in timed}
    calls = {row["pipelined"]["calls"] for row in timed if row.get("pipelined")}
    titles = {"interleaved": "Interleaved, one call per sample (bench.json's `kernel` and `baselines`):",
              "steady": f"Interleaved, each sample the mean of a burst of {'/'.join(map(str, sorted(bursts)))} "
                        "back-to-back calls, each waited for (bench.json's `steady`):",
              "pipelined": f"Interleaved, each sample {'/'.join(map(str, sorted(calls)))} calls queued and waited "
                           "for once, per call (bench.json's `pipelined`; % of the copy timed the same way):"}
    for c, cond in enumerate(CONDITIONS[:3]):
        if cond == "pipelined" and not calls:
            continue
        lines += [titles[cond], "", *head]
        for op, row in s["ops"].items():
            if "kernel" not in row or (cond != "interleaved" and not row.get(cond)):
                why = row["reason"] or row["skipped"] or row["error"] or "no figures"
                lines.append(f"| {op} | {why} |" + " |" * (4 + len(BASELINES)))
                continue
            run = row if cond == "interleaved" else row[cond]
            k = run["kernel"]
            gbps = row["gbps" if cond == "interleaved" else f"gbps_{cond}"]
            cells = [op, f"{k['median_s'] * 1e3:.3f} [{k['ci95_s'][0] * 1e3:.3f}, {k['ci95_s'][1] * 1e3:.3f}]",
                     f"{gbps:.0f}", f"{goals['fraction_of_copy'][op][c]:.0%}",
                     _in_rounds_cell(run, goals["fraction_of_copy_in_rounds"][op][c])]
            cells += [_speedup_cell(run, name) for name in BASELINES]
            lines.append("| " + " | ".join(cells + [", ".join(row["variant"])]) + " |")
        lines.append("")
    lines += ["Alone (each contender by itself, back to back; medians, ms):", "",
              "| op | kernel | GB/s | % of copy | " + " | ".join(BASELINES) + " |",
              "|" + " --- |" * (4 + len(BASELINES))]
    for op, row in s["ops"].items():
        if "kernel" in row:
            alone = row["alone_s"]
            lines.append(f"| {op} | {alone['kernel'] * 1e3:.3f} | {row['gbps_alone']:.0f} | "
                         f"{goals['fraction_of_copy'][op][3]:.0%} | "
                         + " | ".join(f"{alone[n] * 1e3:.3f} ({alone[n] / alone['kernel']:.2f}x)" if n in alone
                                      else "–" for n in BASELINES) + " |")
    geo = goals["geomean_over_torch_compile"]
    lines += ["", f"Goals, per condition ({' / '.join(CONDITIONS)}):", ""]
    for c, cond in enumerate(CONDITIONS):
        if any(f[c] is None for f in goals["fraction_of_copy"].values()):
            lines.append(f"- {cond}: not measured for every op.")
            continue
        short = [op for op, f in goals["fraction_of_copy"].items() if f[c] < GOAL_FRACTION]
        same = goals["fraction_of_copy_in_rounds"]
        under = [op for op, f in same.items() if f[c] is not None and f[c] < GOAL_FRACTION]
        of_same = ("" if any(f[c] is None for f in same.values()) else "; of a same-size copy in the same rounds: "
                   + (f"not reached by {', '.join(under)}" if under else "every op"))
        losing = [f"{op} ({v[c]:.2f}x)" for op, v in goals["over_best_mlx"].items() if v[c] <= 1]
        # a median above 1 whose paired interval reaches 1 is not shown to be faster
        ci = {op: v[c] for op, v in goals["over_best_mlx_ci95"].items()}
        noise = [f"{op} ({v[c]:.2f}x [{ci[op][0]:.2f}, {ci[op][1]:.2f}])" for op, v in goals["over_best_mlx"].items()
                 if v[c] > 1 and ci[op] is not None and ci[op][0] <= 1]
        losing_text = (f"every op but {', '.join(losing)}" if losing else "every op") + (
            f" (the interval reaches 1 for {', '.join(noise)})" if noise else "")
        lines.append(f"- {cond}: at least {GOAL_FRACTION:.0%} of the copy bandwidth: "
                     + (f"not reached by {', '.join(short)}" if short else "every op") + of_same + "; faster than the best of "
                     "MLX eager, mx.compile and mx.fast: " + losing_text
                     + (f"; geometric mean of the speedups over torch.compile {geo[c]:.2f}x." if geo else "."))
    probes = {op: row["probe"] for op, row in s["ops"].items() if row.get("probe")}
    if probes:
        lines += ["", "Probe: the kernel's 1st / 2nd / 3rd call (ms, medians) right after ...", "",
                  "| op | " + " | ".join(next(iter(probes.values()))["after"]) + " |",
                  "|" + " --- |" * (1 + len(next(iter(probes.values()))["after"]))]
        for op, p in probes.items():
            lines.append(f"| {op} | " + " | ".join(" / ".join(f"{t * 1e3:.3f}" for t in ts)
                                                  for ts in p["after"].values()) + " |")
    mutated = {op: row["mutants"] for op, row in s["ops"].items() if row.get("mutants")}
    if mutated:
        lines += ["", "Planted bugs on the GPU (autoperfect.mutants, cuda): "
                  + "; ".join(f"{op} {m['caught']}/{m['planted']} caught by the judge, {m['baseline_caught']} "
                              "by allclose" if not m.get("skipped") else f"{op}: {m['skipped']}"
                              for op, m in mutated.items()) + "."]
    lines += ["", "Speedup cells: the baseline's median, the kernel's speedup over it in their interleaved "
              "run with a paired bootstrap 95% interval; alone: the baseline's median and the ratio of the "
              "medians timed alone, back to back."]
    return lines


def mutate(spec: OpSpec, where: Path, judge: dict, jobs: int) -> None:
    """The judge's planted bugs (autoperfect.mutants) in the op's verified CUDA kernels, at the
    judge's shapes: `where/cuda/mutants.json`."""
    small = validation_spec(spec)
    stages.mutants_stage(json.dumps(small.to_json()), str(where / "kernels.json"),
                         str(where / "cuda" / "validation.json"), judge, str(cuda.default_cache_dir()),
                         str(where / "cuda" / "mutants.json"), jobs)


def _children(args, ops: list[str], flag: str, start: float, what: str, extra: list[str] = ()) -> None:
    """One child per op (`flag OP`), all at once; MLX's PTX cache apart per op (it is not atomic).
    A child still running `--deadline` seconds after the start is ended (by its id): its op keeps
    what it wrote, and what it did not write is missing from the summary."""
    children = {}
    for op in ops:
        env = {**os.environ, "MLX_PTX_CACHE_DIR": f"/tmp/autoperfect-ptx/{op}{flag}"}
        with open(Path(args.out) / f"{op}{flag.replace('--', '.')}.log", "w") as log:
            children[op] = subprocess.Popen([sys.executable, "-m", "autoperfect.gpu_bench", args.config,
                                             args.out, flag, op, *extra], stdout=log,
                                            stderr=subprocess.STDOUT, env=env)
    for op, child in children.items():
        try:
            rc = child.wait(None if args.deadline is None else max(1.0, start + args.deadline - time.perf_counter()))
            state = "done" if rc == 0 else "FAILED"
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            state = f"ENDED at the {args.deadline:.0f} s deadline"
        print(f"{op}: {what} {state} ({time.perf_counter() - start:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("out")
    parser.add_argument("--ops", help="comma-separated subset of the config's ops")
    parser.add_argument("--phase", choices=("all", "prepare", "bench", "mutants"), default="all",
                        help="prepare: the stages and the judge; bench: the roofline and the benchmarks; "
                             "mutants: the judge's planted bugs; all: the three in turn")
    parser.add_argument("--mutant-jobs", type=int, default=2, help="mutants judged at once, per op")
    parser.add_argument("--jobs", type=int, default=3, help="candidates judged at once, per op")
    parser.add_argument("--deadline", type=float, help="seconds after which per-op children are ended")
    parser.add_argument("--reuse", action="store_true", help="bench the verified sources an earlier run left "
                                                             "in OUT (reuse_verified) instead of judging again")
    parser.add_argument("--prepare", metavar="OP", help=argparse.SUPPRESS)  # one op's stages (a child)
    parser.add_argument("--mutate", metavar="OP", help=argparse.SUPPRESS)  # one op's mutants (a child)
    parser.add_argument("--quick", action="store_true", help="smaller roofline arrays")
    parser.add_argument("--summarize", action="store_true", help="only summary.json and its table, from "
                                                                  "the artifacts in OUT")
    args = parser.parse_args(argv)
    config, specs = load_config(args.config)
    out = Path(args.out)
    ops = args.ops.split(",") if args.ops else list(specs)
    if args.summarize:
        artifacts.write_json(out / "summary.json", summary(out, ops))
        print("\n".join(markdown(artifacts.read_json(out / "summary.json"))))
        return
    if args.prepare:
        where = out / args.prepare
        prepare(specs[args.prepare], where)
        validate_op(specs[args.prepare], where, config["judge"], args.jobs)
        return
    if args.mutate:
        mutate(specs[args.mutate], out / args.mutate, config["judge"], args.mutant_jobs)
        return
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    if args.phase in ("all", "prepare"):
        _children(args, ops, "--prepare", start, "stages and judge", ["--jobs", str(args.jobs)])
    if args.reuse:
        for op in ops:
            print(f"{op}: reusing the verified sources {reuse_verified(out / op)}", flush=True)
    if args.phase in ("all", "bench"):
        ceiling = measure_roofline(args.quick)
        artifacts.write_json(out / "roofline.json", ceiling)
        print(f"roofline: copy {ceiling['copy_gbps']:.0f} GB/s, triad {ceiling['triad_gbps']:.0f} GB/s, torch "
              f"copy {ceiling['torch_copy_gbps']:.0f} GB/s, FMA {ceiling['fma_gflops']:.0f} GFLOP/s", flush=True)
        for op in ops:
            try:
                bench_op(specs[op], out / op, config["bench"], ceiling)
            except Exception as err:  # noqa: BLE001 (one op's failure must not lose the others' figures)
                artifacts.write_json(out / op / "cuda" / "bench.json", {"op": op, "error": repr(err)})
            print(f"{op}: benchmarked ({time.perf_counter() - start:.0f} s)", flush=True)
            artifacts.write_json(out / "summary.json", summary(out, ops))  # what is done so far survives
    if args.phase in ("all", "mutants"):
        _children(args, ops, "--mutate", start, "mutants", ["--mutant-jobs", str(args.mutant_jobs)])
    if (out / "roofline.json").exists():
        result = summary(out, ops)
        artifacts.write_json(out / "summary.json", result)
        print("\n".join(markdown(result)))


if __name__ == "__main__":
    main()
