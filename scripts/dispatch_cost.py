"""What one call of a small op costs on MLX's default device, layer by layer: MLX's own op, the
backend's raw custom-kernel call (cuda: mx.fast.precompiled_cuda_kernel with its arguments made
once), the kernel bound to its launch (`Kernel.bind`, what a program calls), the loaded kernel
(`Kernel.__call__`: on CUDA through our primitive where it is built, and
the same instance through precompiled_cuda_kernel beside it), the op's program, and autoperfect.jit. Each is timed
two ways in shuffled rounds: the host's time to build a call's graph without evaluating it
(1000 calls, evaluated afterwards; 7 rounds), and ten calls queued and waited for once, per call:

    python scripts/dispatch_cost.py 1x4096 64x4096
"""
import sys
import tempfile

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import backends, bench, contenders
from autoperfect.generate import provider
from autoperfect.pipeline import program
from autoperfect.runtime import front_of
from autoperfect.trace import trace


def softmax(x):
    return mx.softmax(x, axis=-1)


backend = backends.for_default_device()
be = backends.get(backend)
print("backend", backend, "device", mx.default_device(), flush=True)
for size in sys.argv[1:]:
    shape = tuple(int(n) for n in size.split("x"))
    x = mx.random.normal(shape)
    mx.eval(x)
    f = front_of(trace(softmax, [("x", shape, "float32")]))
    (k,) = [k for k in f.kernels if k is not None]
    cand = provider("compiler").generate(k, backend)[0]
    built = be.build(cand.source)
    assert built.ok, built.log
    kern = be.Kernel(k, built.library)
    prog = program(f, {k.name: kern})
    jitted = autoperfect.jit(softmax, cache_dir=tempfile.mkdtemp(), race=False)
    mx.eval(jitted(x), prog(x), kern([x]))
    bound = kern.bind(k.launch)
    calls = {"mlx": lambda: softmax(x), "bound": lambda: bound([x])[0], "kernel": lambda: kern([x])[0],
             "program": lambda: prog(x), "jit": lambda: jitted(x)}
    if backend == "cuda" and kern.fn is None:
        args = kern.launch_args(k.launch)
        entry, cubin = be.instance(kern.source, args["template"])
        raw = dict(name=entry, compiled_source=cubin, output_shapes=args["output_shapes"],
                   output_dtypes=kern.out_dtypes, scalars=[], grid=args["grid"], threadgroup=args["threadgroup"],
                   ensure_row_contiguous=True)
        calls["raw"] = lambda: mx.fast.precompiled_cuda_kernel(inputs=[x], **raw)[0]
        calls["raw_no_contiguity"] = lambda: mx.fast.precompiled_cuda_kernel(
            inputs=[x], **{**raw, "ensure_row_contiguous": False})[0]
        if kern.ext is not None:  # the same instance through MLX's precompiled_cuda_kernel
            via_mlx = be.Kernel(k, built.library, "mlx")
            mx.eval(via_mlx([x]))
            calls["kernel_via_mlx"] = lambda: via_mlx([x])[0]
        be.Kernel.precompiles = classmethod(lambda cls: False)  # MLX's cuda_kernel (NVRTC) instead
        nvrtc = be.Kernel(k, built.library)
        mx.eval(nvrtc([x]))
        calls["nvrtc_kernel"] = lambda: nvrtc([x])[0]
    hosted = {n: [] for n in calls}
    rng = np.random.default_rng(1)
    for _ in range(7):
        for n in rng.permutation(list(calls)):
            hosted[n].append(bench.host_seconds(calls[n]))
    queued = bench.time_interleaved({n: contenders.pipelined(lambda c=c: c(), (), 10) for n, c in calls.items()},
                                    3, 31, 2)
    print(size, "host us a call (graph only):", {n: round(float(np.median(s)) * 1e6, 2) for n, s in hosted.items()})
    print(size, "10 queued, us a call:", {n: round(float(np.median(s)) / 10 * 1e6, 2) for n, s in queued.items()},
          flush=True)
