"""The renderer's `_piped` twin against its unpiped parent, both as the op's native op, in the bench
stage's single-call rounds (contenders.timed_with_streams: every baseline and the roofline's stream
kernels, one input set), with STEADY=1 in bursts over input sets beyond the caches as its steady
state does; the parent is the chosen variant's (results/{op}/cpu/bench.json), less `_piped`, or
PARENT (rows_v16 where the chosen one has no twin: `_fma`). Same bits checked. Prints each one's median, GB/s, share of results/roofline.json's stream
bandwidth and of its mix in the rounds, and the paired speedup with its bootstrap interval.

    python docs/experiments/2026-12-05g-cpu/piped_rounds.py layernorm rmsnorm add_rmsnorm

from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at the checkout measured,
OMP_PLACES=cores OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296.
"""
import json
import os
import sys

import numpy as np

from autoperfect import contenders as C
from autoperfect import roofline
from autoperfect.backends import cpu
from autoperfect.pipeline import program

from common import K, be, bench_calls, bench_seed, chosen

ROUNDS = int(os.environ.get("ROUNDS", "31"))
STEADY = os.environ.get("STEADY") == "1"
stream_gbps = json.load(open("results/roofline.json"))["bandwidth_gbps"]
for op in sys.argv[1:]:
    c = chosen(op)
    assert len(c.f.kernels) == 1
    by_name = {s.name: s for s in cpu.schedules_for(c.k)}
    parent = os.environ.get("PARENT") or c.name.removesuffix("_piped")
    parent = parent if f"{parent}_piped" in by_name else "rows_v16"
    pair = {"kernel": by_name[f"{parent}_piped"], "unpiped": by_name[parent]}
    read, written = C.ideal_traffic(c.f)
    seed = bench_seed(c)
    count = C.steady_set_count(read, roofline.cache_bytes()) if STEADY else 1
    sets = C.input_sets(c.spec, c.f, count, C.has_torch())
    _, calls = bench_calls(c) if not STEADY else (None, {})
    if STEADY:
        from autoperfect import interp
        ref = interp.evaluate(c.f.traced, list(sets[0].xs), "float64")
        torch_fns, _ = C.torch_calls(c.f, sets[0].tensors, ref, {})
        calls = C.user_calls(c.spec, c.f, torch_fns, {}, ref, sets[0])
    progs = {}
    for role, s in pair.items():
        built = be.build(be.render(c.k, s))
        assert built.ok, built.log[-2000:]
        progs[role] = program(c.f, {c.k.name: be.Kernel(c.k, built.library)})
    got = [np.asarray(C.evaluate(p, sets[0].arrays)[0]).view(np.uint32) for p in progs.values()]
    assert np.array_equal(*got), f"{op}: the piped twin gave other bits"
    for role, p in progs.items():
        calls[role] = lambda s, p=p: C.evaluate(p, s.arrays)
    if STEADY:
        burst = count * -(-C.STEADY_MIN_CALLS // count)
        out = C.timed_with_streams(C.over(calls, sets), K, read, written, count, C.STEADY_REPEATS, seed, burst, count)
    else:
        out = C.timed_with_streams(C.over(calls, sets), K, read, written, 2, ROUNDS, seed)
    mix = out["stream_in_rounds"]["mixed_gbps"]
    for role, s in (("piped", out["kernel"]["median_s"]), ("unpiped", out["baselines"]["unpiped"]["median_s"])):
        gbps = (read + written) / s / 1e9
        print(f"{op:12s} {'steady' if STEADY else 'single'} {parent}{'_piped' if role == 'piped' else '':7s} "
              f"{s * 1e3:7.3f} ms {gbps:5.1f} GB/s {gbps / stream_gbps:5.0%} of {stream_gbps:.1f}, "
              f"{gbps / mix:5.0%} of its mix in rounds ({mix:.1f})")
    sp = out["speedup"]["unpiped"]
    print(f"{op:12s} piped over unpiped {sp['median']:.3f}x [{sp['ci95'][0]:.3f}, {sp['ci95'][1]:.3f}]; "
          f"steal {out['host_steal']:.1%}", flush=True)
