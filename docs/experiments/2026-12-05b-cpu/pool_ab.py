"""The native op's handoff without a second OpenMP team, measured before anything is built into the
pipeline: OP's chosen kernel (or SOURCE) with its `omp parallel for` made into a slice of the rows
(KERNEL_part), behind pool.h's C stream thread, three ways (pool.h: `stream_omp` the OpenMP entry
on the stream thread as the native op runs it now, `stream_pool` our own spinning helper,
`stream_prewake` the helper woken by the caller first), beside the real native op, the kernel
through ctypes on the main thread, MLX eager, torch.compile and the streaming copy, in single-call
rounds as dispatch_ab.py's. Run from a pipeline clone's root after `snakemake --cores 4 all`, under
the benchmark's warm condition: `ROUNDS=41 python docs/experiments/2026-12-05b-cpu/pool_ab.py rmsnorm`.
Every way's output is checked against the OpenMP entry's, bit for bit, before timing."""
import ctypes
import os
import re
import sys

import numpy as np

from autoperfect import bench, roofline
from autoperfect import contenders as C
from autoperfect.pipeline import program
from autoperfect.spec import seed_for

import harness  # this folder's

HERE = os.path.dirname(os.path.abspath(__file__))
op = sys.argv[1]
spec, be, f, k, chosen = harness.chosen(op)
source = sys.argv[2] if len(sys.argv) > 2 else f"results/{op}/cpu/candidates/{k.name}.{chosen}.c"
text = open(source).read()
head = f"void {k.name}(void **bufs, const int64_t *dims, const int64_t *strides) {{"
body = text[text.index(head):]
part = body.replace(head, f"void {k.name}_part(void **bufs, const int64_t *dims, const int64_t *strides, "
                          "int64_t ap_part, int64_t ap_parts) {")
part = re.sub(r"  #pragma omp parallel if\(.*\)\n", "", part)
part, n = re.subn(r"  #pragma omp (?:parallel )?for schedule\(static\)(?: if\(.*\))?\n  for \(int64_t (\w+) = 0; \1 < ([^;]+); \1\+\+\) \{",
                  lambda m: f"  for (int64_t {m[1]} = ({m[2]}) * ap_part / ap_parts; {m[1]} < ({m[2]}) * (ap_part + 1) / ap_parts; {m[1]}++) {{",
                  part)
assert n == 1 and "omp parallel" not in part and "omp for" not in part, "not one plain parallel loop"
src = ("#define _GNU_SOURCE\n" + text + "\n" + part + f"\n#define PART_FN {k.name}_part\n#define FULL_FN {k.name}\n"
       f'#include "{HERE}/pool.h"\n')
build = be.build(src)
assert build.ok, build.log
lib = ctypes.CDLL(build.library)
lib.pool_start(int(os.environ.get("HELPER_CPU", "1")))
print(op, source)

sets, calls = harness.neighbours(spec, f, 1)
native = program(f, {k.name: be.Kernel(k, be.build(text).library, "native")})
calls["native"] = lambda s: C.evaluate(native, s.arrays)
import mlx.core as mx
tiny = mx.ones((4,))
mx.eval(tiny)
calls["mlx_tiny"] = lambda s: C.evaluate(mx.abs, [tiny])  # MLX's own cost of a call: graph, handoff, wait
ins = [np.asarray(a) for a in sets[0].arrays]
outs = {m: [np.asarray(C.mlx_ones(int(np.prod(sh)))).reshape(sh) for sh in k.launch.out_shapes] for m in range(4)}
kc = be.Kernel(k, build.library, "ctypes")
flat = kc.flat_strides(k.launch)
dims = (ctypes.c_int64 * len(k.launch.dims))(*k.launch.dims)
strides = (ctypes.c_int64 * len(flat))(*flat)
ptrs = {m: (ctypes.c_void_p * (len(ins) + len(o)))(*[b.ctypes.data for b in ins + o]) for m, o in outs.items()}
ways = {"stream_omp": 0, "stream_pool": 1, "stream_prewake": 2}
for name, mode in ways.items():
    calls[name] = lambda s, mode=mode: lib.pool_call(ptrs[mode], dims, strides, mode)
    calls[name](None)
calls["ctypes_main"] = lambda s, call=kc.numpy_call(ins + outs[3], k.launch): call()
calls["ctypes_main"](None)
for mode in (1, 2, 3):
    for a, b in zip(outs[0], outs[mode]):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"way {mode} differs from the OpenMP entry"
contenders = C.over(calls, sets)
read, written = C.ideal_traffic(f)
streams = roofline.stream_calls(roofline.load_kernels(roofline.DEFAULT_CACHE_DIR), read + written, 1, C.mlx_ones)
contenders["copy_nt"] = streams["copy_nt"][0]
samples = bench.time_interleaved(contenders, 3, int(os.environ.get("ROUNDS", "41")), seed_for(op, "bench-order"))
copy = np.array(samples["copy_nt"])
for name, v in samples.items():
    r = copy / np.array(v)
    print(f"{name:16s} median {np.median(v) * 1e3:7.3f} ms  min {min(v) * 1e3:7.3f}  copy_nt/this "
          f"{np.median(r):.3f} [{np.percentile(r, 25):.3f}, {np.percentile(r, 75):.3f}]", flush=True)
