"""Where a single call's time goes between the kernel and what the benchmark's `kernel` contender
pays: OP's chosen kernel (or SOURCE) in interleaved single-call rounds (one input set, as
contenders.measure's single calls), four ways, beside the neighbours NB names (MLX eager and
torch.compile unless set; `none` for none) and the roofline's streaming copy of the op's bytes on
MLX's buffers (with STREAMS=all, the other four stream kernels as well, as in the bench's rounds):
- `native`: the MLX op (autoperfect.native), a fresh output from MLX's allocator each call, the
  kernel on MLX's stream thread (the benchmark's `kernel`);
- `ctypes_fixed`: the same library through ctypes on the main thread, into one output buffer;
- `ctypes_fresh`: likewise into a fresh `np.empty` output each call (glibc's heap, 4 KB pages);
- `ctypes_thread`: `ctypes_fixed` handed to a thread of its own and waited for, as MLX hands its
  stream thread the op (that thread's OpenMP team is a second one, as MLX's is);
- each further source in EXTRA (comma-separated paths), as `ctypes_fixed`.
Each line: median and min per call, and the median over rounds of copy_nt's time over this one's
in the same round, with its quartiles. Run from a pipeline clone's root after `snakemake --cores 4
all`, under the benchmark's warm condition:
`NB=torch_compile,mlx_eager ROUNDS=41 python docs/experiments/2026-12-04f-cpu/dispatch_ab.py layernorm`."""
import json
import os
import queue
import sys
import threading

import numpy as np
import yaml
from numpy._core import multiarray as ma

from autoperfect import backends, bench, interp, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op, seed_for

op = sys.argv[1]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
be = backends.get("cpu")
f = front(spec)
k = [k for k in f.kernels if k][0]
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"][k.name]["chosen"]
source = sys.argv[2] if len(sys.argv) > 2 else f"results/{op}/cpu/candidates/{k.name}.{chosen}.c"
print(op, source)
lib = be.build(open(source).read()).library
sets = C.input_sets(spec, f, 1, C.has_torch())
ref = interp.evaluate(f.traced, list(sets[0].xs), "float64")
torch_fns, _ = C.torch_calls(f, sets[0].tensors, ref, {})
wanted = os.environ.get("NB", "mlx_eager,torch_compile").split(",")
calls = {n: c for n, c in C.user_calls(spec, f, torch_fns, {}, ref, sets[0]).items() if n in wanted}
native = program(f, {k.name: be.Kernel(k, lib, "native")})
calls["native"] = lambda s: C.evaluate(native, s.arrays)
ins = [np.asarray(a) for a in sets[0].arrays]
out = [np.asarray(C.mlx_ones(int(np.prod(sh)))).reshape(sh) for sh in k.launch.out_shapes]
ma._set_madvise_hugepage(False)  # np.empty on 4 KB pages, as MLX's outputs are
for name, path in [("ctypes_fixed", source)] + [(os.path.basename(p), p) for p in filter(None, os.environ.get("EXTRA", "").split(","))]:
    kern = be.Kernel(k, be.build(open(path).read()).library, "ctypes")
    calls[name] = lambda s, call=kern.numpy_call(ins + out, k.launch): call()
kc = be.Kernel(k, lib, "ctypes")
jobs, done = queue.Queue(), queue.Queue()
threading.Thread(target=lambda: [done.put(job()) for job in iter(jobs.get, None)], daemon=True).start()
fixed = calls["ctypes_fixed"]
calls["ctypes_thread"] = lambda s: (jobs.put(lambda: fixed(s)), done.get())
calls["ctypes_fresh"] = lambda s: kc.run_numpy(ins + [np.empty(sh, np.float32) for sh in k.launch.out_shapes], k.launch)
contenders = C.over(calls, sets)
read, written = C.ideal_traffic(f)
streams = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), read + written, 1, C.mlx_ones)
contenders["copy_nt"] = streams["copy_nt"][0]
if os.environ.get("STREAMS") == "all":  # the other four stream kernels too, as the bench's rounds have them
    contenders.update({name: call for name, (call, _) in streams.items() if name != "copy_nt"})
samples = bench.time_interleaved(contenders, 3, int(os.environ.get("ROUNDS", "41")), seed_for(op, "bench-order"))
copy = np.array(samples["copy_nt"])
for name, v in samples.items():
    r = copy / np.array(v)
    print(f"{name:34s} median {np.median(v) * 1e3:7.3f} ms  min {min(v) * 1e3:7.3f}  copy_nt/this "
          f"{np.median(r):.3f} [{np.percentile(r, 25):.3f}, {np.percentile(r, 75):.3f}]")
