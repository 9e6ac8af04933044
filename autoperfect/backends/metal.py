"""The `metal` backend: KernelIR -> the body of an `mx.fast.metal_kernel` (Apple GPUs).

The same SIMT structure as the CUDA backend (cfamily.SimtRenderer) with Metal's spellings: thread
positions MLX passes when the source names them, `threadgroup` arrays and barriers, `simd_sum` and
SIMD shuffles for reductions, Metal's precise math functions. MLX makes the template constants
(sizes, strides) template parameters of the kernel, so one source serves every shape.

Metal kernels run only on Apple machines. Elsewhere `build` checks a source without Metal's
compiler, which no Linux machine has: the header and body must compile as C++17 (`c++
-fsyntax-only`) against `SHIM_TYPES` and `SHIM_SIMD`, declarations of every Metal name they use,
inside the kernel function MLX would write. That catches what a renderer gets wrong (names, types,
syntax), not what only Metal's compiler knows (address spaces, Metal's own rules).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from .. import run
from ..kernel_ir import KernelIR
from ..ops import Op
from .cfamily import BINARY, UNARY, GpuSchedule, SimtRenderer
from .cpu import Build, default_cache_dir
from .cuda import ELEMENTWISE, TIMING, check_templates, kernel_name  # TIMING: a GPU's, as CUDA's
from .cuda import Kernel as CudaKernel

NAME = "metal"
FLAGS = ("-std=c++17", "-fsyntax-only", "-Wno-unknown-pragmas")
SIMD = 32  # SIMD-group width of every Apple GPU

# C spellings -> Metal's (precise:: for the approximated functions, whatever the math mode); Metal's
# division is not correctly rounded by default, so exact ops divide with precise::divide
FUNCTIONS = {"fabsf": "metal::fabs", "sqrtf": "metal::precise::sqrt", "expf": "metal::precise::exp",
             "logf": "metal::precise::log", "tanhf": "metal::precise::tanh", "sinf": "metal::precise::sin",
             "cosf": "metal::precise::cos", "powf": "metal::precise::pow", "floorf": "metal::floor",
             "ceilf": "metal::ceil", "expm1f": "ap_expm1", "log1pf": "ap_log1p", "erff": "ap_erf"}
DIVIDE = {Op.DIV: "metal::precise::divide({0}, {1})", Op.RECIPROCAL: "metal::precise::divide(1.0f, {0})",
          Op.RSQRT: "metal::precise::divide(1.0f, metal::precise::sqrt({0}))",
          Op.SIGMOID: "({0} >= 0.0f ? metal::precise::divide(1.0f, 1.0f + metal::precise::exp(-{0})) "
                      ": metal::precise::divide(metal::precise::exp({0}), 1.0f + metal::precise::exp({0})))"}


def respell(table: dict) -> dict:
    out = {}
    for op, text in table.items():
        for c, metal in FUNCTIONS.items():
            text = text.replace(c + "(", metal + "(")
        out[op] = DIVIDE.get(op, text)
    return out


PRELUDE = """\
// Auto-Perfect's helpers: every name starts with ap_ or Ap, so none meets MLX's own
#pragma METAL fp contract(off)

template <typename T, int W>
struct ApVec {
  T v[W];
};

inline float ap_from(float x) { return x; }
inline float ap_from(float16_t x) { return static_cast<float>(x); }
inline float ap_from(bfloat16_t x) { return static_cast<float>(x); }
inline int ap_from(bool x) { return x; }
inline float ap_round_f16(float x) { return static_cast<float>(static_cast<float16_t>(x)); }
inline float ap_round_bf16(float x) { return static_cast<float>(static_cast<bfloat16_t>(x)); }

