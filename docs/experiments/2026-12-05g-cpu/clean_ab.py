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

from autoperfect import bench
from autoperfect import contenders as C
from autoperfect.pipeline import program

from common import K, be, bench_calls, bench_seed, chosen, install_sweep, sweep

ROUNDS = int(os.environ.get("ROUNDS", "21"))
stream_gbps = json.load(open("results/roofline.json"))["bandwidth_gbps"]
sweep()
t = time.perf_counter()
sweep()
print(f"sweep: read in {(time.perf_counter() - t) * 1e3:.1f} ms")
for op in sys.argv[1:]:
    c = chosen(op)
    assert len(c.f.kernels) == 1, "one kernel an op here"
    read, written = C.ideal_traffic(c.f)
    seed = bench_seed(c)
    sets, calls = bench_calls(c)
    ours = program(c.f, {c.k.name: be.Kernel(c.k, c.library)})
    calls["kernel"] = lambda s: C.evaluate(ours, s.arrays)
    calls = {n: c for n, c in calls.items() if n not in os.environ.get("DROP", "").split(",")}
    for clean in [c == "1" for c in os.environ.get("SWEEPS", "0,1,0,1").split(",")]:
        undo = install_sweep() if clean else (lambda: None)
        before = bench.cpu_times()
        out = C.timed_with_streams(C.over(calls, sets), K, read, written, 2, ROUNDS, seed)
        undo()
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
