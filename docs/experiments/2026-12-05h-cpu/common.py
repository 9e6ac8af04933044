"""What the timing scripts share: variants.py's sources built as the pipeline builds a kernel
(cpu.build: its flags, our vector math linked) and called through ctypes on rows x 1024 floats."""
import ctypes
import os

import numpy as np

from autoperfect.backends import cpu

N = 1024


def load(directory: str, names: list[str]) -> dict:
    """name -> the kernel function of `<kernel>.<name>.c` in `directory`, built."""
    fns = {}
    for name in names:
        (file,) = [f for f in os.listdir(directory) if f.endswith(f".{name}.c")]
        build = cpu.build(open(os.path.join(directory, file)).read())
        assert build.ok, build.log
        fn = getattr(ctypes.CDLL(build.library), file.split(".")[0])
        fn.restype = None
        fns[name] = fn
    return fns


def aligned(rows: int) -> np.ndarray:
    """rows x N floats starting on a 64-byte line (where the piped path runs)."""
    backing = np.empty(rows * N + 16, np.float32)
    at = (-backing.ctypes.data % 64) // 4
    return backing[at:at + rows * N].reshape(rows, N)


def call(fn, x: np.ndarray, out: np.ndarray):
    """fn's call on x and out with its arguments converted once."""
    ptrs = (ctypes.c_void_p * 2)(x.ctypes.data, out.ctypes.data)
    dims, strides = (ctypes.c_int64 * 2)(*x.shape), (ctypes.c_int64 * 2)(N, 1)
    return lambda: fn(ptrs, dims, strides)
