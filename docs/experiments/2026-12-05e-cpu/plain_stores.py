"""An op's wide variants with streaming stores (as offered: stream=STREAM_FROM) and the same variants
storing plainly (stream=0), each as the bench stage times its chosen kernel: single calls in
interleaved rounds beside every baseline and the roofline's stream kernels (contenders.measure's
rounds, one input set), under the warm condition. Prints each variant's median, its GB/s and its
share of results/roofline.json's stream bandwidth.

    python docs/experiments/2026-12-05e-cpu/plain_stores.py rmsnorm layernorm ...

from a pipeline clone's root after `snakemake --cores 4 all`, PYTHONPATH at that clone,
OMP_PLACES=cores OMP_PROC_BIND=close MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296.
"""
import json
import os
import sys
from dataclasses import replace

import numpy as np
import yaml

from autoperfect import backends, bench, interp, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op, seed_for

ROUNDS = int(os.environ.get("ROUNDS", "21"))
ops = yaml.safe_load(open("config.yaml"))["ops"]
stream_gbps = json.load(open("results/roofline.json"))["bandwidth_gbps"]
be = backends.get("cpu")
K = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
for op in sys.argv[1:]:
    spec = parse_op(op, ops[op])
    f = front(spec)
    read, written = C.ideal_traffic(f)
    seed = seed_for(spec.name, "bench-order")
    sets = C.input_sets(spec, f, 1, C.has_torch())
    ref = interp.evaluate(f.traced, list(sets[0].xs), "float64")
    torch_fns, _ = C.torch_calls(f, sets[0].tensors, ref, {})
    calls = C.user_calls(spec, f, torch_fns, {}, ref, sets[0])
    kernels = [k for k in f.kernels if k is not None]
    assert len(kernels) == 1, op
    k = kernels[0]
    for s in be.schedules_for(k):
        if not s.stream or s.contract or s.prefetch != be.schedules_for(k)[2].prefetch:
            continue
        for name, sched in ((s.name, s), (s.name + "_plain", replace(s, stream=0))):
            built = be.build(be.render(k, sched))
            assert built.ok, built.log
            ours = program(f, {k.name: be.Kernel(k, built.library)})
            calls[name] = lambda st, ours=ours: C.evaluate(ours, st.arrays)
    names = [n for n in calls if n.startswith(("rows", "block", "apmath"))]
    first = names[0]
    timed = C.over(calls, sets)
    timed["kernel"] = timed.pop(first)
    out = C.timed_with_streams(timed, K, read, written, 2, ROUNDS, seed)
    med = {first: out["kernel"]["median_s"], **{n: out["baselines"][n]["median_s"] for n in names[1:]}}
    mix = out["stream_in_rounds"]["mixed_gbps"]
    for n in names:
        gbps = (read + written) / med[n] / 1e9
        print(f"{op:12s} {n:26s} {med[n] * 1e3:7.3f} ms {gbps:6.1f} GB/s {gbps / stream_gbps:5.0%} of "
              f"{stream_gbps:.1f}, {gbps / mix:5.0%} of its mix in rounds ({mix:.1f})")
    print(f"{op:12s} torch_compile {out['baselines']['torch_compile']['median_s'] * 1e3:.3f} ms", flush=True)
