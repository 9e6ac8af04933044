"""The renderer's `_piped` twin against its unpiped parent, both as the op's native op, in the bench
stage's single-call rounds (every baseline and the roofline's stream kernels, one input set), with
STEADY=1 in bursts over input sets beyond the caches as its steady state does; the parent is the
chosen variant's (results/{op}/cpu/bench.json), less `_piped`, or PARENT (rows_v16 where the chosen
one has no twin). Same bits checked (common.pair_in_rounds).

    python docs/experiments/2026-12-05g-cpu/piped_rounds.py layernorm rmsnorm add_rmsnorm

from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at the checkout measured,
OMP_PLACES=cores OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296.
"""
import os
import sys

from autoperfect.backends import cpu
from autoperfect.pipeline import program

from common import be, chosen, pair_in_rounds

ROUNDS = int(os.environ.get("ROUNDS", "31"))
for op in sys.argv[1:]:
    c = chosen(op)
    assert len(c.f.kernels) == 1
    by_name = {s.name: s for s in cpu.schedules_for(c.k)}
    parent = os.environ.get("PARENT") or c.name.removesuffix("_piped")
    parent = parent if f"{parent}_piped" in by_name else "rows_v16"
    ours = {}
    for name in (f"{parent}_piped", parent):
        built = be.build(be.render(c.k, by_name[name]))
        assert built.ok, built.log[-2000:]
        ours[name] = program(c.f, {c.k.name: be.Kernel(c.k, built.library)})
    pair_in_rounds(c, ours, ROUNDS, os.environ.get("STEADY") == "1")
