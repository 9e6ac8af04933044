"""The hand-pipelined prototype (pipelined_ab.py's, with PF_ROWS rows of prefetch, default 2) as the
op's native op, in the bench stage's single-call rounds (contenders.timed_with_streams: every baseline
and the roofline's stream kernels, one input set) beside the chosen kernel's native op (`chosen`),
as aligned_ab.py times its pair; same bits checked. Prints each one's median, GB/s, share of
results/roofline.json's stream bandwidth and of its mix in the rounds, and the paired speedup.

    python docs/experiments/2026-12-05g-cpu/pipelined_rounds.py rmsnorm|layernorm

from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at the checkout measured,
OMP_PLACES=cores OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296.
"""
import json
import os
import sys

import numpy as np

from autoperfect import contenders as C
from autoperfect.pipeline import program

from common import K, be, bench_calls, bench_seed, chosen

ROUNDS = int(os.environ.get("ROUNDS", "31"))
PF_ROWS = int(os.environ.get("PF_ROWS", "2"))
HERE = os.path.dirname(os.path.abspath(__file__))
PROTOTYPE = {"rmsnorm": ("rms_pipelined.c", "rms_pipelined"), "layernorm": ("ln_pipelined.c", "ln_pipelined")}
stream_gbps = json.load(open("results/roofline.json"))["bandwidth_gbps"]
op = sys.argv[1]
c = chosen(op)
f, k = c.f, c.k
assert len(f.kernels) == 1 and k.launch.dims[1] % 64 == 0 and k.launch.dims[1] < 4096
read, written = C.ideal_traffic(f)
seed = bench_seed(c)
sets, calls = bench_calls(c)
file, name = PROTOTYPE[op]
built = be.build(f"#define PF_ROWS {PF_ROWS}\n#define {name} {k.name}\n" + open(os.path.join(HERE, file)).read())
assert built.ok, built.log[-3000:]
ours = {"kernel": program(f, {k.name: be.Kernel(k, built.library)}),
        "chosen": program(f, {k.name: be.Kernel(k, c.library)})}
got = {n: np.asarray(C.evaluate(p, sets[0].arrays)[0]).view(np.uint32) for n, p in ours.items()}
assert np.array_equal(got["kernel"], got["chosen"]), "the prototype gave other bits"
for n, p in ours.items():
    calls[n] = lambda s, p=p: C.evaluate(p, s.arrays)
out = C.timed_with_streams(C.over(calls, sets), K, read, written, 2, ROUNDS, seed)
mix = out["stream_in_rounds"]["mixed_gbps"]
for n, s in (("pipelined", out["kernel"]["median_s"]), (f"chosen {c.name}", out["baselines"]["chosen"]["median_s"])):
    gbps = (read + written) / s / 1e9
    print(f"{op:10s} {n:26s} {s * 1e3:7.3f} ms {gbps:5.1f} GB/s {gbps / stream_gbps:5.0%} of {stream_gbps:.1f}, "
          f"{gbps / mix:5.0%} of its mix in rounds ({mix:.1f})")
sp = out["speedup"]["chosen"]
print(f"{op:10s} pipelined over chosen {sp['median']:.3f}x [{sp['ci95'][0]:.3f}, {sp['ci95'][1]:.3f}]; "
      f"torch_compile {out['baselines']['torch_compile']['median_s'] * 1e3:.3f} ms; steal {out['host_steal']:.1%}")