// Metal has no expm1, log1p or erf: expm1 and log1p cancel exp's and log's rounding error
// (Kahan's and Goldberg's forms); erf is its Taylor series below 1, and 1 - erfc above, erfc by its
// continued fraction (100 terms reach float precision from 1 on).
inline float ap_expm1(float x) {
  const float u = metal::precise::exp(x);
  if (u == 1.0f || x != x) return x;
  if (u == INFINITY) return u;
  const float um1 = u - 1.0f;
  if (um1 == -1.0f) return -1.0f;
  return um1 * metal::precise::divide(x, metal::precise::log(u));  // x / log(u) is near 1
}

inline float ap_log1p(float x) {
  const float u = 1.0f + x;
  if (u == 1.0f || x != x) return x;
  if (u == INFINITY) return u;
  return metal::precise::log(u) * metal::precise::divide(x, u - 1.0f);  // near 1 too
}

inline float ap_erf(float x) {
  const float a = metal::fabs(x);
  if (x != x) return x;
  if (a >= 4.0f) return metal::copysign(1.0f, x);
  float r;
  if (a < 1.0f) {  // 2/sqrt(pi) sum_n (-1)^n a^(2n+1) / (n! (2n+1)), Horner's rule in a^2
    const float c[13] = {1.128379167e+00f, -3.761263890e-01f, 1.128379167e-01f, -2.686617065e-02f,
                         5.223977625e-03f, -8.548327023e-04f, 1.205533298e-04f, -1.492565036e-05f,
                         1.646211437e-06f, -1.636584469e-07f, 1.480719282e-08f, -1.229055530e-09f,
                         9.422759065e-11f};
    float p = c[12];
    for (int n = 11; n >= 0; n--) p = metal::fma(p, a * a, c[n]);
    r = a * p;
  } else {  // erfc(a) = e^(-a^2) / sqrt(pi) / (a + 1/2 / (a + 1 / (a + 3/2 / (a + ...))))
    const float hi = a * a, lo = metal::fma(a, a, -hi);  // a^2 exactly, as hi + lo
    const float e = metal::precise::exp(-hi) * (1.0f - lo);
    float t = a;
    for (int n = 100; n >= 1; n--) t = a + metal::precise::divide(0.5f * n, t);
    r = 1.0f - metal::precise::divide(0.5641895835477563f * e, t);
  }
  return metal::copysign(r, x);
}

// reductions' combining functions; max and min propagate NaN as the reference does
struct ApSum { float operator()(float a, float b) const { return a + b; } };
struct ApProd { float operator()(float a, float b) const { return a * b; } };
struct ApMax { float operator()(float a, float b) const { return (a > b || a != a) ? a : b; } };
struct ApMin { float operator()(float a, float b) const { return (a < b || a != a) ? a : b; } };

// All-reduce over groups of G threads (a power of two; above 32, the whole threadgroup): SIMD
// shuffles (simd_sum for sums), then the SIMD groups' partials through threadgroup memory.
template <int G, typename Op>
inline float ap_combine_groups(float v, threadgroup float* part, uint tid, Op op) {
  if (G > 32) {
    if (tid % 32 == 0) part[tid / 32] = v;
    metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
    v = part[0];
    for (int w = 1; w < G / 32; w++) v = op(v, part[w]);
  } else {
    v = metal::simd_shuffle(v, ushort(tid % 32 / G * G));
  }
  return v;
}

template <int G, typename Op>
inline float ap_reduce(float v, threadgroup float* part, uint tid, Op op) {
  constexpr int L = G < 32 ? G : 32;
  for (int o = L / 2; o > 0; o /= 2) v = op(v, metal::simd_shuffle_xor(v, ushort(o)));
  return ap_combine_groups<G>(v, part, tid, op);
}

