"""The `cuda` backend: KernelIR -> the body of an `mx.fast.cuda_kernel` (MLX's CUDA build).

MLX writes the `__global__` signature (inputs `const T*`, outputs `T*`), compiles the source with
NVRTC at the first call of each (name, template constants) pair and caches the result by name, on
disk too: so a kernel's MLX name carries a hash of its source. Sizes and strides are template
constants, so one source serves every shape (each shape compiles once per machine). Where nvcc is
at hand on a GPU machine, each shape's instance is instead compiled by nvcc from the same unit
(`instance`), several side by side, kept on disk for every process, and run through our own MLX
primitive where it is built (autoperfect.native.CUDA: a third of MLX's host cost a call at small
shapes), else `mx.fast.precompiled_cuda_kernel`: MLX's NVRTC compiles one instance at a time in
each process.

Without a GPU (CI, a laptop) every candidate is still compiled by `nvcc` for sm_90 inside the
translation unit MLX would build (`translation_unit`), so a source that would not compile is caught
here; running needs MLX to see a CUDA GPU (`available`). The judge's path (`Kernel.run_numpy`) copies
its poisoned, fenced numpy buffers to the device and back, so the same judge decides on a GPU.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache, partial
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import dtypes, native, run
from ..kernel_ir import KernelIR, Launch
from ..ops import Op
from ..program import CANARY, POISON, SLACK, IntegrityError
from .cfamily import BINARY, UNARY, GpuSchedule, SimtRenderer
from .cpu import Build, default_cache_dir

NAME = "cuda"
ARCH = "sm_90"
# the check only: MLX compiles with NVRTC (C++17 by default, FMA contraction on: exact ops use the
# _rn intrinsics, which are never contracted; IEEE division and square root are NVRTC's default)
FLAGS = (f"-arch={ARCH}", "-std=c++17", "-cubin", "-Xptxas=-v")
GRID_CAP = 1 << 30     # threads; an elementwise kernel loops over what more would have done
CHECK_EXTENT = 1024    # every axis of the shape the nvcc check instantiates the templates at
# How the runtime times a kernel's variants and its plan against MLX's own ops (runtime.timing):
# each sample ten calls queued and waited for once, the device's time per call as a model's step
# queues it. One call per wait pays the wait for the device (0.07-0.12 ms a call on the H200), which
# varies by more than the variants differ; gpu_bench chooses the same way.
TIMING = {"rounds": 15, "pipeline": 10}

ELEMENTWISE = (GpuSchedule("v4_b256", block=256), GpuSchedule("v4u2_b256", block=256, unroll=2),
               GpuSchedule("v4u4_b256", block=256, unroll=4))
# Streaming cache hints (GpuSchedule.stream: evict-first loads of data read once, streaming stores)
# were slower or no faster on every op on the H200 (2026-12-01, docs/gpu-h200.md): not offered.
STREAMING = (GpuSchedule("v4_b256_cs", block=256, stream=True),
             GpuSchedule("v4u4_b256_cs", block=256, unroll=4, stream=True))


def row_schedules(n: int) -> tuple[GpuSchedule, ...]:
    """Threads per row by row length (the spec's): long rows get a block each, short ones a warp.
    (On the H200, 2026-12-01, 32768x4096 float32 rmsnorm, ten calls queued per wait: 128 and 256
    threads per row were within 1% of each other and of mx.fast.rms_norm's 0.284 ms, 1024 were 8%
    slower; evict-first loads of the row were 3-4% slower.)
    Long rows also get two warps, or one, with the whole row in registers (`cache` vectors per
    thread, up to 16 or 32: a row of 4096 floats), so the row is read once and reduced by one
    barrier between two warps, or by shuffles alone; these take many registers, so their blocks
    are small (more of them fit on a multiprocessor)."""
    if n >= 2048:
        out = [GpuSchedule("g128_v4", block=128), GpuSchedule("g256_v4", block=256),
               GpuSchedule("g512_v4", block=512)]
        two, one = -(-n // (64 * 4)), -(-n // (32 * 4))
        if two <= 16:
            out.append(GpuSchedule(f"g64_v4c{two}", block=64, cache=two))
        if one <= 32:
            out.append(GpuSchedule(f"w32x2_v4c{one}", block=64, group=32, cache=one))
        return tuple(out)
    if n > 256:
        return (GpuSchedule("w32x8_v4", block=256, group=32), GpuSchedule("g128_v4", block=128),
                GpuSchedule("g256_v4", block=256))
    return (GpuSchedule("w32x8_v4", block=256, group=32),
            GpuSchedule("w8x32_v1", block=256, group=8, vector=1))


PRELUDE = """\
// Auto-Perfect's device helpers: every name starts with ap_ or Ap, so none meets MLX's own
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif

template <typename T, int W>
struct alignas(sizeof(T) * W) ApVec {
  T v[W];
};

template <int W, typename T>
__device__ __forceinline__ bool ap_aligned(const T* p) {
  return reinterpret_cast<unsigned long long>(p) % (sizeof(T) * W) == 0;
}

// Vector loads take the read-only path (__ldg), so the compiler may issue them ahead of stores: no
// kernel of ours reads what it writes. S (streaming): the last read of data no one reads again, with
// the evict-first hint (__ldcs), so it does not push out of L2 what is read again (a row's weights).
template <int W, bool S = false, typename T>
__device__ __forceinline__ ApVec<T, W> ap_load(const T* p, bool aligned) {
  ApVec<T, W> x;
  if (aligned && sizeof(x) % 16 == 0) {
#pragma unroll
    for (int c = 0; c < (int)(sizeof(x) / 16); c++)
      reinterpret_cast<uint4*>(&x)[c] = S ? __ldcs(reinterpret_cast<const uint4*>(p) + c)
                                          : __ldg(reinterpret_cast<const uint4*>(p) + c);
  } else if (aligned && sizeof(x) == 8) {
    *reinterpret_cast<uint2*>(&x) = S ? __ldcs(reinterpret_cast<const uint2*>(p))
                                      : __ldg(reinterpret_cast<const uint2*>(p));
  } else {
#pragma unroll
    for (int u = 0; u < W; u++) x.v[u] = p[u];
  }
  return x;
}

// S (streaming): the evict-first hint (__stcs) for outputs this kernel never reads back
template <int W, bool S = false, typename T>
__device__ __forceinline__ void ap_store(T* p, const ApVec<T, W>& x, bool aligned) {
  if (aligned && S && sizeof(x) % 16 == 0) {
#pragma unroll
    for (int c = 0; c < (int)(sizeof(x) / 16); c++)
      __stcs(reinterpret_cast<uint4*>(p) + c, reinterpret_cast<const uint4*>(&x)[c]);
    return;
  }
  if (aligned) {
    *reinterpret_cast<ApVec<T, W>*>(p) = x;
    return;
  }
#pragma unroll
  for (int u = 0; u < W; u++) p[u] = x.v[u];
}

__device__ __forceinline__ float ap_from(float x) { return x; }
__device__ __forceinline__ float ap_from(__half x) { return __half2float(x); }
__device__ __forceinline__ float ap_from(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ int ap_from(bool x) { return x; }
__device__ __forceinline__ float ap_round_f16(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ float ap_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

// reductions' combining functions; max and min propagate NaN as the reference does
struct ApSum { __device__ float operator()(float a, float b) const { return __fadd_rn(a, b); } };
struct ApProd { __device__ float operator()(float a, float b) const { return __fmul_rn(a, b); } };
struct ApMax { __device__ float operator()(float a, float b) const { return (a > b || a != a) ? a : b; } };
struct ApMin { __device__ float operator()(float a, float b) const { return (a < b || a != a) ? a : b; } };

// All-reduce over groups of G threads (a power of two; above 32, the whole block): shuffles within
// a warp, then the warps' partials through shared memory. Every thread of a group gets one value.
template <int G, typename Op>
__device__ __forceinline__ float ap_reduce(float v, float* part, int tid, Op op) {
  constexpr int L = G < 32 ? G : 32;
#pragma unroll
  for (int o = L / 2; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (G > 32) {
    if (tid % 32 == 0) part[tid / 32] = v;
    __syncthreads();
    v = part[0];
#pragma unroll
    for (int w = 1; w < G / 32; w++) v = op(v, part[w]);
  } else {
    v = __shfl_sync(0xffffffffu, v, tid % 32 / L * L);
  }
  return v;
}
"""

# MLX's default header is "mlx/backend/cuda/device/utils.cuh" (embedded in libmlx, not shipped) and
# <cooperative_groups.h>; utils.cuh brings these CUDA headers, all a kernel of ours may rely on.
MLX_HEADER = """\
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/std/array>
#include <cuda/std/limits>
#include <cuda/std/tuple>

#include <cooperative_groups.h>

"""


class CudaRenderer(SimtRenderer):
    # _rn intrinsics: NVRTC contracts a*b+c into an FMA, which the step-by-step reference does not
    unary = {**UNARY, Op.SQUARE: "__fmul_rn({0}, {0})"}
    binary = {**BINARY, Op.ADD: "__fadd_rn({0}, {1})", Op.SUB: "__fsub_rn({0}, {1})",
              Op.MUL: "__fmul_rn({0}, {1})"}
    thread, block_index = "threadIdx.x", "blockIdx.x"
    global_thread = "(int64_t)blockIdx.x * blockDim.x + threadIdx.x"
    grid_threads = "(int64_t)gridDim.x * blockDim.x"
    shared = "__shared__"
    storage = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16", "bool": "bool"}
    to_storage = {"float16": "__float2half_rn({})", "bfloat16": "__float2bfloat16_rn({})",
                  "bool": "(bool)({})"}
    vector_load = "{name} = ap_load<W>({ptr}, {aligned});"
    vector_store = "ap_store<W>({ptr}, {name}, {aligned});"
    vector_load_stream = "{name} = ap_load<W, {stream}>({ptr}, {aligned});"
    vector_store_stream = "ap_store<W, true>({ptr}, {name}, {aligned});"
    aligned_check = "ap_aligned<W>({})"
    barrier = "__syncthreads();"  # the prelude's (ap_reduce); autoperfect.mutants plants a race there
    prelude = PRELUDE


def render(kernel: KernelIR, schedule: GpuSchedule = ELEMENTWISE[0]) -> str:
    return CudaRenderer(kernel, schedule).render()


def schedules_for(kernel: KernelIR) -> tuple[GpuSchedule, ...]:
    """A few block shapes and vector widths; the judge checks each, the benchmark keeps the fastest."""
    return ELEMENTWISE if kernel.kind == "elementwise" else row_schedules(kernel.launch.dims[-1])


def probe_schedule(schedule: GpuSchedule) -> GpuSchedule:
    """What the judge's function probes render with for a candidate of `schedule` (judge.probe).
    No GPU knob changes how a function is spelled (they set the launch, vector width, unrolling,
    row caching), so one elementwise probe stands for every variant (tests/test_cuda.py checks the
    spelling under every schedule)."""
    return ELEMENTWISE[0]


def kernel_name(source: str) -> str:
    """MLX caches compiled kernels by name (CUDA: on disk too; Metal before 0.32.1 silently ran the
    old kernel of a reused name): a name per source."""
    return "ap_" + hashlib.sha256(source.encode()).hexdigest()[:20]


# -- the compile check -----------------------------------------------------------------------------


def check_templates(templates: Sequence[str]) -> list[tuple[str, int]]:
    """Template constants of a representative shape: every axis CHECK_EXTENT long, row-major."""
    rank = sum(t.startswith("D") for t in templates)
    values = []
    for t in templates:
        if t.startswith("D"):
            values.append((t, CHECK_EXTENT))
        else:
            d = int(t.split("_")[1])
            values.append((t, CHECK_EXTENT ** (rank - 1 - d)))
    return values


def translation_unit(source: str, renderer=CudaRenderer) -> str:
    """What MLX's cuda_kernel hands NVRTC for this source (its build_kernel), at the check's shape."""
    meta = renderer.parse(source)[0]
    return _unit(source, check_templates(meta["templates"]), f"custom_kernel_{kernel_name(source)}", renderer)


def instance_unit(source: str, values: Sequence[tuple[str, int]], entry: str) -> str:
    """The same unit at one launch's template constants, its kernel an unmangled `entry`: what
    `instance` compiles for `mx.fast.precompiled_cuda_kernel`."""
    return _unit(source, values, entry, CudaRenderer, 'extern "C" ')


def _unit(source: str, values, entry: str, renderer, linkage: str = "") -> str:
    meta, header, body = renderer.parse(source)
    params = [f"    const {renderer.storage[dtype]}* {name}" for name, dtype in meta["inputs"]]
    params += [f"    {renderer.storage[dtype]}* {name}" for name, dtype in meta["outputs"]]
    constants = "".join(f"  constexpr int {n} = {v};\n" for n, v in values)
    return (MLX_HEADER + header + "namespace mlx::core::cu {\n\nnamespace cg = cooperative_groups;\n\n"
            f"{linkage}__global__ void {entry}(\n" + ",\n".join(params) + ") {\n"
            + constants + "\n" + body + "\n}\n\n} // namespace mlx::core::cu\n")


def nvcc() -> str | None:
    return shutil.which(os.environ.get("NVCC", "nvcc"))


@lru_cache(maxsize=1)
def compiler() -> str:
    path = nvcc()
    if path is None:
        return "nvcc: not found (sources are not compile-checked here)"
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True).stdout
    return f"nvcc: {out.strip().splitlines()[-2]} (check only; MLX compiles with NVRTC)"


def source_of(library: str) -> Path:
    """The rendered source a build kept: the "library" is that source itself (`.cu`)."""
    return Path(library)


def build(source: str, cache_dir: Path | None = None, timeout_s: float = 120) -> Build:
    """Compile-check `source` with nvcc for sm_90; the "library" is the checked source, kept by hash.
    Without nvcc the source is kept unchecked (ok, with a log saying so): MLX compiles it anyway."""
    cache_dir = Path(cache_dir or default_cache_dir())
    unit = translation_unit(source)  # the key covers the wrapper too: a new one checks again
    key = hashlib.sha256("\0".join([unit, compiler(), *FLAGS]).encode()).hexdigest()[:24]
    kept = cache_dir / f"{key}.cu"
    path = nvcc()
    command = [path or "nvcc", *FLAGS, "-o", str(cache_dir / f"{key}.cubin"),
               str(cache_dir / f"{key}.check.cu")]
    if kept.exists():
        return Build(True, str(kept), command, "", 0.0, True, key)
    cache_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        src, check = Path(tmp) / f"{key}.cu", Path(tmp) / f"{key}.check.cu"
        src.write_text(source)
        if path is None:
            log, ok = "nvcc not found: not compile-checked here; MLX compiles it at its first call", True
        else:
            check.write_text(unit)
            cmd = [path, *FLAGS, "-o", str(Path(tmp) / f"{key}.cubin"), str(check)]
            try:
                proc = run(cmd, capture_output=True, text=True, timeout=timeout_s)
                log, ok = (proc.stdout + proc.stderr).replace(tmp, str(cache_dir)), proc.returncode == 0
            except subprocess.TimeoutExpired:
                log, ok = f"nvcc timed out after {timeout_s} s", False
            if ok:
                shutil.copyfile(check, cache_dir / check.name)
        if ok:
            os.replace(src, kept)  # atomic: a reader never sees a half-written source
    return Build(ok, str(kept) if ok else None, command, log, time.perf_counter() - start, False, key)


# -- instances: one launch's constants, compiled by nvcc ---------------------------------------------


@lru_cache(maxsize=1)
def device_arch() -> str | None:
    """The GPU's `sm_XY`, as nvcc's -arch takes it: from nvidia-smi's compute capability, on a
    machine where MLX sees a CUDA GPU (None elsewhere, or where it can't be read)."""
    if not available():
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    major, _, minor = out.partition(".")
    return f"sm_{major}{minor}" if major.isdigit() and minor.isdigit() else None


def instance(source: str, values: Sequence[tuple[str, int]], cache_dir: Path | None = None,
             timeout_s: float = 300) -> tuple[str, bytes]:
    """The kernel of `source` at template constants `values`, compiled by nvcc for this GPU into a
    cubin that `mx.fast.precompiled_cuda_kernel` loads: (its entry name, the cubin). MLX's own path
    compiles each (source, constants) pair with NVRTC in the process that first runs it, one after
    another (2-3.7 s each on the H200's host, docs/gpu-h200.md run 10), and again in every process.
    Here the cubins are built side by side (`prepare`) and kept on disk by the unit's hash, so the
    judge's children and the caller load what one of them built. Raises RuntimeError when nvcc fails."""
    arch = device_arch() or ARCH
    entry = "ap_" + hashlib.sha256("\0".join([source, repr(list(values))]).encode()).hexdigest()[:24]
    unit = instance_unit(source, values, entry)
    flags = [f"-arch={arch}", *FLAGS[1:3]]
    key = hashlib.sha256("\0".join([unit, compiler(), *flags]).encode()).hexdigest()[:24]
    where = Path(cache_dir or default_cache_dir()) / "instances"
    cubin = where / f"{key}.cubin"
    if not cubin.exists():
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=where) as tmp:
            (Path(tmp) / "unit.cu").write_text(unit)
            try:
                proc = run([nvcc() or "nvcc", *flags, "-o", "unit.cubin", "unit.cu"], cwd=tmp,
                           capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"nvcc timed out after {timeout_s} s on an instance of {entry}") from None
            if proc.returncode != 0:
                log = proc.stdout + proc.stderr
                errors = [line.strip() for line in log.splitlines() if "error" in line][:5]
                raise RuntimeError(f"nvcc failed on an instance of {entry}: {'; '.join(errors) or log[-500:]}")
            os.replace(Path(tmp) / "unit.cubin", cubin)  # atomic: another process reads all or nothing
    return entry, cubin.read_bytes()


def prepare(kernel: KernelIR, libraries: Sequence[str], launches: Sequence[Launch]) -> None:
    """Build the instances the given libraries will run at the given launches, side by side (nvcc
    is a process of its own), before the processes that run them ask for them one at a time.
    Nothing to do where kernels go through MLX's NVRTC (no nvcc, or an unknown GPU)."""
    if not Kernel.precompiles():
        return

    def build(job) -> None:
        try:
            instance(*job)
        except RuntimeError:  # left to the process that runs it, where it is that variant's verdict
            pass

    sources = [Path(lib).read_text() for lib in libraries]
    jobs = [(src, Kernel.template_values(CudaRenderer.parse(src)[0], launch)) for src in sources for launch in launches]
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        list(pool.map(build, jobs))


# -- running ---------------------------------------------------------------------------------------


def available() -> bool:
    """Whether MLX sees a CUDA GPU (MLX's CUDA build on a machine with one)."""
    import mlx.core as mx

    return bool(mx.cuda.is_available())


def missing_device() -> str:
    return "" if available() else "MLX sees no CUDA GPU (mx.cuda.is_available() is False)"


def _bits(a):
    """An MLX array's storage as unsigned integers of its item size (bit for bit), flat, on its device."""
    import mlx.core as mx

    return a.view({4: mx.uint32, 2: mx.uint16, 1: mx.uint8}[a.itemsize]).reshape(-1)


# Bytes of SLACK (all ones: NaN in every float type) on the device before and after every input the
# judge gives a GPU kernel, inside one array: a kernel reading an element beside its input (a vector
# load over a row's tail) computes with NaN, where MLX's pool held whatever lay there, and a write
# there is seen. A multiple of every alignment a kernel's loads assume.
BESIDE = 256


def _device_beside(buffer: np.ndarray, dtype: str):
    """(a numpy buffer of the judge, bfloat16 held as uint16, as an MLX array of `dtype`; the device
    array of bytes it lies in, BESIDE bytes of SLACK before and after it; a copy of that array, which
    no kernel sees, to compare it with after the runs)."""
    import mlx.core as mx

    data = np.ascontiguousarray(buffer).reshape(-1).view(np.uint8)
    whole = np.full(data.size + 2 * BESIDE, SLACK, np.uint8)
    whole[BESIDE:BESIDE + data.size] = data
    around = mx.array(whole)
    x = around[BESIDE:BESIDE + data.size].view(dtypes.to_mlx(dtype)).reshape(buffer.shape)
    return x, around, mx.array(whole)


class Kernel:
    """A rendered source made an MLX custom kernel: call it with MLX arrays and a launch (lazy, on
    the GPU stream); `run_numpy` is the judge's guarded path. Where nvcc is at hand each launch's
    instance is a cubin of ours (`instance`), run by our own primitive (autoperfect.native.CUDA)
    where it is built, else (or with `dispatch="mlx"`, e.g. to compare the two) by
    `mx.fast.precompiled_cuda_kernel`; elsewhere MLX compiles the source with NVRTC
    (`mx.fast.cuda_kernel`). The unit is the same either way."""

    factory = "cuda_kernel"
    renderer = CudaRenderer

    def __init__(self, kernel: KernelIR, library: str, dispatch: str = "auto"):
        import mlx.core as mx

        if dispatch not in ("auto", "mlx"):
            raise ValueError(f"dispatch must be auto or mlx, not {dispatch!r}")
        missing = self.missing_device()
        if missing:
            raise RuntimeError(f"can't run {kernel.name} on {self.factory}: {missing}")
        self.k = kernel
        self.source = Path(library).read_text()
        self.meta, header, body = self.renderer.parse(self.source)
        self.fn = None
        if not self.precompiles():
            make = getattr(mx.fast, self.factory)
            self.fn = make(name=kernel_name(self.source), input_names=[n for n, _ in self.meta["inputs"]],
                           output_names=[n for n, _ in self.meta["outputs"]], source=body, header=header)
        self.in_dtypes = [dtypes.to_mlx(a.dtype) for a in kernel.inputs]
        self.out_dtypes = [dtypes.to_mlx(a.dtype) for a in kernel.outputs]
        self._launches: dict[Launch, dict] = {}
        self._instances: dict[Launch, tuple[str, bytes]] = {}
        self.ext = native.load(ext=native.CUDA) if self.fn is None and dispatch == "auto" else None
        self._launchers: dict[Launch, object] = {}  # per launch: its bound call (bind)

    @classmethod
    def precompiles(cls) -> bool:
        """Whether launches run as our nvcc cubins: CUDA, with nvcc and a GPU whose arch MLX names."""
        return cls.factory == "cuda_kernel" and nvcc() is not None and device_arch() is not None

    @staticmethod
    def missing_device() -> str:
        return missing_device()

    @property
    def dispatch(self) -> str:
        """How a call runs (the runtime's trace says it): a lazy MLX op, ours (`native`: nvcc's
        instances launched by autoperfect.native.CUDA's primitive) or `mx.fast.<factory>`."""
        if self.fn is not None:
            return f"mx.fast.{self.factory}"
        return "native" if self.ext is not None else "mx.fast.precompiled_cuda_kernel"

    @staticmethod
    def template_values(meta: dict, launch: Launch) -> list[tuple[str, int]]:
        values = {f"D{d}": n for d, n in enumerate(launch.dims)}
        values.update({f"S{a}_{d}": s for a, st in enumerate(launch.strides) for d, s in enumerate(st)})
        return [(t, int(values[t])) for t in meta["templates"]]

    def launch_args(self, launch: Launch) -> dict:
        """Template constants, grid (counted in threads) and block for one launch, made once."""
        args = self._launches.get(launch)
        if args is None:
            meta = self.meta
            rows = math.prod(launch.dims[:-1])
            if meta["kind"] == "elementwise":
                per_thread = meta["vector"] * meta["unroll"]
                threads = min(max(1, -(-math.prod(launch.dims) // per_thread)), GRID_CAP)
            else:
                threads = -(-rows // meta["rows_per_block"]) * meta["block"]
            args = self._launches[launch] = {"template": Kernel.template_values(meta, launch),
                                             "grid": (threads, 1, 1), "threadgroup": (meta["block"], 1, 1),
                                             "output_shapes": [list(s) for s in launch.out_shapes]}
        return args

    def _instance(self, launch: Launch) -> tuple[str, bytes]:
        """(entry, cubin) of the launch's nvcc instance, built or read once per Kernel."""
        if launch not in self._instances:
            self._instances[launch] = instance(self.source, self.launch_args(launch)["template"])
        return self._instances[launch]

    def __call__(self, inputs: Sequence, launch: Launch | None = None, out_shapes=None, init=None) -> list:
        """The outputs, lazily; `out_shapes` and `init` (a fill value) are the judge's."""
        launch = launch or self.k.launch
        if self.ext is not None:
            return self._native_call(inputs, launch, out_shapes, init)
        native.check_inputs(self.k.name, inputs, launch.in_shapes, self.in_dtypes)
        args = self.launch_args(launch)
        if out_shapes is not None:
            args = {**args, "output_shapes": [list(s) for s in out_shapes], "init_value": init}
        if self.fn is not None:
            return self.fn(inputs=list(inputs), output_dtypes=self.out_dtypes, **args)
        import mlx.core as mx

        entry, cubin = self._instance(launch)
        return mx.fast.precompiled_cuda_kernel(
            name=entry, compiled_source=cubin, inputs=list(inputs), output_shapes=args["output_shapes"],
            output_dtypes=self.out_dtypes, scalars=[], grid=args["grid"], threadgroup=args["threadgroup"],
            init_value=args.get("init_value"), ensure_row_contiguous=True)

    def _native_call(self, inputs: Sequence, launch: Launch, out_shapes, init) -> list:
        """The call through our primitive; `init` becomes each output's fill, in that output's dtype."""
        if out_shapes is None:
            return self.bind(launch)(list(inputs))
        import mlx.core as mx

        handle, grid, block, entry = self._loaded(launch)
        fills = [_bits(mx.full((1,), init, dtype)).item() for dtype in self.out_dtypes]
        return self.ext.launcher(handle, launch.in_shapes, self.in_dtypes, grid, block,
                                 [list(s) for s in out_shapes],
                                 self.out_dtypes, entry, fills)(list(inputs))

    def _loaded(self, launch: Launch) -> tuple:
        """(handle, grid, block, entry) of the launch's instance, loaded once by our primitive: its grid
        counted in blocks as MLX's custom kernel counts it (threads rounded up to whole blocks)."""
        args = self.launch_args(launch)
        entry, cubin = self._instance(launch)
        block = list(args["threadgroup"])
        grid = [-(-g // b) for g, b in zip(args["grid"], block)]
        return self.ext.load(cubin, entry), grid, block, entry

    def bind(self, launch: Launch):
        """The call at one launch, made once: a callable of the input list (our primitive's Launcher,
        whose calls pass only the inputs, where it is built; else this kernel's call at that launch)."""
        bound = self._launchers.get(launch)
        if bound is None:
            if self.ext is None:
                bound = partial(self.__call__, launch=launch)
            else:
                handle, grid, block, entry = self._loaded(launch)
                bound = self.ext.launcher(handle, launch.in_shapes, self.in_dtypes, grid, block,
                                          self.launch_args(launch)["output_shapes"], self.out_dtypes, entry)
            self._launchers[launch] = bound
        return bound

    def run_numpy(self, buffers: Sequence[np.ndarray], launch: Launch) -> None:
        """Run on the judge's numpy buffers (inputs, then poisoned outputs). The outputs are made on
        the device with CANARY elements of fence after each, filled with 0, then 1, in two runs: an
        element both runs left at its fill stays poisoned here, and a changed fence or input, or
        two runs that disagree, is an IntegrityError. The checks run on the device, bit for bit
        against the fills and a copy of the inputs, so only the first run's outputs come back (at
        32768x4096 on the H200, copying every run's outputs and the inputs back and comparing them
        here took 41 of the gate's 115 s: docs/h200/run11)."""
        import mlx.core as mx

        n_in = len(self.k.inputs)
        lent = [_device_beside(b, a.dtype) for b, a in zip(buffers[:n_in], self.k.inputs)]
        ins = [x for x, _, _ in lent]
        sizes = [math.prod(s) for s in launch.out_shapes]
        runs = []
        for fill in (0.0, 1.0):
            outs = self(ins, launch, [(n + CANARY,) for n in sizes], fill)
            mx.eval(outs)
            runs.append([(_bits(o), _bits(mx.full((1,), fill, o.dtype))) for o in outs])
        # each input's bytes, then those before and after it, against the copy no kernel saw
        parts = (slice(BESIDE, -BESIDE), slice(None, BESIDE), slice(-BESIDE, None))
        touched = [[mx.any(whole[p] != kept[p]) for p in parts] for _, whole, kept in lent]
        checks = []
        for n, (a, fa), (b, fb) in zip(sizes, *runs):
            fence = (a[n:] != fa) | (b[n:] != fb)
            unwritten = (a[:n] == fa) & (b[:n] == fb)
            checks.append((fence, unwritten, mx.any(fence), mx.any(unwritten),
                           mx.any((a[:n] != b[:n]) & ~unwritten)))
        mx.eval(touched, [c[2:] for c in checks])
        for arg, x, (inside, *sides) in zip(self.k.inputs, ins, touched):
            if inside.item():
                raise IntegrityError(f"kernel {self.k.name} wrote into its input {arg.name}")
            for side, changed in zip(("before", "after"), sides):
                if changed.item():
                    raise IntegrityError(f"kernel {self.k.name} wrote out of bounds {side} input {arg.name} "
                                         f"(shape {list(x.shape)}, within {BESIDE // x.itemsize} elements)")
        for arg, n, buf, (a, _), (fence, unwritten, beyond, some_unwritten, differs) in zip(
                self.k.outputs, sizes, buffers[n_in:], runs[0], checks):
            if beyond.item():
                off = mx.argmax(fence.astype(mx.uint8)).item()
                raise IntegrityError(f"kernel {self.k.name} wrote out of bounds after output {arg.name} "
                                     f"(shape {list(buf.shape)}, {off + 1} elements away)")
            if differs.item():
                raise IntegrityError(f"kernel {self.k.name}: output {arg.name} differs between two runs on "
                                     "the same inputs (nondeterminism or a race)")
            dst = buf.reshape(-1).view(POISON[arg.dtype][0])
            got = np.array(a[:n])
            if some_unwritten.item():  # those stay poisoned, for the judge to name
                written = ~np.array(unwritten)
                dst[written] = got[written]
            else:
                dst[:] = got
