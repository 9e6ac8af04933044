"""This machine's ceilings, measured with kernels the project emits, compiles and calls itself.

A speedup over a slow baseline says little; a kernel is judged by its fraction of what the machine
can do. The ceilings are a stream copy and triad (memory bandwidth) and an FMA loop with enough
independent chains to fill the FMA pipes (compute peak), each an OpenMP loop over all cores built by
the system C compiler with the flags generated CPU kernels get, and called through ctypes.

Bandwidth counts moved bytes only (copy reads one array and writes one, triad reads two and writes
one); write-allocate traffic is not counted, the same way a kernel's `bytes_moved` is counted. Both
are measured with plain and with non-temporal stores (which skip the write-allocate read), and the
ceiling is the best of the four: a kernel that streams its stores is held to what streaming reaches.

A fifth stream kernel only reads (a sum over one array, 4 bytes moved per element). A machine's
read-only bandwidth is not its copy bandwidth: on this VM, reading alone reached 0.70x of the
streaming copy's bytes per second (docs/experiments/2026-12-02-cpu/rd.c), so a reduction that reads
megabytes and writes a few bytes cannot reach the copy's figure however it is written. `mixed_gbps`
is the ceiling for an op's own mix: each byte read costs what the read-only kernel's does, each byte
written what the best copy adds on top of its reads, so all-read traffic is held to the read kernel,
copy-like traffic to the copy, and the rest in between. `bandwidth_gbps` stays the best of the four
copy and triad kernels (the stream bandwidth proper).

The stream arrays are measured on both kinds of page where the system offers transparent huge
pages (`page_kinds`): asked onto them, as numpy asks for its arrays of 4 MB and more, and kept on
4 KB pages, as MLX's and torch's buffers are; the ceiling is the best over both. Each array has a
mapping of its own starting on a 2 MB boundary (`paged_ones`), so source and destination sit at the
same place within a cache line and a page, whatever malloc would have done: on the Intel Xeon VM of
2026-12-05, a streaming copy between huge-page arrays 16-48 bytes apart modulo 64 ran at 15-18
GB/s against 35 at the same offset (4 KB pages: 28-33 against 33;
docs/experiments/2026-12-05e-cpu/alias.py), and numpy's arrays from glibc's heap under the warm
allocator sit 32 bytes apart.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import hashlib
import itertools
import mmap
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import artifacts, bench, run

COMPILER = "gcc"
FLAGS = ["-O3", "-march=native", "-ffp-contract=fast", "-fopenmp", "-shared", "-fPIC"]
DEFAULT_CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "autoperfect", "roofline")
FMA_CHAINS = 16
STORE_KINDS = ("copy", "triad", "copy_nt", "triad_nt")  # the stream bandwidth proper: the best of these
# bytes moved per element: copy reads one array and writes one, triad reads two and writes one,
# read reads one and writes nothing
BYTES_PER_ELEMENT = {"copy": 2 * 4, "triad": 3 * 4, "copy_nt": 2 * 4, "triad_nt": 3 * 4, "read": 4}
READ_CHAINS = 8             # independent vector accumulators per thread: loads, not adds, bind


@dataclass(frozen=True)
class Plan:
    """How hard to measure: array sizes (float32 elements per array; empty: sized from the caches,
    stream_sizes) and repeats."""
    sizes: tuple[int, ...]
    stream_repeats: int
    fma_seconds: float
    fma_repeats: int
    function_elements: int
    function_repeats: int


# Stream arrays sized from the machine's caches (stream_sizes); best of many repeats, because a
# shared VM's bandwidth drifts by tens of percent from one moment to the next and the ceiling is the
# best moment. Function throughput over 2 MB in and 2 MB out: each core's share stays in its L2.
FULL = Plan(sizes=(), stream_repeats=20, fma_seconds=0.05, fma_repeats=7,
            function_elements=1 << 19, function_repeats=20)
QUICK = Plan(sizes=(16 << 20,), stream_repeats=3, fma_seconds=0.01, fma_repeats=2,
             function_elements=1 << 16, function_repeats=3)
BEYOND = 4              # a copy's two arrays together hold at least this many times every cache
MIN_ELEMENTS = 32 << 20  # 128 MB per array at the least, whatever the caches say
SYSFS_CPUS = "/sys/devices/system/cpu"
THP = "/sys/kernel/mm/transparent_hugepage/enabled"
HUGE_PAGE = 2 << 20  # a transparent huge page on x86-64


def cache_bytes(root: str = SYSFS_CPUS, level: str | None = None) -> int | None:
    """Bytes of data cache on the machine, every level (or only `level`, e.g. "2") and every
    instance (each shared cache counted once, by the CPUs that share it): the most a working set can
    hide in. From Linux's sysfs; None where it says nothing. A VM on a large server reports the
    host's last level (480 MB of L3 here, on 2 vCPUs), more than the 128 and 256 MB arrays this
    measured over before."""
    seen: dict[tuple[str, str], int] = {}
    for cpu in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        caches = os.path.join(root, cpu, "cache")
        if not (cpu.startswith("cpu") and cpu[3:].isdigit() and os.path.isdir(caches)):
            continue
        for index in sorted(os.listdir(caches)):
            fields = {}
            for name in ("level", "type", "size", "shared_cpu_list"):
                try:
                    with open(os.path.join(caches, index, name)) as f:
                        fields[name] = f.read().strip()
                except OSError:
                    break
            else:
                if fields["type"] in ("Data", "Unified") and level in (None, fields["level"]):
                    seen[(fields["level"], fields["shared_cpu_list"])] = _size(fields["size"])
    return sum(seen.values()) or None


def _size(text: str) -> int:
    """sysfs's cache size ("491520K", "2048K", "32M") in bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)


