"""exp and sigmoid (the judge's one-op probe kernels, 1000 floats in [-30, 30]) rendered with 16
lanes and streaming stores from the first byte, with libmvec's functions and with ours, run on an
output at each of the 16 float offsets of a 64-byte line: how many results differ in their bits
from those at offset 0 (streaming splits the loop at the output's first cache line, so an element
meets the scalar head, the SIMD chunks or the tail according to the address). The same setup as
tests/test_vmath.py::test_streamed_own_math_gives_the_same_bits_at_every_address.

    python docs/experiments/2026-12-04d-cpu/address_bits.py
"""
import numpy as np

from autoperfect.backends import cpu
from autoperfect.backends.cfamily import Schedule
from autoperfect.judge import probe_kernel
from autoperfect.ops import Op

n = 1000
x = np.random.default_rng(20261204).uniform(-30, 30, n).astype(np.float32)
for op in (Op.EXP, Op.SIGMOID):
    for name, s in (("libmvec", Schedule("m", vector_math=True, lanes=16, stream=1)),
                    ("ours", Schedule("o", own_math=True, lanes=16, stream=1))):
        k = probe_kernel(op, "float32", n)
        kernel = cpu.Kernel(k, cpu.build(cpu.render(k, s)).library, "ctypes")
        outs = []
        for offset in range(16):
            out = np.zeros(n + 16, np.float32)[offset:offset + n]
            kernel.run_numpy([x, out], k.launch)
            outs.append(out.copy())
        differ = sum(int(np.sum(o.view(np.uint32) != outs[0].view(np.uint32))) for o in outs[1:])
        print(f"{op.value} {name}: {differ} of {15 * n} results differ from offset 0's")
