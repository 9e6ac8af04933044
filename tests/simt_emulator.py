"""Run a rendered CUDA or Metal kernel body on the CPU: one std::thread per GPU thread, blocks one
after another, barriers and SIMD shuffles through a block-wide std::barrier. Slow, but the very
source the GPU would run (its indexing, passes, register cache, reductions) meets the judge's
poisoned, fenced buffers here, where no GPU is.

Shuffles and barriers are exchanged through the whole block, so every thread of a block must reach
them together: true of the renderer's kernels, which reduce outside every branch.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import re
import subprocess
from pathlib import Path


from autoperfect.backends import cuda, metal
from autoperfect.kernel_ir import KernelIR, Launch

COMMON = """\
#include <algorithm>
#include <barrier>
#include <thread>
#include <vector>
static std::barrier<>* ap_block;  // the running block's threads
static thread_local int ap_tid;   // this thread's index in its block
static float ap_lanes[1024];      // what shuffles exchange
inline float ap_exchange(float v, int from) {
  ap_lanes[ap_tid] = v;
  ap_block->arrive_and_wait();
  const float r = ap_lanes[from];
  ap_block->arrive_and_wait();
  return r;
}
"""

CUDA = """\
#include <cmath>
#include <cstdint>
#include <cstring>
#define __device__
#define __forceinline__ inline
#define __shared__ static
struct ap_dim3 { unsigned x, y, z; };
static thread_local ap_dim3 threadIdx, blockIdx;
static ap_dim3 blockDim, gridDim;
typedef _Float16 __half;
struct __nv_bfloat16 { uint16_t bits; };
inline float __half2float(__half x) { return (float)x; }
inline __half __float2half_rn(float x) { return (__half)x; }
inline float __bfloat162float(__nv_bfloat16 x) {
  const uint32_t u = (uint32_t)x.bits << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return {f != f ? (uint16_t)((u >> 16) | 0x40) : (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};
}
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcs(const T* p) { return *p; }
template <typename T> inline void __stcs(T* p, T v) { *p = v; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline void __syncthreads() { ap_block->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int o) { return ap_exchange(v, ap_tid ^ o); }
inline float __shfl_sync(unsigned, float v, int lane) { return ap_exchange(v, ap_tid / 32 * 32 + lane); }
"""

METAL = """\
namespace metal {
inline void threadgroup_barrier(mem_flags) { ap_block->arrive_and_wait(); }
inline float simd_shuffle_xor(float v, ushort o) { return ap_exchange(v, ap_tid ^ o); }
inline float simd_shuffle(float v, ushort lane) { return ap_exchange(v, ap_tid / 32 * 32 + lane); }
inline float simd_sum(float v) {
  ap_lanes[ap_tid] = v;
  ap_block->arrive_and_wait();
  float s = 0.0f;
  for (int i = 0; i < 32; i++) s += ap_lanes[ap_tid / 32 * 32 + i];
  ap_block->arrive_and_wait();
  return s;
}
}  // namespace metal
"""

CUDA_LAUNCH = """\
extern "C" void ap_launch(void** bufs, long long grid, int block) {
  const long long blocks = (grid + block - 1) / block;  // CUDA: every block is whole
  gridDim = {(unsigned)blocks, 1, 1};
  blockDim = {(unsigned)block, 1, 1};
  for (long long b = 0; b < blocks; b++) {
    std::barrier<> bar(block);
    ap_block = &bar;
    std::vector<std::thread> threads;
    for (int t = 0; t < block; t++)
      threads.emplace_back([=] {
        ap_tid = t;
        threadIdx = {(unsigned)t, 0, 0};
        blockIdx = {(unsigned)b, 0, 0};
        ap_kernel(%s);
      });
    for (auto& t : threads) t.join();
  }
}
"""

METAL_LAUNCH = """\
extern "C" void ap_launch(void** bufs, long long grid, int block) {
  block = (int)std::min<long long>(block, grid);  // Metal runs exactly `grid` threads
  for (long long g = 0; g * block < grid; g++) {
    const int n = (int)std::min<long long>(block, grid - g * block);
    std::barrier<> bar(n);
    ap_block = &bar;
    std::vector<std::thread> threads;
    for (int t = 0; t < n; t++)
      threads.emplace_back([=] {
        ap_tid = t;
        const uint3 thread_position_in_grid = {(uint)(g * block + t), 0, 0};
        const uint3 thread_position_in_threadgroup = {(uint)t, 0, 0};
        const uint3 threadgroup_position_in_grid = {(uint)g, 0, 0};
        const uint3 threads_per_grid = {(uint)grid, 0, 0};
        ap_kernel(%s);
      });
    for (auto& t : threads) t.join();
  }
}
"""

FLAGS = ["-std=c++20", "-O1", "-ffp-contract=off", "-fPIC", "-shared", "-pthread", "-w"]
POISON = "-ftrivial-auto-var-init=pattern"  # GCC 12+, clang 8+: every local starts as 0xFE bytes


@functools.cache
def poisons() -> bool:
    """Whether this host's g++ fills every uninitialized local with a pattern (a float reads about
    -1.7e38), so a kernel that reads one fails the same way on every host, not only where the
    register it got happened to hold garbage (the H200 host's left 0 in an accumulator)."""
    done = subprocess.run(["g++", POISON, "-x", "c++", "-fsyntax-only", "-"], input="int main() {}\n",
                          capture_output=True, text=True)
    return done.returncode == 0


def flags() -> list[str]:
    return FLAGS + ([POISON] if poisons() else [])


class Emulated:
    """A rendered source for `target` ("cuda" or "metal") with the backend Kernel's run_numpy."""

    def __init__(self, kernel: KernelIR, source: str, target: str, workdir: Path):
        self.k, self.source, self.target, self.dir = kernel, source, target, Path(workdir)
        be = cuda if target == "cuda" else metal
        self.renderer = be.Kernel.renderer
        self.meta, self.header, self.body = self.renderer.parse(source)
        self._launches: dict = {}
        self.libraries: dict[Launch, ctypes.CDLL] = {}

    launch_args = cuda.Kernel.launch_args  # the backend's own grid and template arithmetic

    def unit(self, launch: Launch) -> str:
        values = self.launch_args(launch)["template"]
        params = [f"const {self.renderer.storage[d]}* {n}" for n, d in self.meta["inputs"]]
        params += [f"{self.renderer.storage[d]}* {n}" for n, d in self.meta["outputs"]]
        args = [f"({p.rsplit(' ', 1)[0]})bufs[{i}]" for i, p in enumerate(params)]
        constants = "".join(f"  constexpr int {n} = {v};\n" for n, v in values)
        if self.target == "cuda":
            return (COMMON + CUDA + self.header + f"static void ap_kernel({', '.join(params)}) {{\n"
                    + constants + self.body + "}\n" + CUDA_LAUNCH % ", ".join(args))
        attributes = [a for a in metal.ATTRIBUTES if a in self.body]
        body = re.sub(r"^(\s*)threadgroup (float \w+\[)", r"\1static \2", self.body, flags=re.M)
        return (COMMON + metal.SHIM_TYPES + METAL + self.header
                + f"static void ap_kernel({', '.join(params + [f'uint3 {a}' for a in attributes])}) {{\n"
                + constants + body + "}\n" + METAL_LAUNCH % ", ".join(args + attributes))

    def library(self, launch: Launch) -> ctypes.CDLL:
        if launch not in self.libraries:
            text = self.unit(launch)
            key = hashlib.sha256(" ".join(flags()).encode() + text.encode()).hexdigest()[:20]
            lib = self.dir / f"{key}.so"
            if not lib.exists():
                src = self.dir / f"{key}.cpp"
                src.write_text(text)
                done = subprocess.run(["g++", *flags(), "-o", str(lib), str(src)], capture_output=True,
                                      text=True)
                assert done.returncode == 0, done.stderr[-3000:]
            self.libraries[launch] = ctypes.CDLL(str(lib))
        return self.libraries[launch]

    def run_numpy(self, buffers, launch: Launch) -> None:
        args = self.launch_args(launch)
        ptrs = (ctypes.c_void_p * len(buffers))(*[b.ctypes.data for b in buffers])
        grid, block = ctypes.c_longlong(args["grid"][0]), ctypes.c_int(args["threadgroup"][0])
        self.library(launch).ap_launch(ptrs, grid, block)