def stream_sizes(caches: int | None, available: int | None) -> tuple[int, ...]:
    """Elements per array for the stream kernels: the smallest size puts BEYOND times the caches in a
    copy's two arrays, the other twice that, so the ceiling is memory's and not a cache's; at least
    MIN_ELEMENTS; a triad's three arrays of the larger size kept under 3/8 of the free memory."""
    n = max(MIN_ELEMENTS, -(-BEYOND * (caches or 0) // (2 * 4)))
    n = -(-n // (1 << 20)) << 20  # whole MiB of elements
    sizes = (n, 2 * n)
    if available:
        cap = (available // 8 // 4) >> 20 << 20
        sizes = tuple(sorted({min(s, cap) for s in sizes if cap > 0})) or (MIN_ELEMENTS,)
    return sizes


# ---------------------------------------------------------------------------------------------
# Emitted kernels


def copy_source() -> str:
    return """\
/* Stream copy: reads a, writes b; 2 x 4 bytes moved per element. */
void stream_copy(const float *restrict a, float *restrict b, long n)
{
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        b[i] = a[i];
}
"""


def triad_source() -> str:
    return """\
/* Stream triad: reads b and c, writes a; 3 x 4 bytes moved per element. */
void stream_triad(float *restrict a, const float *restrict b, const float *restrict c, float s, long n)
{
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}
"""


def streaming_source() -> str:
    """Copy and triad with non-temporal stores, as the cpu backend's streaming variants write: a
    plain store reads each destination line before writing it (write-allocate), traffic the ceiling
    doesn't count, so a kernel that streams its stores could beat a plain-store ceiling. Each
    thread streams its share in 32-byte vectors and fences; the head up to the first 64-byte line
    and the tail are plain (whole lines streamed only). Without AVX these are the plain loops."""
    return """\
/* Stream copy and triad with non-temporal stores; bytes counted as in stream_copy / stream_triad. */
#include <stdint.h>
#if defined(__AVX__)
#include <immintrin.h>

/* Elements before p + h starts a 64-byte line: streaming stores then fill whole lines. */
static long head(const float *p, long n)
{
    long h = (long)(((64 - ((uintptr_t)p & 63)) & 63) / 4);
    return h < n ? h : n;
}

void stream_copy_nt(const float *restrict a, float *restrict b, long n)
{
    const long h = head(b, n), e = h + (n - h) / 16 * 16;
    for (long i = 0; i < h; i++)
        b[i] = a[i];
    #pragma omp parallel
    {
        #pragma omp for schedule(static)
        for (long i = h; i < e; i += 16) {  /* one line an iteration: no line split between threads */
            _mm256_stream_ps(b + i, _mm256_loadu_ps(a + i));
            _mm256_stream_ps(b + i + 8, _mm256_loadu_ps(a + i + 8));
        }
        _mm_sfence();
    }
    for (long i = e; i < n; i++)
        b[i] = a[i];
}

void stream_triad_nt(float *restrict a, const float *restrict b, const float *restrict c, float s, long n)
{
    const long h = head(a, n), e = h + (n - h) / 16 * 16;
    const __m256 vs = _mm256_set1_ps(s);
    for (long i = 0; i < h; i++)
        a[i] = b[i] + s * c[i];
    #pragma omp parallel
    {
        #pragma omp for schedule(static)
        for (long i = h; i < e; i += 16)
            for (long q = i; q < i + 16; q += 8)
                _mm256_stream_ps(a + q, _mm256_add_ps(_mm256_loadu_ps(b + q), _mm256_mul_ps(vs, _mm256_loadu_ps(c + q))));
        _mm_sfence();
    }
    for (long i = e; i < n; i++)
        a[i] = b[i] + s * c[i];
}
#else
void stream_copy_nt(const float *restrict a, float *restrict b, long n)
{
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        b[i] = a[i];
}

void stream_triad_nt(float *restrict a, const float *restrict b, const float *restrict c, float s, long n)
{
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}
#endif
"""


# The widest float vector the target has, as the read and FMA kernels declare it.
VECTOR_TYPE = """\
#if defined(__AVX512F__)
#define VECTOR_BYTES 64
#elif defined(__AVX__)
#define VECTOR_BYTES 32
#else
#define VECTOR_BYTES 16
#endif
#define LANES (VECTOR_BYTES / 4)
typedef float vec __attribute__((vector_size(VECTOR_BYTES)));
"""


def read_source(chains: int = READ_CHAINS) -> str:
    """Stream read: the sum of one array, each thread over its share with `chains` independent
    vector accumulators (unaligned loads, as MLX's buffers are only 8-byte aligned), the tail
    scalar. The sum is returned so the compiler keeps every load."""
    return f"#define CHAINS {chains}\n" + """\
/* Stream read: reads a, writes nothing; 4 bytes moved per element. Returns the sum. */
#include <string.h>
""" + VECTOR_TYPE + """\

double stream_read(const float *restrict a, long n)
{
    const long step = CHAINS * LANES, e = n / step * step;
    double total = 0.0;
    #pragma omp parallel reduction(+:total)
    {
        vec acc[CHAINS];
        for (int c = 0; c < CHAINS; c++)
            acc[c] = (vec){0};
        #pragma omp for schedule(static)
        for (long i = 0; i < e; i += step)
            for (int c = 0; c < CHAINS; c++) {
                vec v;
                memcpy(&v, a + i + c * LANES, sizeof v);  /* an unaligned vector load */
                acc[c] += v;
            }
        for (int c = 0; c < CHAINS; c++)
            for (int l = 0; l < LANES; l++)
                total += acc[c][l];
    }
    for (long i = e; i < n; i++)
        total += a[i];
    return total;
}
"""


def fma_source(chains: int = FMA_CHAINS) -> str:
    """Independent accumulator chains of the widest vector the target has, so the FMA pipes never
    wait on a latency; x and y arrive as arguments so the compiler cannot fold the loop away."""
    return f"#define CHAINS {chains}\n" + """\
#include <omp.h>
""" + VECTOR_TYPE + """\

int fma_lanes(void) { return LANES; }

/* Each thread runs CHAINS x LANES fused multiply-adds per iteration; returns a checksum. */
double fma_peak(long iters, float x, float y, int *threads)
{
    double total = 0.0;
    #pragma omp parallel reduction(+:total)
    {
        vec vx = (vec){0} + x, vy = (vec){0} + y, acc[CHAINS];
        for (int c = 0; c < CHAINS; c++)
            acc[c] = vy * (float)(c + 1);
        for (long it = 0; it < iters; it++)
            for (int c = 0; c < CHAINS; c++)
                acc[c] = acc[c] * vx + vy;
        for (int c = 0; c < CHAINS; c++)
            for (int l = 0; l < LANES; l++)
                total += acc[c][l];
        #pragma omp single
        *threads = omp_get_num_threads();
    }
    return total;
}
"""


# ---------------------------------------------------------------------------------------------
# Building


@functools.lru_cache(maxsize=None)
def compiler_version() -> str:
    out = subprocess.run([COMPILER, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].strip()


def build(source: str, cache_dir: str) -> str:
    """Compile `source` to a shared library once; later calls find it by content.

    The key covers the compiler and the CPU as well as source and flags: `-march=native` code built
    on one machine may not run on another that shares the home directory.
    """
    material = "\0".join([source, *FLAGS, compiler_version(), bench.machine()["cpu"]])
    stem = os.path.join(cache_dir, hashlib.sha256(material.encode()).hexdigest()[:24])
    library = stem + ".so"
    if not os.path.exists(library):
        artifacts.write_text(stem + ".c", source)
        with bench.atomic_output(library) as temporary:
            _compile(stem + ".c", temporary)
    return library


def _compile(c_path: str, out_path: str) -> None:
    command = [COMPILER, *FLAGS, c_path, "-o", out_path]
    done = run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")


@dataclass(frozen=True)
class Kernels:
    """The emitted kernels, loaded and typed for ctypes."""
    copy: Callable[..., None]
    triad: Callable[..., None]
    copy_nt: Callable[..., None]
    triad_nt: Callable[..., None]
    read: Callable[..., float]
    fma: Callable[..., float]
    lanes: int


def load_kernels(cache_dir: str) -> Kernels:
    streaming = ctypes.CDLL(build(streaming_source(), cache_dir))
    copy, copy_nt = ctypes.CDLL(build(copy_source(), cache_dir)).stream_copy, streaming.stream_copy_nt
    triad, triad_nt = ctypes.CDLL(build(triad_source(), cache_dir)).stream_triad, streaming.stream_triad_nt
    for f in (copy, copy_nt):
        f.argtypes, f.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long], None
    for f in (triad, triad_nt):
        f.argtypes, f.restype = [ctypes.c_void_p] * 3 + [ctypes.c_float, ctypes.c_long], None
    read = ctypes.CDLL(build(read_source(), cache_dir)).stream_read
    read.argtypes, read.restype = [ctypes.c_void_p, ctypes.c_long], ctypes.c_double
    fma_lib = ctypes.CDLL(build(fma_source(), cache_dir))
    fma = fma_lib.fma_peak
    fma.argtypes = [ctypes.c_long, ctypes.c_float, ctypes.c_float, ctypes.POINTER(ctypes.c_int)]
    fma.restype = ctypes.c_double
    return Kernels(copy=copy, triad=triad, copy_nt=copy_nt, triad_nt=triad_nt, read=read, fma=fma,
                   lanes=fma_lib.fma_lanes())


# ---------------------------------------------------------------------------------------------
# Measuring


def _best_time(call, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def page_kinds(thp: str = THP) -> tuple[str, ...]:
    """The kinds of page the stream arrays are measured on: "huge" (transparent huge pages asked for,
    MADV_HUGEPAGE) and "base" (refused, MADV_NOHUGEPAGE: 4 KB pages) where the kernel offers
    transparent huge pages (`thp` names a mode other than never) and Python can ask; elsewhere
    ("default") whatever the system gives an anonymous mapping."""
    try:
        with open(thp) as f:
            offered = "[never]" not in f.read()
    except OSError:
        offered = False
    return ("huge", "base") if offered and hasattr(mmap, "MADV_HUGEPAGE") else ("default",)


def paged_ones(n: int, pages: str = "default") -> np.ndarray:
    """`n` float32 ones in an anonymous mapping of their own starting on a huge page's boundary, asked
    onto transparent huge pages ("huge") or kept off them ("base") before the first touch, their
    pages faulted by the fill. The array keeps its mapping alive; the mapping goes with it."""
    mapping = mmap.mmap(-1, 4 * n + HUGE_PAGE, flags=mmap.MAP_PRIVATE)  # anonymous (not shared: shmem pages differ)
    if pages != "default":
        mapping.madvise(mmap.MADV_HUGEPAGE if pages == "huge" else mmap.MADV_NOHUGEPAGE)
    start = np.frombuffer(mapping, dtype=np.uint8, count=1).ctypes.data
    ones = np.frombuffer(mapping, dtype=np.float32, count=n, offset=-start % HUGE_PAGE)
    ones.fill(1.0)
    return ones


def huge_share(a: np.ndarray, smaps: str = "/proc/self/smaps") -> float | None:
    """The share of `a`'s bytes on transparent huge pages (its mapping's AnonHugePages in `smaps`),
    or None where that can't be read."""
    return huge_shares([a], smaps)[0]


def huge_shares(arrays, smaps: str = "/proc/self/smaps") -> list[float | None]:
    """huge_share of each of `arrays`, from one read of `smaps`."""
    try:
        with open(smaps) as f:
            lines = f.read().splitlines()
    except OSError:
        return [None] * len(arrays)
    shares: list[float | None] = [None] * len(arrays)
    inside: list[int] = []
    for line in lines:
        head = line.split(maxsplit=1)[0] if line.strip() else ""
        if "-" in head and not head.endswith(":"):
            low, high = (int(x, 16) for x in head.split("-"))
            inside = [i for i, a in enumerate(arrays) if low <= a.ctypes.data < high]
        elif inside and head == "AnonHugePages:":
            for i in inside:
                shares[i] = min(1.0, int(line.split()[1]) * 1024 / arrays[i].nbytes)
    return shares


def measure_stream(kernels: Kernels, n: int, repeats: int, pages: str = "default") -> dict:
    """Best copy and triad bandwidth at `n` elements per array on `pages` (paged_ones), with plain and
    with streaming stores, and the read-only kernel's over one of those arrays, the five alternating;
    `huge_pages`: the share of the arrays' bytes on huge pages."""
    arrays = tuple(paged_ones(n, pages) for _ in range(3))  # filled: pages already faulted
    shares = huge_shares(arrays)
    calls = {name: _stream_call(kernels, name, *arrays[:per // 4]) for name, per in BYTES_PER_ELEMENT.items()}
    samples = bench.time_interleaved(calls, warmup=1, repeats=repeats, seed=n)
    return {"elements": n, "pages": pages,
            "huge_pages": None if None in shares else sum(shares) / len(shares),
            **{f"{name}_gbps": BYTES_PER_ELEMENT[name] * n / min(times) / 1e9 for name, times in samples.items()},
            # the typical moment beside the best: on a shared VM the two differ by up to 1.7x
            "median_gbps": {f"{name}_gbps": BYTES_PER_ELEMENT[name] * n / float(np.median(times)) / 1e9
                            for name, times in samples.items()}}


def measure_streams(kernels: Kernels, sizes, repeats: int) -> dict:
    """The stream kernels at each of `sizes` (elements per array) on each of the page kinds
    (measure_stream, page_kinds): the best of each kernel over them, the stream bandwidth (the best
    copy or triad, `bandwidth_gbps`) and the kind of page it was reached on (`pages`), the same at
    the median of the samples, and each size's and kind's figures (`by_size`)."""
    by_size = [measure_stream(kernels, n, repeats, pages) for n in sizes for pages in page_kinds()]
    best = {f"{name}_gbps": max(s[f"{name}_gbps"] for s in by_size) for name in BYTES_PER_ELEMENT}
    return {
        **best,
        "bandwidth_gbps": stream_gbps(best),
        "pages": max(by_size, key=stream_gbps)["pages"],
        # the stream bandwidth at the median of each kernel's samples (best size): what a call at
        # a typical moment gets, where bandwidth_gbps is the best moment's
        "median_bandwidth_gbps": max(stream_gbps(s["median_gbps"]) for s in by_size),
        "by_size": by_size,
    }


def stream_calls(kernels: Kernels, bytes_moved: int, spans: int = 1,
                 ones: Callable[[int], np.ndarray] | None = None) -> dict[str, tuple[Callable[[], None], int]]:
    """The five stream kernels sized to move `bytes_moved` (copy over bytes/8 elements, triad over
    bytes/12, read over bytes/4), each as (call, bytes it moves): timed among an op's contenders, in
    the same rounds, they are the ceiling in the op's own cache state (what the neighbours leave in
    the caches, dirty lines included), which a stream measured alone over arrays beyond the caches
    is not. With `spans` above 1 each kernel's arrays hold that many such slices and its calls take
    them in turn, as a steady burst takes its input sets (contenders.steady). `ones(n)` makes each
    array (n float32 ones, its pages faulted): numpy's by default, which numpy puts on huge pages;
    the benchmark passes MLX's buffers, the memory its kernels read and write."""
    ones = ones or (lambda n: np.full(n, 1.0, dtype=np.float32))
    calls, arrays = {}, {}
    for name, per in BYTES_PER_ELEMENT.items():
        n = max(1, bytes_moved // per)
        if per not in arrays:  # a kernel and its streaming twin share their arrays, as in measure_stream
            arrays[per] = tuple(ones(n * spans) for _ in range(per // 4))
        call = cycling([_stream_call(kernels, name, *(a[k * n:(k + 1) * n] for a in arrays[per]))
                        for k in range(spans)])
        call.buffers = arrays[per]  # kept alive with the call
        calls[name] = (call, per * n)
    return calls


def cycling(calls: list[Callable[[], object]]) -> Callable[[], object]:
    """One callable that makes the next of `calls` each time it is called, round and round."""
    turn = itertools.cycle(calls)
    return lambda: next(turn)()


def _stream_call(kernels: Kernels, name: str, a: np.ndarray, *rest: np.ndarray) -> Callable[[], None]:
    """One stream kernel over whole arrays: copy a into b, triad a = b + 3c, or read a."""
    kernel, n = getattr(kernels, name), a.size
    if name == "read":
        return lambda: kernel(a.ctypes.data, n)
    if name.startswith("copy"):
        return lambda: kernel(a.ctypes.data, rest[0].ctypes.data, n)
    return lambda: kernel(a.ctypes.data, rest[0].ctypes.data, rest[1].ctypes.data, 3.0, n)


def stream_gbps(figures: dict) -> float:
    """The stream bandwidth from stream figures in GB/s (`copy_gbps`, `triad_nt_gbps`, ...): the
    best of the copy and triad kernels there (the read kernel is not one of them)."""
    return max(figures[f"{k}_gbps"] for k in STORE_KINDS if f"{k}_gbps" in figures)


def mixed_gbps(read_bytes: int, written_bytes: int, figures: dict) -> float:
    """The bandwidth ceiling for traffic that reads `read_bytes` and writes `written_bytes`, from
    stream figures in GB/s (`read_gbps`, and `copy_gbps` / `copy_nt_gbps`): a byte read costs
    1 / read_gbps, a byte written what the best copy spends beyond its reads (2 / copy - 1 / read,
    never below zero), so read-only traffic gets the read kernel's figure and a copy's mix the
    copy's. Without a read figure, the best of the stream kernels (the plain stream bandwidth)."""
    copy = max(figures.get(k) or 0.0 for k in ("copy_gbps", "copy_nt_gbps"))
    read = figures.get("read_gbps")
    if not read or not copy:
        return stream_gbps(figures)
    per_read = 1.0 / read
    per_write = max(0.0, 2.0 / copy - per_read)
    return (read_bytes + written_bytes) / (read_bytes * per_read + written_bytes * per_write)


def least_seconds(bytes_moved: int, gbps: float, floor_s: float) -> float:
    """The least a call moving `bytes_moved` can take: its bytes at a ceiling of `gbps` after a fixed
    cost of `floor_s` (a native op's: MLX's dispatch, contenders.dispatch_floor)."""
    return floor_s + bytes_moved / (gbps * 1e9)


def measure_fma(kernels: Kernels, seconds: float, repeats: int) -> dict:
    """FMA peak in GFLOP/s (an FMA counts 2), from runs of at least `seconds` each."""
    threads = ctypes.c_int(0)

    def timed(iters: int, times: int = 1) -> float:
        return _best_time(lambda: kernels.fma(iters, 0.999999, 1e-6, ctypes.byref(threads)), times)

    iters = 1 << 12  # doubled until one run takes `seconds`: short runs time the scheduler, not the FMAs
    while timed(iters) < seconds:
        iters *= 2
    best = timed(iters, repeats)
    flops = 2 * FMA_CHAINS * kernels.lanes * threads.value * iters
    return {"fma_gflops": flops / best / 1e9, "threads": threads.value, "fma_vector_lanes": kernels.lanes}


def measure_functions(elements: int, repeats: int) -> dict:
    """Per approximated function, its throughput ceiling: the one-op kernel the cpu backend renders
    for it (the judge's ULP probe kernel, `y = f(x)`), under each of its schedules, over all cores
    and an array small enough to stay in L2, so the figure is the function's arithmetic and not
    memory. The best schedule's rate is kept, in evaluations per second. Arguments are drawn from
    the judge's probe domain clipped to [-8, 8]: the ordinary arguments of a fused op, not the slow
    paths of huge ones."""
    from .backends import cpu
    from .judge import PROBE_DOMAIN, probe_kernel
    from .ops import ULP_BOUND
    from .spec import seed_for

    rates = {}
    for op in sorted(ULP_BOUND, key=lambda o: o.value):
        k = probe_kernel(op, "float32", elements)
        lo, hi = max(PROBE_DOMAIN[op][0], -8.0), min(PROBE_DOMAIN[op][1], 8.0)
        rng = np.random.default_rng(seed_for("roofline", op.value))
        buffers = [rng.uniform(lo, hi, elements).astype(np.float32) for _ in k.inputs]
        buffers.append(np.zeros(elements, dtype=np.float32))
        best = {}
        for schedule in cpu.schedules_for(k):
            build = cpu.build(cpu.render(k, schedule))
            if not build.ok:
                raise RuntimeError(f"the {op.value} throughput kernel did not build: {build.log[-500:]}")
            kernel = cpu.Kernel(k, build.library, "ctypes")
            seconds = _best_time(lambda: kernel.run_numpy(buffers, k.launch), repeats)
            best[schedule.name] = elements / seconds
        name = max(best, key=best.get)
        rates[op.value] = {"per_second": best[name], "schedule": name}
    return {"elements": elements, "rates": rates}


def measure(quick: bool = False, cache_dir: str | None = None) -> dict:
    """The roofline record: best stream bandwidth over the sizes and kinds of store (the ceiling is
    the best of them), the FMA peak and each function's rate, with provenance."""
    plan = QUICK if quick else FULL
    caches = cache_bytes()
    sizes = plan.sizes or stream_sizes(caches, bench.available_bytes())
    kernels = load_kernels(cache_dir or DEFAULT_CACHE_DIR)
    # streams measured while the host took more than bench.STEAL_RETAKE of the CPU time are measured again
    streams, stolen, retaken = bench.least_stolen(lambda: measure_streams(kernels, sizes, plan.stream_repeats))
    return {
        **streams,
        "host_steal": stolen,  # of the CPU time while the kept streams ran, the host's (bench.stolen_during)
        **({"host_steal_retaken": retaken} if retaken else {}),  # ... and while those set aside ran
        **measure_fma(kernels, plan.fma_seconds, plan.fma_repeats),
        "functions": measure_functions(plan.function_elements, plan.function_repeats),
        "sizes": list(sizes),
        # whether the smallest size's copy holds BEYOND times every cache (false: memory was short)
        "caches_bytes": caches,
        "beyond_caches": caches is not None and 2 * 4 * min(sizes) >= BEYOND * caches,
        "compiler": compiler_version(),
        "flags": list(FLAGS),
        "machine": bench.machine(),
        "measured_at": bench.measured_at(),
    }


def fraction(bytes_moved: int, seconds: float, roofline: dict, ceiling: str = "bandwidth_gbps") -> float:
    """Achieved bandwidth over the measured stream bandwidth (or over another of the roofline's
    ceilings, in GB/s)."""
    return (bytes_moved / seconds) / (roofline[ceiling] * 1e9)


def bound(bytes_moved: int, work: dict, roofline: dict, read_bytes: int | None = None) -> dict:
    """The roofline's time for an op: its ideal traffic at the bandwidth its mix of reads and writes
    can reach (`mixed_gbps`; the stream bandwidth where `read_bytes` is not given), or its work at
    the measured ceilings (each approximated function's evaluations at that function's rate, other
    arithmetic at the FMA peak), whichever takes longer: that one is what binds."""
    gbps = (roofline["bandwidth_gbps"] if read_bytes is None
            else mixed_gbps(read_bytes, bytes_moved - read_bytes, roofline))
    memory_s = bytes_moved / (gbps * 1e9)
    rates = roofline.get("functions", {}).get("rates", {})
    by_function = {f: n / rates[f]["per_second"] for f, n in sorted(work["functions"].items()) if f in rates}
    unmeasured = sorted(f for f in work["functions"] if f not in rates)
    compute_s = sum(by_function.values()) + work["flops"] / (roofline["fma_gflops"] * 1e9)
    limit = max(by_function, key=by_function.get) if by_function else "fma"
    return {"memory_s": memory_s, "memory_gbps": gbps, "compute_s": compute_s, "seconds": max(memory_s, compute_s),
            "bound": "memory" if memory_s >= compute_s else f"compute ({limit})",
            "functions_s": by_function, **({"unmeasured": unmeasured} if unmeasured else {})}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Measure this machine's roofline; write it as JSON.")
    parser.add_argument("out", help="path of the JSON file to write")
    parser.add_argument("--quick", action="store_true", help="one smaller size, fewer repeats")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE_DIR, help="where compiled kernels are kept")
    args = parser.parse_args(argv)
    result = measure(quick=args.quick, cache_dir=args.cache_dir)
    artifacts.write_json(args.out, result)
    print(f"copy {result['copy_gbps']:.1f} GB/s, triad {result['triad_gbps']:.1f} GB/s, streaming copy "
          f"{result['copy_nt_gbps']:.1f} GB/s, streaming triad {result['triad_nt_gbps']:.1f} GB/s, read-only "
          f"{result['read_gbps']:.1f} GB/s, "
          f"FMA {result['fma_gflops']:.0f} GFLOP/s on {result['threads']} threads -> {args.out}")


if __name__ == "__main__":
    main()
