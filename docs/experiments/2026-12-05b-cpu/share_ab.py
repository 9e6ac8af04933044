"""With pool.patch applied (`git apply docs/experiments/2026-12-05b-cpu/pool.patch`, then
`python -m autoperfect.native build`): the native op with its kernel's shares on our own threads
(native/pool.h) against the same op
running the kernel's OpenMP entry on MLX's stream thread (its share entry hidden from the
extension), in single-call rounds beside MLX eager, torch.compile and the streaming copy of the op's
bytes, as dispatch_ab.py's. OP's chosen variant (results/OP/cpu/bench.json) rendered by the current
renderer. Run from a pipeline clone's root after `snakemake --cores 4 all`, with PYTHONPATH at the
checkout to measure, under the benchmark's warm condition:
`ROUNDS=41 python docs/experiments/2026-12-05b-cpu/share_ab.py rmsnorm`. STEADY=1: bursts over input
sets beyond the caches instead, as the benchmark's steady state."""
import os
import sys

import numpy as np

from autoperfect import bench, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import program
from autoperfect.spec import seed_for

import harness  # this folder's

op = sys.argv[1]
spec, be, f, k, chosen = harness.chosen(op)
schedule = next(s for s in be.schedules_for(k) if s.name == chosen)
lib = be.build(be.render(k, schedule)).library
steady = os.environ.get("STEADY") == "1"
count = C.steady_set_count(sum(C.ideal_traffic(f)[:1]), roofline.cache_bytes()) if steady else 1
sets, calls = harness.neighbours(spec, f, count)
pooled = be.Kernel(k, lib, "native")
openmp = be.Kernel(k, lib, "native")
openmp.part_address = 0  # the extension then runs the kernel's own entry, its OpenMP team
assert pooled.part_address, "the rendering has no share entry"
outs = {}
for name, kern in (("native_pool", pooled), ("native_omp", openmp)):
    prog = program(f, {k.name: kern})
    calls[name] = lambda s, prog=prog: C.evaluate(prog, s.arrays)
    outs[name] = [np.array(o) for o in C.mlx_values(calls[name](sets[0]))]
assert all(np.array_equal(a.view(np.uint8), b.view(np.uint8)) for a, b in zip(outs["native_pool"], outs["native_omp"]))
print(op, chosen, f"{count} input set(s)", flush=True)
contenders = C.over(calls, sets)
read, written = C.ideal_traffic(f)
streams = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), read + written, count, C.mlx_ones)
contenders["copy_nt"] = streams["copy_nt"][0]
burst = count * -(-C.STEADY_MIN_CALLS // count) if steady else 1
samples = bench.time_interleaved(contenders, max(3, count), int(os.environ.get("ROUNDS", "41")),
                                 seed_for(op, "bench-order"), burst)
copy = np.array(samples["copy_nt"])
for name, v in samples.items():
    r = copy / np.array(v)
    print(f"{name:14s} median {np.median(v) * 1e3:7.3f} ms  min {min(v) * 1e3:7.3f}  copy_nt/this "
          f"{np.median(r):.3f} [{np.percentile(r, 25):.3f}, {np.percentile(r, 75):.3f}]", flush=True)
s = bench.speedup(samples["native_omp"], samples["native_pool"], seed_for(op, "share-ab"))
print(f"pool over omp: {s['median']:.3f}x [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]", flush=True)