template <int G>
inline float ap_reduce(float v, threadgroup float* part, uint tid, ApSum op) {
  if (G >= 32) return ap_combine_groups<G>(metal::simd_sum(v), part, tid, op);
  for (int o = G / 2; o > 0; o /= 2) v = op(v, metal::simd_shuffle_xor(v, ushort(o)));
  return ap_combine_groups<G>(v, part, tid, op);
}
"""


class MetalRenderer(SimtRenderer):
    unary = respell(UNARY)
    binary = respell(BINARY)
    thread = "thread_position_in_threadgroup.x"
    block_index = "threadgroup_position_in_grid.x"
    # Metal runs exactly the grid's threads: the last threadgroup of an elementwise grid may be short
    global_thread, grid_threads = "(int64_t)thread_position_in_grid.x", "(int64_t)threads_per_grid.x"
    shared = "threadgroup"
    unroll = "#pragma unroll({})"
    storage = {"float32": "float", "float16": "float16_t", "bfloat16": "bfloat16_t", "bool": "bool"}
    to_storage = {"float16": "static_cast<float16_t>({})", "bfloat16": "static_cast<bfloat16_t>({})",
                  "bool": "bool({})"}
    # element by element: a small input may arrive in the constant address space, and Apple GPUs
    # coalesce a SIMD group's neighbouring loads
    vector_load = "for (int u = 0; u < W; u++) {name}.v[u] = ({ptr})[u];"
    vector_store = "for (int u = 0; u < W; u++) ({ptr})[u] = {name}.v[u];"
    prelude = PRELUDE

    def literal(self, value: float) -> str:
        """Decimal (hexadecimal float literals are C++17, Metal's language C++14-based)."""
        if value != value or value in (float("inf"), float("-inf")):
            return super().literal(value)
        text = f"{value:.9g}"
        return text + ("f" if any(c in text for c in ".e") else ".0f")


ELEMENTWISE_SCHEDULE = GpuSchedule("v4_t256", block=256, vector=4)


def render(kernel: KernelIR, schedule: GpuSchedule = ELEMENTWISE[0]) -> str:
    return MetalRenderer(kernel, schedule).render()


def schedules_for(kernel: KernelIR) -> tuple[GpuSchedule, ...]:
    """A threadgroup of 256 per row, or a SIMD group per row for short rows; vector width 4."""
    if kernel.kind == "elementwise":
        return (ELEMENTWISE_SCHEDULE,)
    if kernel.launch.dims[-1] > 256:
        return (GpuSchedule("t256_v4", block=256),)
    return (GpuSchedule("s32x8_v4", block=256, group=SIMD),)


# -- the static check ------------------------------------------------------------------------------

# Metal's names as C++ declarations: types, address spaces, math (SHIM_TYPES); SIMD functions and
# barriers as single-thread stand-ins (SHIM_SIMD): this is for compiling, not running
SHIM_TYPES = """\
#include <cmath>
#include <cstdint>
#include <cstring>
#define device
#define constant
#define threadgroup
typedef unsigned int uint;
typedef unsigned short ushort;
typedef _Float16 float16_t;
struct bfloat16_t {  // rounds to nearest even, as Metal's bfloat does
  uint16_t bits;
  bfloat16_t(float f) {
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    bits = f != f ? (uint16_t)((u >> 16) | 0x40) : (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
  operator float() const {
    const uint32_t u = (uint32_t)bits << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};
struct uint3 { uint x, y, z; };
namespace metal {
using std::ceil; using std::copysign; using std::fabs; using std::floor; using std::fma;
namespace precise {
inline float sqrt(float x) { return std::sqrt(x); }
inline float exp(float x) { return std::exp(x); }
inline float log(float x) { return std::log(x); }
inline float tanh(float x) { return std::tanh(x); }
inline float sin(float x) { return std::sin(x); }
inline float cos(float x) { return std::cos(x); }
inline float pow(float x, float y) { return std::pow(x, y); }
inline float divide(float x, float y) { return x / y; }
}  // namespace precise
enum class mem_flags { mem_threadgroup };
}  // namespace metal
"""
SHIM_SIMD = """\
namespace metal {
inline void threadgroup_barrier(mem_flags) {}
inline float simd_shuffle_xor(float v, ushort) { return v; }
inline float simd_shuffle(float v, ushort) { return v; }
inline float simd_sum(float v) { return v; }
}  // namespace metal
"""
ATTRIBUTES = ("thread_position_in_grid", "thread_position_in_threadgroup", "threadgroup_position_in_grid",
              "threads_per_grid")


def probe_schedule(schedule: GpuSchedule) -> GpuSchedule:
    """As cuda.probe_schedule: no knob changes a function's spelling, so one probe serves all."""
    return ELEMENTWISE_SCHEDULE


def translation_unit(source: str) -> str:
    """The kernel function MLX's metal_kernel writes around the body (template parameters for the
    template constants; the thread attributes the body names), instantiated at the check's shape."""
    meta, header, body = MetalRenderer.parse(source)
    params = [f"const device {MetalRenderer.storage[d]}* {n}" for n, d in meta["inputs"]]
    params += [f"device {MetalRenderer.storage[d]}* {n}" for n, d in meta["outputs"]]
    params += [f"uint3 {a}" for a in ATTRIBUTES if a in body]
    values = check_templates(meta["templates"])
    name = "custom_kernel_" + kernel_name(source)
    return (SHIM_TYPES + SHIM_SIMD + header + f"template <{', '.join(f'int {n}' for n, _ in values)}>\n"
            f"void {name}({', '.join(params)}) {{\n{body}}}\n\n"
            f"template void {name}<{', '.join(str(v) for _, v in values)}>({', '.join(params)});\n")


def cxx() -> str | None:
    return shutil.which(os.environ.get("CXX", "c++"))


@lru_cache(maxsize=1)
def compiler() -> str:
    path = cxx()
    if path is None:
        return "c++: not found (sources are not checked here)"
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True).stdout
    return f"{Path(path).name}: {out.splitlines()[0]} (C++ syntax check against a Metal shim; Metal's " \
           "compiler runs on Apple machines only)"


