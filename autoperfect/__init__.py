"""Auto-Perfect: MLX array code -> fused, verified, benchmarked kernels; `autoperfect.jit` runs them."""

import contextlib
import ctypes
import ctypes.util
import importlib
import os
import subprocess


def __getattr__(name: str):
    # The runtime is imported on first use and by name: the pipeline's stages import this package,
    # and neither their start-up nor their code hash (provenance follows import statements) should
    # depend on it.
    if name == "jit":
        return importlib.import_module(".runtime", __name__).jit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


WARM_ALLOCATOR = "AUTOPERFECT_WARM_ALLOCATOR"  # "1": call set_warm_allocator() when imported
# glibc's mallopt parameters (malloc.h) and the values the benchmarks' warm condition stands for
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 1 << 30        # blocks up to 1 GiB come from the heap, not fresh mmap'd pages
_TRIM_THRESHOLD = 2 ** 31 - 1    # mallopt takes an int: keep up to 2 GiB of freed memory


def set_warm_allocator() -> bool:
    """Make glibc keep freed memory for reuse, for the whole process; True if glibc took it.

    By default glibc returns large freed blocks to the OS, so every fresh large MLX output
    page-faults, which can cost more than the kernel that fills it (8x on a 64 MB output here).
    This is the run-time form of MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_; it costs resident
    memory (freed blocks stay mapped). Opt-in: `AUTOPERFECT_WARM_ALLOCATOR=1` applies it at import.
    It changes every library in the process alike, so benchmarks never set it for one contender."""
    name = ctypes.util.find_library("c")
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None) if name else None  # glibc only
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mmap = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    return bool(mmap) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


BIND_THREADS = "AUTOPERFECT_BIND_THREADS"  # "1": call bind_threads() when imported
# One OpenMP thread per core, each bound to its core. Unbound, Linux now and then runs both threads of
# a kernel's team on one core while the other idles (the team's master is MLX's stream thread, woken
# next to Python's): on 2 cores that made rmsnorm's median 1.1 ms where bound runs took 0.87 ms.
THREAD_BINDING = {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}


def bind_threads() -> bool:
    """Bind OpenMP threads to cores for the whole process (settings the user made are kept); True if
    it can still take effect. OpenMP reads them once, when its runtime loads: after that (a kernel
    already ran, or another library loaded libgomp) this returns False and changes nothing.
    Like the warm allocator it changes every OpenMP user in the process alike (torch's too)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            if "libgomp" in maps.read():
                return False
    except OSError:
        pass
    for key, value in THREAD_BINDING.items():
        os.environ.setdefault(key, value)
    return True


# The CPUs the process may run on, as it started. Bound OpenMP pins the thread that loads libgomp (the
# first kernel's library) to the first core, and a thread or process that thread starts after
# inherits that one core: a LayerNorm backward's compilers and gate, after its forward's kernels had
# loaded, ran on one of two cores, the gate child 13.8-17.8 s where it took 8.3-9.2 s on both
# (docs/experiments/2026-12-07d-cpu/affinity.out). The package starts its children with `run`.
CPUS = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


@contextlib.contextmanager
def unpinned():
    """The calling thread on every CPU of `CPUS` for the block, so that the processes it starts there
    (compilers, the judge's and the benchmarks' children) run on all of them; its own CPUs after.
    Around a child's start only: a kernel's OpenMP team keeps the binding it was given."""
    mine = frozenset(os.sched_getaffinity(0)) if CPUS else CPUS
    if mine == CPUS:
        yield
        return
    try:
        os.sched_setaffinity(0, CPUS)
    except OSError:  # a CPU taken away since (a cgroup's cpuset changed): the block runs as it is
        mine = None
    try:
        yield
    finally:
        if mine is not None:
            os.sched_setaffinity(0, mine)


def run(command, **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run(command, **kwargs)`, the child started on every CPU of `CPUS` (`unpinned`)."""
    with unpinned():
        return subprocess.run(command, **kwargs)


if os.environ.get(WARM_ALLOCATOR) == "1":
    set_warm_allocator()
if os.environ.get(BIND_THREADS) == "1":
    bind_threads()
