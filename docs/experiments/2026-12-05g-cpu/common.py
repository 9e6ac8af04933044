"""What this directory's scripts share: an op's chosen kernel as the pipeline left it, buffers at
controlled places, the bench stage's single-call contenders, and the cold start (`sweep`, `install_sweep`:
before each timed call of bench.time_interleaved's rounds an untimed read of SWEEP_CACHES, default 2,
times the last-level cache, so the call finds its inputs in memory and no other call's dirty lines).
Run from a pipeline clone's root: it reads config.yaml and results/."""
import json
import os
from types import SimpleNamespace

import numpy as np
import yaml

from autoperfect import backends, bench, interp, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front
from autoperfect.spec import parse_op, seed_for

be = backends.get("cpu")
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
_sweep_buffer = None


def chosen(op: str) -> SimpleNamespace:
    """The op's spec, front, first kernel, the chosen variant's name, schedule and source as this
    checkout renders it, and its library as the validation stage built it."""
    spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
    f = front(spec)
    k = [k for k in f.kernels if k is not None][0]
    name = json.load(open(f"results/{op}/cpu/bench.json"))["variants"][k.name]["chosen"]
    schedule = {s.name: s for s in be.schedules_for(k)}[name]
    library = json.load(open(f"results/{op}/cpu/validation.json"))["verified"][k.name][name]
    return SimpleNamespace(spec=spec, f=f, k=k, name=name, schedule=schedule, source=be.render(k, schedule),
                           library=library, moved=sum(C.ideal_traffic(f)))


def placed(values: np.ndarray, shift: int = 0) -> np.ndarray:
    """A copy of `values` starting `shift` bytes past a 2 MB boundary, on 4 KB pages."""
    buf = roofline.paged_ones(values.size + 1024, "base")[shift // 4:shift // 4 + values.size].reshape(values.shape)
    buf[...] = values
    return buf


def bench_calls(c: SimpleNamespace, count: int = 1) -> tuple[list, dict]:
    """The bench stage's input sets (one for single calls; `count` for its steady bursts) and every
    baseline's call on the first (contenders.user_calls)."""
    sets = C.input_sets(c.spec, c.f, count, C.has_torch())
    ref = interp.evaluate(c.f.traced, list(sets[0].xs), "float64")
    torch_fns, _ = C.torch_calls(c.f, sets[0].tensors, ref, {})
    return sets, C.user_calls(c.spec, c.f, torch_fns, {}, ref, sets[0])


def pair_in_rounds(c: SimpleNamespace, ours: dict, rounds: int, steady: bool = False) -> None:
    """Two programs of the op (`ours`: {label: Program}, the first timed as the bench's "kernel")
    in the bench stage's rounds beside every baseline and the stream kernels (contenders.timed_with_streams;
    `steady`: its steady bursts over input sets beyond the caches), after checking they give the
    same bits; prints each one's median, GB/s and shares, and the first's paired speedup over the
    second with its bootstrap interval."""
    read, written = C.ideal_traffic(c.f)
    count = C.steady_set_count(read, roofline.cache_bytes()) if steady else 1
    sets, calls = bench_calls(c, count)
    (first, a), (second, b) = ours.items()
    got = [np.asarray(C.evaluate(p, sets[0].arrays)[0]).view(np.uint32) for p in (a, b)]
    assert np.array_equal(*got), f"{c.spec.name}: {first} and {second} gave other bits"
    calls["kernel"] = lambda s: C.evaluate(a, s.arrays)
    calls[second] = lambda s: C.evaluate(b, s.arrays)
    seed = bench_seed(c)
    if steady:
        burst = count * -(-C.STEADY_MIN_CALLS // count)
        out = C.timed_with_streams(C.over(calls, sets), K, read, written, count, C.STEADY_REPEATS, seed, burst, count)
    else:
        out = C.timed_with_streams(C.over(calls, sets), K, read, written, 2, rounds, seed)
    stream_gbps = json.load(open("results/roofline.json"))["bandwidth_gbps"]
    mix = out["stream_in_rounds"]["mixed_gbps"]
    for label, s in ((first, out["kernel"]["median_s"]), (second, out["baselines"][second]["median_s"])):
        gbps = (read + written) / s / 1e9
        print(f"{c.spec.name:12s} {'steady' if steady else 'single'} {label:30s} {s * 1e3:7.3f} ms {gbps:5.1f} GB/s "
              f"{gbps / stream_gbps:5.0%} of {stream_gbps:.1f}, {gbps / mix:5.0%} of its mix in rounds ({mix:.1f})")
    sp = out["speedup"][second]
    print(f"{c.spec.name:12s} {first} over {second} {sp['median']:.3f}x [{sp['ci95'][0]:.3f}, {sp['ci95'][1]:.3f}]; "
          f"torch_compile {out['baselines']['torch_compile']['median_s'] * 1e3:.3f} ms; steal {out['host_steal']:.1%}",
          flush=True)


def bench_seed(c: SimpleNamespace) -> int:
    return seed_for(c.spec.name, "bench-order")


def sweep() -> None:
    global _sweep_buffer
    if _sweep_buffer is None:
        size = int(float(os.environ.get("SWEEP_CACHES", "2")) * roofline.cache_bytes()) // 4
        _sweep_buffer = roofline.paged_ones(size, "base")
    K.read(_sweep_buffer.ctypes.data, _sweep_buffer.size)


def install_sweep():
    """Make every timed call of bench.time_interleaved cold; returns the undo."""
    timed = bench.time_burst

    def swept(call, burst):
        sweep()
        return timed(call, burst)
    bench.time_burst = swept
    return lambda: setattr(bench, "time_burst", timed)
