"""A row kernel's call right after another of its own (back to back) and after the machine idled or
the calling core was busy for a while: does the second OpenMP thread start late, and does handing
out rows as threads ask for them (`schedule(dynamic, C)`) instead of in two fixed halves
(`schedule(static)`, as rendered now) make up for it? Each op's chosen variant (results/{op}/cpu/bench.json)
rendered now and twins with the schedule clause changed (the same bits: rows are independent),
through the native op on the bench's MLX inputs; with THREADS=1 also the thread-start times of one
call. Run from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at this checkout,
under the warm condition:

    python docs/experiments/2026-12-05g-cpu/late_worker.py layernorm rmsnorm ...
"""
import os
import sys
import time

import numpy as np

from autoperfect import bench
from autoperfect import contenders as C
from autoperfect.pipeline import program

from common import be, chosen

ROUNDS = int(os.environ.get("ROUNDS", "21"))
CLAUSES = os.environ.get("CLAUSES", "static;dynamic, 16;dynamic, 64;guided, 16").split(";")
BEFORE = {"back to back": None, "idle 2 ms": ("idle", 0.002), "idle 20 ms": ("idle", 0.02),
          "busy 20 ms": ("busy", 0.02)}


def before(what):
    if what is None:
        return
    kind, seconds = what
    if kind == "idle":
        time.sleep(seconds)
    else:
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            pass


for op in sys.argv[1:]:
    c = chosen(op)
    spec, f, k, source = c.spec, c.f, c.k, c.source
    assert "#pragma omp for schedule(static)" in source
    arrays = C.input_sets(spec, f, 1, False)[0].arrays
    calls, first = {}, None
    for clause in CLAUSES:
        built = be.build(source.replace("schedule(static)", f"schedule({clause})"))
        assert built.ok, built.log[-2000:]
        ours = program(f, {k.name: be.Kernel(k, built.library)})
        got = np.concatenate([np.asarray(o).ravel() for o in C.evaluate(ours, arrays)]).view(np.uint32)
        first = got if first is None else first
        assert np.array_equal(got, first), f"{op} {clause}: other bits"
        calls[clause] = lambda ours=ours: C.evaluate(ours, arrays)
    samples = {(c, b): [] for c in calls for b in BEFORE}
    for order in bench.round_orders(len(samples), ROUNDS, 1):
        for i in order:
            clause, b = list(samples)[i]
            calls[clause]()
            before(BEFORE[b])
            samples[(clause, b)].append(bench.time_burst(calls[clause], 1))
    moved = c.moved
    print(f"{op} ({c.name}), {ROUNDS} rounds: median ms (GB/s) by what came before the call")
    print(f"  {'schedule':14s} " + " ".join(f"{b:>18s}" for b in BEFORE))
    for clause in calls:
        cells = [float(np.median(samples[(clause, b)])) for b in BEFORE]
        print(f"  {clause:14s} " + " ".join(f"{t * 1e3:9.3f} ({moved / t / 1e9:4.1f})" for t in cells), flush=True)
