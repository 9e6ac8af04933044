"""An op's chosen kernel through the native op with its outputs on a 64-byte line (`lined`, the
default now) and where MLX's allocator puts them (`mlx_placed`, 8 bytes past a 16-byte boundary),
as the bench stage times its kernel: single calls in interleaved rounds beside every baseline and
the roofline's stream kernels (contenders.measure's rounds, one input set), and with STEADY=1 in
bursts over input sets beyond the caches as its steady state does. Prints each one's median, GB/s,
its share of results/roofline.json's stream bandwidth and of its mix's ceiling in the same rounds,
and lined's paired speedup over mlx_placed with its bootstrap interval.

    python docs/experiments/2026-12-05f-cpu/aligned_ab.py rmsnorm layernorm ...

from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at the checkout measured,
OMP_PLACES=cores OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296.
"""
import json
import os
import sys

import numpy as np
import yaml

from autoperfect import backends, bench, interp, native, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op, seed_for

ROUNDS = int(os.environ.get("ROUNDS", "31"))
STEADY = os.environ.get("STEADY") == "1"
ops = yaml.safe_load(open("config.yaml"))["ops"]
stream_gbps = json.load(open("results/roofline.json"))["bandwidth_gbps"]
be = backends.get("cpu")
ext = native.load()
assert ext is not None, native.describe()
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)


def placed(call, lined: bool):
    def run(s):
        ext.set_aligned_outputs(lined)
        try:
            return call(s)
        finally:
            ext.set_aligned_outputs(True)
    return run


for op in sys.argv[1:]:
    spec = parse_op(op, ops[op])
    f = front(spec)
    read, written = C.ideal_traffic(f)
    seed = seed_for(spec.name, "bench-order")
    count = C.steady_set_count(read, roofline.cache_bytes()) if STEADY else 1
    sets = C.input_sets(spec, f, count, C.has_torch())
    ref = interp.evaluate(f.traced, list(sets[0].xs), "float64")
    torch_fns, _ = C.torch_calls(f, sets[0].tensors, ref, {})
    calls = C.user_calls(spec, f, torch_fns, {}, ref, sets[0])
    verified = json.load(open(f"results/{op}/cpu/validation.json"))["verified"]
    chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"]
    loaded = {k.name: be.Kernel(k, verified[k.name][chosen[k.name]["chosen"]])
              for k in f.kernels if k is not None}
    assert all(k.dispatch == "native" for k in loaded.values())
    ours = program(f, loaded)
    calls["kernel"] = placed(lambda s: C.evaluate(ours, s.arrays), True)
    calls["mlx_placed"] = placed(lambda s: C.evaluate(ours, s.arrays), False)
    before = bench.cpu_times()
    if STEADY:
        burst = count * -(-C.STEADY_MIN_CALLS // count)
        out = C.timed_with_streams(C.over(calls, sets), K, read, written, count, C.STEADY_REPEATS, seed,
                                   burst, count)
    else:
        out = C.timed_with_streams(C.over(calls, sets), K, read, written, 2, ROUNDS, seed)
    steal = bench.stolen_share(before, bench.cpu_times())
    med = {"lined": out["kernel"]["median_s"], "mlx_placed": out["baselines"]["mlx_placed"]["median_s"]}
    mix = out["stream_in_rounds"]["mixed_gbps"]
    for n, s in med.items():
        gbps = (read + written) / s / 1e9
        print(f"{op:12s} {'steady' if STEADY else 'single'} {n:10s} {s * 1e3:7.3f} ms {gbps:6.1f} GB/s "
              f"{gbps / stream_gbps:5.0%} of {stream_gbps:.1f}, {gbps / mix:5.0%} of its mix in rounds ({mix:.1f})")
    sp = out["speedup"]["mlx_placed"]
    print(f"{op:12s} lined over mlx_placed {sp['median']:.3f}x [{sp['ci95'][0]:.3f}, {sp['ci95'][1]:.3f}]; "
          f"torch_compile {out['baselines']['torch_compile']['median_s'] * 1e3:.3f} ms; steal {steal:.1%}", flush=True)
