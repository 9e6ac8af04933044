"""The experiments' cold start: before each timed call of bench.time_interleaved's rounds, an untimed
read of SWEEP_CACHES (default 2) times the last-level cache, so the call finds its inputs in memory
and no other call's dirty lines to write back. `install(kernels)` patches bench.time_burst; `read(kernels)`
runs one sweep."""
import os

from autoperfect import bench, roofline

_buffer = None


def read(kernels) -> None:
    global _buffer
    if _buffer is None:
        _buffer = roofline.paged_ones(int(float(os.environ.get("SWEEP_CACHES", "2")) * roofline.cache_bytes()) // 4, "base")
    kernels.read(_buffer.ctypes.data, _buffer.size)


def install(kernels) -> None:
    timed = bench.time_burst

    def swept(call, burst):
        read(kernels)
        return timed(call, burst)
    bench.time_burst = swept
