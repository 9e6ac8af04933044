"""The GPU run: the pipeline's stages for the `cuda` backend where MLX sees a CUDA GPU, the benchmark
against MLX (eager, `mx.compile`, `mx.fast`) and torch (eager, `torch.compile`), and the GPU's
roofline measured with kernels the renderer emits, called through the same `mx.fast.cuda_kernel`
path as the op kernels.

    python -m autoperfect.gpu_bench configs/h200.yaml results/h200

It calls the stage functions Snakemake's rules call (the lent GPU machine has no Snakemake and no
package registry), one op's stages per child process, all ops at once, then the benchmarks one
after another, alone on the GPU. Artifacts land as `OUT/{op}/cuda/*.json`, `OUT/roofline.json`, and
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


def validate_op(spec: OpSpec, where: Path, judge: dict) -> None:
    small = validation_spec(spec)
    stages.validate(json.dumps(small.to_json()), where / "kernels.json", where / "cuda" / "compile.json",
                    judge, where / "cuda" / "validation.json")


# -- the benchmark ---------------------------------------------------------------------------------


def _torch_calls(f, xs, checks: dict, ref: list[np.ndarray]) -> tuple[dict, dict]:
    """torch eager and torch.compile on the GPU, each synchronized, checked against `ref`."""
    import torch

    from . import torch_baseline

    inputs = [t.cuda() for t in torch_baseline.tensors(xs, f.traced)]
    eager = torch_baseline.translate(f.traced)
    compiled, compile_s = torch_baseline.compiled(f.traced, inputs)
    calls = {}
    for name, fn in (("torch_eager", eager), ("torch_compile", compiled)):
        out = fn(*inputs)
        outs = out if isinstance(out, tuple) else (out,)
        checks[name] = contenders.agrees(torch_baseline.to_numpy(tuple(o.cpu() for o in outs)), ref)
        if checks[name]:
            calls[name] = lambda fn=fn: (fn(*inputs), torch.cuda.synchronize())
    return calls, {"torch_compile": compile_s}


def measure(spec: OpSpec, variants: dict[str, dict[str, str]], warmup: int, repeats: int) -> dict:
    """contenders.measure for the GPU, with torch on the GPU. The kernel is timed in two interleaved
    runs, one with the MLX contenders and one with torch's (a speedup pairs the kernel with a
    baseline of its own run), then every contender alone, back to back (on the H200 a kernel ran
    ~0.1 ms faster so than interleaved with other work: both are reported). Every contender is
    checked against MLX eager first (the float64 answer key is the judge's, at smaller sizes)."""
    import mlx.core as mx

    seed = seed_for(spec.name, "bench-order")
    f = front(spec)
    xs, arrays = contenders.inputs_for(spec)
    choice = contenders.choose_variants(f, variants, arrays, cuda, seed)
    loaded = {k.name: cuda.Kernel(k, variants[k.name][choice[k.name]["chosen"]]) for k in f.kernels if k}
    fn = spec.function()
    kernel = contenders.evaluated(program(f, loaded), arrays)
    calls = {"mlx_eager": contenders.evaluated(fn, arrays),
             "mlx_compile": contenders.evaluated(mx.compile(fn), arrays)}
    fast = contenders.fast_baseline(spec)
    if fast is not None:
        calls["mlx_fast"] = contenders.evaluated(fast, arrays)
    ref = contenders.mlx_values(calls["mlx_eager"]())
    checks = {name: contenders.agrees(contenders.mlx_values(call()), ref) for name, call in
              {"kernel": kernel, **calls}.items() if name != "mlx_eager"}
    if not checks["kernel"]:
        raise RuntimeError(f"{spec.name}: the kernel disagrees with MLX eager at the benchmark's shapes")
    torch_calls, compile_s = _torch_calls(f, xs, checks, ref)
    baselines = {**{n: c for n, c in calls.items() if checks.get(n, True)}, **torch_calls}
    stats, speedup = {}, {}
    for group in ("mlx", "torch"):
        run = {n: c for n, c in baselines.items() if n.startswith(group)}
        samples = bench.time_interleaved({"kernel": kernel, **run}, warmup, repeats, seed)
        mine = samples.pop("kernel")
        stats[group] = bench.summarize(mine, seed)
        for name, s in samples.items():
            stats[name] = bench.summarize(s, seed)
            speedup[name] = bench.speedup(mine, s, seed)
    alone = {name: bench.summarize(bench.time_interleaved({name: call}, warmup, repeats, seed)[name], seed)
             for name, call in {"kernel": kernel, **baselines}.items()}
    return {"kernel": stats.pop("mlx"), "kernel_in_torch_run": stats.pop("torch"), "baselines": stats,
            "speedup": speedup, "alone": alone, "variants": choice, "baseline_checks": checks,
            "compile_s": compile_s, "bytes_moved": contenders.ideal_bytes(f), "machine": machine()}


def bench_op(spec: OpSpec, where: Path, settings: dict, ceiling: dict) -> None:
    validation = artifacts.read_json(where / "cuda" / "validation.json")
    head = {"op": spec.name, "backend": "cuda", "measured_at": bench.measured_at(),
            "shapes": {i.name: list(i.shape) for i in spec.inputs},
            "validated_at": {i.name: list(i.shape) for i in validation_spec(spec).inputs}}
    if not validation["passed"]:
        artifacts.write_json(where / "cuda" / "bench.json", {**head, "skipped": f"validation failed: "
                                                                                f"{validation['reason']}"})
        return
    m = measure(spec, validation["verified"], settings["warmup"], settings["repeats"])
    seconds = m["kernel"]["median_s"]
    artifacts.write_json(where / "cuda" / "bench.json", {
        **head, **m, "achieved_gbps": m["bytes_moved"] / seconds / 1e9,
        "roofline_fraction": roofline.fraction(m["bytes_moved"], seconds, ceiling),
        "roofline_fraction_alone": roofline.fraction(m["bytes_moved"], m["alone"]["kernel"]["median_s"],
                                                     ceiling),
        "roofline": {k: ceiling[k] for k in ("bandwidth_gbps", "copy_gbps", "measured_at")},
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


def _best(call, repeats: int) -> float:
    import mlx.core as mx

    mx.eval(call())
    return min(bench._time_once(lambda: mx.eval(call())) for _ in range(repeats))


def measure_roofline(quick: bool = False) -> dict:
    """Copy and triad bandwidth (bytes read and written) and the FMA peak, best of the repeats."""
    import mlx.core as mx

    n = STREAM_ELEMENTS // (16 if quick else 1)
    x = [mx.random.normal((n,)) for _ in range(2)]
    mx.eval(*x)
    out: dict = {"stream_elements": n, "by_schedule": {}}
    for kind, moved in (("copy", 8 * n), ("triad", 12 * n)):
        k = stream_kernel(kind, n)
        for s in cuda.ELEMENTWISE:
            b = cuda.build(cuda.render(k, s))
            kern = cuda.Kernel(k, b.library)
            gbps = moved / _best(lambda: kern(x[:len(k.inputs)]), STREAM_REPEATS) / 1e9
            out["by_schedule"][f"{kind}.{s.name}"] = gbps
        out[f"{kind}_gbps"] = max(v for key, v in out["by_schedule"].items() if key.startswith(kind))
    out["bandwidth_gbps"] = max(out["copy_gbps"], out["triad_gbps"])
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
                             f"{STREAM_REPEATS}", "machine": machine(), "measured_at": bench.measured_at()}


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


def summary(out: Path, ops: list[str]) -> dict:
    """The figures that matter, per op, from the artifacts, and how they stand against the goals:
    each op at >= 85% of the copy bandwidth, faster than the best of MLX eager, mx.compile and
    mx.fast, and a geometric mean of the speedups over torch.compile >= 1."""
    ceiling = artifacts.read_json(out / "roofline.json")
    rows, goals = {}, {"fraction_of_copy": {}, "over_best_mlx": {}, "over_torch_compile": {}}
    for op in ops:
        where = out / op / "cuda"
        v = artifacts.read_json(where / "validation.json") if (where / "validation.json").exists() else {}
        b = artifacts.read_json(where / "bench.json") if (where / "bench.json").exists() else {}
        rows[op] = {"passed": v.get("passed"), "reason": v.get("reason"), "skipped": b.get("skipped"),
                    "error": b.get("error")}
        if "kernel" not in b:
            continue
        alone = {k: st["median_s"] for k, st in b["alone"].items()}
        rows[op].update(shapes=b["shapes"], validated_at=b["validated_at"], kernel=b["kernel"],
                        alone_s=alone, baselines=b["baselines"], speedup=b["speedup"],
                        variant=[c["chosen"] for c in b["variants"].values()],
                        gbps=b["achieved_gbps"], gbps_alone=b["bytes_moved"] / alone["kernel"] / 1e9)
        pair = (rows[op]["gbps"], rows[op]["gbps_alone"])
        goals["fraction_of_copy"][op] = [g / ceiling["copy_gbps"] for g in pair]
        mlx = [k for k in b["speedup"] if k.startswith("mlx_")]
        goals["over_best_mlx"][op] = [min(b["speedup"][k]["median"] for k in mlx),
                                      min(alone[k] for k in mlx) / alone["kernel"]]
        if "torch_compile" in b["speedup"]:
            goals["over_torch_compile"][op] = [b["speedup"]["torch_compile"]["median"],
                                               alone["torch_compile"] / alone["kernel"]]
    ratios = list(goals["over_torch_compile"].values())
    goals["geomean_over_torch_compile"] = [math.exp(sum(math.log(r[i]) for r in ratios) / len(ratios))
                                           for i in (0, 1)] if ratios else None
    return {"ops": rows, "goals": goals, "roofline": ceiling, "machine": ceiling.get("machine"),
            "measured_at": ceiling.get("measured_at")}


BASELINES = ("mlx_eager", "mlx_compile", "mlx_fast", "torch_eager", "torch_compile")


def markdown(s: dict) -> list[str]:
    """The summary as markdown: a table per op, the roofline, the goals (docs/gpu-h200.md, report)."""
    r = s["roofline"]
    lines = [f"Roofline (kernels we emit, through `mx.fast.cuda_kernel`, best of {STREAM_REPEATS}): copy "
             f"{r['copy_gbps']:.0f} GB/s, triad {r['triad_gbps']:.0f} GB/s, FMA {r['fma_gflops'] / 1e3:.1f} "
             f"TFLOP/s; PyTorch's device copy {r['torch_copy_gbps']:.0f} GB/s.", "",
             "| op | kernel ms [95% CI] | alone | GB/s (alone) | % of copy (alone) | "
             + " | ".join(BASELINES) + " | variant |", "|" + " --- |" * (6 + len(BASELINES))]
    goals = s["goals"]
    for op, row in s["ops"].items():
        if "kernel" not in row:
            why = row["reason"] or row["skipped"] or row["error"] or "no figures"
            lines.append(f"| {op} | {why} |" + " |" * (4 + len(BASELINES)))
            continue
        k, alone = row["kernel"], row["alone_s"]
        cells = [op, f"{k['median_s'] * 1e3:.3f} [{k['ci95_s'][0] * 1e3:.3f}, {k['ci95_s'][1] * 1e3:.3f}]",
                 f"{alone['kernel'] * 1e3:.3f}", f"{row['gbps']:.0f} ({row['gbps_alone']:.0f})",
                 "{:.0%} ({:.0%})".format(*goals["fraction_of_copy"][op])]
        for name in BASELINES:
            sp = row["speedup"].get(name)
            cells.append(f"{row['baselines'][name]['median_s'] * 1e3:.3f} ms: {sp['median']:.2f}x "
                         f"[{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}] ({alone[name] / alone['kernel']:.2f}x)"
                         if sp else "–")
        lines.append("| " + " | ".join(cells + [", ".join(row["variant"])]) + " |")
    fractions = goals["fraction_of_copy"]
    short = [op for op, (f, _) in fractions.items() if f < GOAL_FRACTION]
    losing = [f"{op} ({v[0]:.2f}x)" for op, v in goals["over_best_mlx"].items() if v[0] <= 1]
    geo = goals["geomean_over_torch_compile"]
    lines += ["", f"Goals. At least {GOAL_FRACTION:.0%} of the copy bandwidth: "
              + (f"not reached by {', '.join(short)}" if short else "every op") + "; faster than the best of "
              "MLX eager, mx.compile and mx.fast: "
              + (f"every op but {', '.join(losing)}" if losing else "every op")
              + (f"; geometric mean of the speedups over torch.compile {geo[0]:.2f}x ({geo[1]:.2f}x alone)."
                 if geo else "."),
              "", "Speedup cells: the baseline's median, the kernel's speedup over it in their interleaved "
              "run with a paired bootstrap 95% interval, and (in parentheses) the ratio of their medians "
              "timed alone, back to back."]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("out")
    parser.add_argument("--ops", help="comma-separated subset of the config's ops")
    parser.add_argument("--prepare", metavar="OP", help=argparse.SUPPRESS)  # one op's stages (a child)
    parser.add_argument("--quick", action="store_true", help="smaller roofline arrays")
    parser.add_argument("--summarize", action="store_true", help="only summary.json and its table, from "
                                                                  "the artifacts in OUT")
    args = parser.parse_args(argv)
    config, specs = load_config(args.config)
    out = Path(args.out)
    if args.summarize:
        artifacts.write_json(out / "summary.json", summary(out, list(specs)))
        print("\n".join(markdown(artifacts.read_json(out / "summary.json"))))
        return
    if args.prepare:
        where = out / args.prepare
        prepare(specs[args.prepare], where)
        validate_op(specs[args.prepare], where, config["judge"])
        return
    ops = args.ops.split(",") if args.ops else list(specs)
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    children = {}
    for op in ops:  # each op's stages in a child, all at once; MLX's PTX cache apart, as it is not atomic
        env = {**os.environ, "MLX_PTX_CACHE_DIR": f"/tmp/autoperfect-ptx/{op}"}
        with open(out / f"{op}.log", "w") as log:
            children[op] = subprocess.Popen([sys.executable, "-m", "autoperfect.gpu_bench", args.config,
                                             args.out, "--prepare", op], stdout=log, stderr=subprocess.STDOUT,
                                            env=env)
    for op, child in children.items():
        print(f"{op}: stages and judge {'done' if child.wait() == 0 else 'FAILED'} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
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
    result = summary(out, ops)
    artifacts.write_json(out / "summary.json", result)
    print("\n".join(markdown(result)))

if __name__ == "__main__":
    main()