def source_of(library: str) -> Path:
    """The rendered source a build kept: the "library" is that source itself (`.metal`)."""
    return Path(library)


def build(source: str, cache_dir: Path | None = None, timeout_s: float = 120) -> Build:
    """Check `source` (module docstring); the "library" is the checked source, kept by hash."""
    cache_dir = Path(cache_dir or default_cache_dir())
    unit = translation_unit(source)  # the key covers the wrapper too: a new one checks again
    key = hashlib.sha256("\0".join([unit, compiler(), *FLAGS]).encode()).hexdigest()[:24]
    kept = cache_dir / f"{key}.metal"
    path = cxx()
    command = [path or "c++", *FLAGS, str(cache_dir / f"{key}.check.cpp")]
    if kept.exists():
        return Build(True, str(kept), command, "", 0.0, True, key)
    cache_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        src, check = Path(tmp) / kept.name, Path(tmp) / f"{key}.check.cpp"
        src.write_text(source)
        if path is None:
            log, ok = "no C++ compiler: not checked here", True
        else:
            check.write_text(unit)
            try:
                proc = run([path, *FLAGS, str(check)], capture_output=True, text=True, timeout=timeout_s)
                log, ok = (proc.stdout + proc.stderr).replace(tmp, str(cache_dir)), proc.returncode == 0
            except subprocess.TimeoutExpired:
                log, ok = f"the check timed out after {timeout_s} s", False
            if ok:
                shutil.copyfile(check, cache_dir / check.name)
        if ok:
            os.replace(src, kept)
    return Build(ok, str(kept) if ok else None, command, log, time.perf_counter() - start, False, key)


# -- running (Apple machines) ----------------------------------------------------------------------


def available() -> bool:
    import mlx.core as mx

    return bool(mx.metal.is_available())


def missing_device() -> str:
    return "" if available() else "MLX sees no Metal GPU (mx.metal.is_available() is False)"


class Kernel(CudaKernel):
    """As the CUDA backend's kernel, through mx.fast.metal_kernel (its grid also counts threads)."""

    factory = "metal_kernel"
    renderer = MetalRenderer

    @staticmethod
    def missing_device() -> str:
        return missing_device()
