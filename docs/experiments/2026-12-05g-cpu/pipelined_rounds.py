"""The hand-pipelined prototype (pipelined_ab.py's, with PF_ROWS rows of prefetch, default 2) as the
op's native op, in the bench stage's single-call rounds (every baseline and the roofline's stream
kernels, one input set) beside the chosen kernel's native op, as aligned_ab.py times its pair; same
bits checked (common.pair_in_rounds).

    python docs/experiments/2026-12-05g-cpu/pipelined_rounds.py rmsnorm|layernorm

from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at the checkout measured,
OMP_PLACES=cores OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296.
"""
import os
import sys

from autoperfect.pipeline import program

from common import be, chosen, pair_in_rounds

ROUNDS = int(os.environ.get("ROUNDS", "31"))
PF_ROWS = int(os.environ.get("PF_ROWS", "2"))
HERE = os.path.dirname(os.path.abspath(__file__))
PROTOTYPE = {"rmsnorm": ("rms_pipelined.c", "rms_pipelined"), "layernorm": ("ln_pipelined.c", "ln_pipelined")}
op = sys.argv[1]
c = chosen(op)
assert len(c.f.kernels) == 1 and c.k.launch.dims[1] % 64 == 0 and c.k.launch.dims[1] < 4096
file, name = PROTOTYPE[op]
built = be.build(f"#define PF_ROWS {PF_ROWS}\n#define {name} {c.k.name}\n" + open(os.path.join(HERE, file)).read())
assert built.ok, built.log[-3000:]
pair_in_rounds(c, {"pipelined": program(c.f, {c.k.name: be.Kernel(c.k, built.library)}),
                   f"chosen {c.name}": program(c.f, {c.k.name: be.Kernel(c.k, c.library)})}, ROUNDS)
