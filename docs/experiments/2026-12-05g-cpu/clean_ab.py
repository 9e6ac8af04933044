"""An op's single calls as the bench stage times them (contenders.timed_with_streams: the chosen
kernel through the native op, every baseline and the roofline's stream kernels in interleaved
rounds), twice: as the stage does (each call after whatever the call before it left in the caches)
and with a sweep before each call (untimed: a read of SWEEP_CACHES times the last-level cache, so
every call starts with its inputs in memory and no other call's dirty lines left to write back).
SWEEPS (default 0,1,0,1) says which passes sweep; DROP (comma-separated) leaves those baselines out. Prints each one's median, GB/s and share of results/roofline.json's stream bandwidth, and the stream
kernels' in the same rounds.

    python docs/experiments/2026-12-05g-cpu/clean_ab.py layernorm rmsnorm ...

from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at the checkout measured,
OMP_PLACES=cores OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296.
"""
import json
import os
import sys
import time

import numpy as np
import yaml

from autoperfect import backends, bench, interp, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op, seed_for

import sweep

ROUNDS = int(os.environ.get("ROUNDS", "21"))
ops = yaml.safe_load(open("config.yaml"))["ops"]
stream_gbps = json.load(open("results/roofline.json"))["bandwidth_gbps"]
be = backends.get("cpu")
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
timed_burst = bench.time_burst
sweep.read(K)
t = time.perf_counter()
sweep.read(K)
print(f"sweep: read in {(time.perf_counter() - t) * 1e3:.1f} ms")
for op in sys.argv[1:]:
    spec = parse_op(op, ops[op])
    f = front(spec)
    read, written = C.ideal_traffic(f)
    seed = seed_for(spec.name, "bench-order")
    sets = C.input_sets(spec, f, 1, C.has_torch())
    ref = interp.evaluate(f.traced, list(sets[0].xs), "float64")
    torch_fns, _ = C.torch_calls(f, sets[0].tensors, ref, {})
    calls = C.user_calls(spec, f, torch_fns, {}, ref, sets[0])
    verified = json.load(open(f"results/{op}/cpu/validation.json"))["verified"]
    chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"]
    loaded = {k.name: be.Kernel(k, verified[k.name][chosen[k.name]["chosen"]])
              for k in f.kernels if k is not None}
    ours = program(f, loaded)
    calls["kernel"] = lambda s: C.evaluate(ours, s.arrays)
    calls = {n: c for n, c in calls.items() if n not in os.environ.get("DROP", "").split(",")}
    for clean in [c == "1" for c in os.environ.get("SWEEPS", "0,1,0,1").split(",")]:
        if clean:
            sweep.install(K)
        before = bench.cpu_times()
        out = C.timed_with_streams(C.over(calls, sets), K, read, written, 2, ROUNDS, seed)
        bench.time_burst = timed_burst
        steal = bench.stolen_share(before, bench.cpu_times())
        s = out["kernel"]["median_s"]
        gbps = (read + written) / s / 1e9
        rounds = out["stream_in_rounds"]
        nt = rounds["kernels"]["copy_nt"]
        print(f"{op:12s} {'swept' if clean else 'as is'}: kernel {s * 1e3:7.3f} ms {gbps:5.1f} GB/s "
              f"{gbps / stream_gbps:5.0%} of {stream_gbps:.1f}; copy_nt in rounds {nt['gbps']:5.1f} GB/s "
              f"({nt['gbps'] / stream_gbps:4.0%}), its mix {rounds['mixed_gbps']:5.1f}; "
              + ", ".join(f"{n} {b['median_s'] * 1e3:.3f}" for n, b in out["baselines"].items())
              + f" ms; steal {steal:.1%}", flush=True)
