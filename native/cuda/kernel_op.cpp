// One generic MLX primitive that launches any Auto-Perfect CUDA kernel instance.
//
// An instance is a cubin nvcc built from a rendered kernel at one launch's template constants
// (autoperfect.backends.cuda.instance): `extern "C" __global__ void entry(const T* in..., T* out...)`,
// every size baked in. `load` loads a cubin once per process and returns its function's handle;
// `launcher` makes one launch's Launcher (common.h), whose calls make the lazy op. Its evaluation
// does what MLX's own custom-kernel primitive does (outputs from MLX's allocator, a kernel node in
// the stream's CUDA graph), without what that op costs on the host at every call: its Python
// arguments, its primitive carrying the cubin's bytes, and the lookup of the module by name (9-16 us
// a call on the H200, docs/gpu-h200.md run 11).

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda.h>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mlx/allocator.h"
#include "mlx/array.h"
#include "mlx/backend/cuda/device.h"
#include "mlx/backend/cuda/utils.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"

#include "../common.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace mlx::core;

namespace autoperfect {

void check(CUresult status, const std::string& what) {
  if (status != CUDA_SUCCESS) {
    const char* text = nullptr;
    cuGetErrorString(status, &text);
    throw std::runtime_error(what + ": " + (text ? text : "unknown CUDA error"));
  }
}

// Loaded modules live as long as the process, as MLX's own JIT modules do.
std::mutex modules_mutex;
std::unordered_map<std::string, CUfunction> functions;

std::uintptr_t load(const nb::bytes& cubin, const std::string& entry) {
  std::lock_guard<std::mutex> lock(modules_mutex);
  auto found = functions.find(entry);
  if (found != functions.end()) {
    return reinterpret_cast<std::uintptr_t>(found->second);
  }
  cu::device(Device::gpu).make_current();
  // cuModuleLoadData reads the image until its ELF headers say it ends: keep a copy of our own
  std::string image(cubin.c_str(), cubin.size());
  CUmodule module = nullptr;
  check(cuModuleLoadData(&module, image.data()), entry + ": cuModuleLoadData");
  CUfunction fn = nullptr;
  check(cuModuleGetFunction(&fn, module, entry.c_str()), entry + ": cuModuleGetFunction");
  functions.emplace(entry, fn);
  return reinterpret_cast<std::uintptr_t>(fn);
}

// How a launch enters the stream's CUDA graph. MLX caches a graph's executable under a key made of
// its nodes' types and their dependencies, not their functions (a kernel node is "K" whatever it
// runs, libmlx 0.32.4's add_kernel_node_raw): a plain kernel node of ours gives the same key as one
// of MLX's own kernels in its place, and a call of ours after one of MLX's makes MLX update the
// cached executable to another function (cudaGraphExecUpdate) or build it again. Keyed (the
// default), the launch is a child graph of one kernel node whose key names the function, grid and
// block, so only launches of the same instance share an executable. On the H100, 30 back-to-back
// warm LayerNorm forwards had 3 and 4 calls about 1 ms slow as plain nodes and none keyed, the
// value_and_grad 8 and 9 against 3 and 3 (over 1 ms); medians alike
// (docs/experiments/2026-12-07e-gpu/keyed.out, keyed_warm.out). `set_keyed_nodes(False)`: plain.
std::atomic<bool> keyed_nodes{true};
// Outputs come from MLX's allocator::malloc, which on MLX's CUDA build gives managed (unified)
// memory, where MLX's own ops take device memory from the stream's pool (cu::malloc_async, not
// exported). Prefetched (set_prefetch_outputs(True)), each output's pages are moved to the device
// on the stream before the kernel: no slow back-to-back call left on the H100, but every call
// 0.02-0.04 ms longer (the forward's median 0.084-0.108 ms against 0.062-0.073), so it stays off.
std::atomic<bool> prefetch_outputs{false};
// allocator::malloc, where our outputs come from, asks MLX's CUDA allocator for unified memory
// (device -1). When its cache hands that request a buffer one of MLX's own ops had taken on the
// device (their cu::malloc_async), it first moves the buffer to unified memory, a synchronous
// copy (CudaAllocator::malloc_async -> move_to_unified_memory, libmlx 0.32.4), and so it goes on
// until every cached buffer of that size is unified: the slow warm calls of
// docs/experiments/2026-12-07c-gpu and -07e-gpu. The cache gives a request of n bytes a buffer of
// [n, n + 32 KB) (two 16 KB pages, buffer_cache.h); our outputs ask for `output_pad` bytes more
// than they hold, so that a same-sized array of MLX's and one of ours never take each other's
// buffers. On the H100, 40 warm rounds of a LayerNorm forward and value_and_grad interleaved with
// MLX's own: exact sizes had 2-3 and 5-8 calls 1-4.5 ms slow, padded none and 0-1 (about 1 ms);
// the medians alike (docs/experiments/2026-12-07g-gpu/probe.out). `set_output_pad(0)`: exact sizes.
std::atomic<size_t> output_pad{32768};

class CudaKernelOp : public FixedLaunch {
 public:
  CudaKernelOp(
      Stream stream,
      CUfunction fn,
      dim3 grid,
      dim3 block,
      std::vector<uint32_t> fills,
      std::string name)
      : FixedLaunch(stream, std::move(name)),
        fn_(fn),
        grid_(grid),
        block_(block),
        fills_(std::move(fills)),
        key_(graph_key(fn, grid, block)) {}

  void eval_cpu(const std::vector<array>&, std::vector<array>&) override {
    throw std::runtime_error(name_ + ": a CUDA kernel has no CPU implementation");
  }

  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs)
      override {
    check_row_contiguous(name_, inputs);
    auto& encoder = cu::get_command_encoder(stream());
    std::vector<CUdeviceptr> ptrs;
    ptrs.reserve(inputs.size() + outputs.size());
    for (const auto& in : inputs) {
      encoder.set_input_array(in);
      ptrs.push_back(reinterpret_cast<CUdeviceptr>(gpu_ptr<void>(in)));
    }
    const bool prefetch = prefetch_outputs.load(std::memory_order_relaxed);
    const size_t pad = output_pad.load(std::memory_order_relaxed);
    for (auto& out : outputs) {
      out.set_data(allocator::malloc(out.nbytes() > 0 ? out.nbytes() + pad : 0));
      encoder.set_output_array(out);
      ptrs.push_back(reinterpret_cast<CUdeviceptr>(gpu_ptr<void>(out)));
      if (prefetch && out.nbytes() > 0) {
        CUmemLocation device = {};
        device.type = CU_MEM_LOCATION_TYPE_DEVICE;
        device.id = encoder.device().cuda_device();
        cudaStream_t s = encoder.stream();
        // not managed memory (a later MLX's pool): nothing to move, and the kernel runs as it is
        (void)cuMemPrefetchAsync(ptrs.back(), out.nbytes(), device, 0, s);
      }
    }
    std::vector<void*> params;
    params.reserve(ptrs.size());
    for (auto& p : ptrs) {
      params.push_back(&p);
    }
    if (fills_.empty() && keyed_nodes.load(std::memory_order_relaxed)) {
      CUDA_KERNEL_NODE_PARAMS node_params = {};
      node_params.func = fn_;
      node_params.gridDimX = grid_.x;
      node_params.gridDimY = grid_.y;
      node_params.gridDimZ = grid_.z;
      node_params.blockDimX = block_.x;
      node_params.blockDimY = block_.y;
      node_params.blockDimZ = block_.z;
      node_params.kernelParams = params.data();
      CUgraph child = nullptr;
      check(cuGraphCreate(&child, 0), name_ + ": cuGraphCreate");
      CUgraphNode node = nullptr;
      CUresult added = cuGraphAddKernelNode(&node, child, nullptr, 0, &node_params);
      if (added == CUDA_SUCCESS) {
        encoder.add_graph_node(reinterpret_cast<cudaGraph_t>(child), key_, true);  // copied into the stream's graph
      }
      cuGraphDestroy(child);
      check(added, name_ + ": cuGraphAddKernelNode");
      return;
    }
    if (fills_.empty()) {
      encoder.add_kernel_node_raw(fn_, grid_, block_, dim3(), 0, params.data());
      return;
    }
    // The judge's fill: every output element set to these bits, then the kernel, captured from the
    // stream as one node of the encoder's graph, so the two run in that order.
    auto capture = encoder.capture_context();
    cudaStream_t s = encoder.stream();
    for (size_t i = 0; i < outputs.size(); i++) {
      auto ptr = ptrs[inputs.size() + i];
      size_t n = outputs[i].size();
      uint32_t bits = fills_[i];
      int width = outputs[i].itemsize();
      check(width == 4 ? cuMemsetD32Async(ptr, bits, n, s)
                : width == 2 ? cuMemsetD16Async(ptr, static_cast<uint16_t>(bits), n, s)
                             : cuMemsetD8Async(ptr, static_cast<uint8_t>(bits), n, s),
            name_ + ": filling an output");
    }
    check(cuLaunchKernel(fn_, grid_.x, grid_.y, grid_.z, block_.x, block_.y, block_.z, 0, s,
                         params.data(), nullptr),
          name_ + ": launching after the fill");
  }

  // mx.compile merges equivalent nodes: two calls are one only if they run the same instance on
  // the same grid (output shapes and dtypes are compared by MLX itself).
  bool is_equivalent(const Primitive& other) const override {
    const auto* o = dynamic_cast<const CudaKernelOp*>(&other);
    return o != nullptr && fn_ == o->fn_ && grid_.x == o->grid_.x && grid_.y == o->grid_.y &&
        grid_.z == o->grid_.z && block_.x == o->block_.x && block_.y == o->block_.y &&
        block_.z == o->block_.z && fills_ == o->fills_ && name_ == o->name_;
  }

 private:
  // the child graph's key: "ap" and the function's address, grid and block in hex ('-' and ':'
  // separate MLX's keys)
  static std::string graph_key(CUfunction fn, dim3 grid, dim3 block) {
    char key[160];
    std::snprintf(key, sizeof key, "ap%llx.%x.%x.%x.%x.%x.%x",
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(fn)), grid.x, grid.y,
                  grid.z, block.x, block.y, block.z);
    return key;
  }

  CUfunction fn_;
  dim3 grid_;
  dim3 block_;
  std::vector<uint32_t> fills_;  // empty: no fill
  std::string key_;
};

using CudaLauncher = Launcher<struct CudaKernels>;

CudaLauncher launcher(
    std::uintptr_t fn_handle,
    const std::vector<std::vector<int>>& in_shapes,
    std::vector<Dtype> in_dtypes,
    const std::vector<unsigned int>& grid,
    const std::vector<unsigned int>& block,
    const std::vector<std::vector<int>>& out_shapes,
    std::vector<Dtype> out_dtypes,
    std::string name,
    std::vector<uint32_t> fills) {
  if (fn_handle == 0) {
    throw std::invalid_argument(name + ": null kernel handle (load the instance first)");
  }
  if (grid.size() != 3 || block.size() != 3) {
    throw std::invalid_argument(name + ": grid and block need three dimensions each");
  }
  if (!fills.empty() && fills.size() != out_dtypes.size()) {
    throw std::invalid_argument(name + ": one fill per output, or none");
  }
  for (size_t d = 0; d < 3; d++) {
    if (grid[d] == 0 || block[d] == 0) {
      throw std::invalid_argument(name + ": a grid or block dimension is 0");
    }
  }
  auto fn = reinterpret_cast<CUfunction>(fn_handle);
  dim3 g(grid[0], grid[1], grid[2]), b(block[0], block[1], block[2]);
  return CudaLauncher(
      name, Device::gpu, in_shapes, std::move(in_dtypes), out_shapes, std::move(out_dtypes),
      [=](Stream s) { return std::make_shared<CudaKernelOp>(s, fn, g, b, fills, name); });
}

} // namespace autoperfect

NB_MODULE(_cuda_kernel_op, m) {
  m.doc() = "Auto-Perfect's generic MLX primitive for generated CUDA kernel instances";
  m.def(
      "load",
      &autoperfect::load,
      "cubin"_a,
      "entry"_a,
      "The handle of `entry` in `cubin`, loaded once per process.");
  autoperfect::bind_launcher<autoperfect::CudaLauncher>(m);
  m.def(
      "set_keyed_nodes",
      [](bool keyed) { autoperfect::keyed_nodes.store(keyed); },
      "keyed"_a,
      "Launches enter the stream's graph as child graphs keyed by their instance (True, the "
      "default) or as plain kernel nodes (False).");
  m.def(
      "set_prefetch_outputs",
      [](bool prefetch) { autoperfect::prefetch_outputs.store(prefetch); },
      "prefetch"_a,
      "Each output's pages moved to the device on the stream before the kernel runs (True) or "
      "left where MLX's allocator put them (False, the default).");
  m.def(
      "set_output_pad",
      [](size_t pad) { autoperfect::output_pad.store(pad); },
      "pad"_a,
      "Bytes each output asks MLX's allocator for beyond its size (32768 by default, so that its "
      "buffer is never one of MLX's own device buffers, which the allocator would first move to "
      "unified memory; 0: exact sizes).");
  m.def(
      "launcher",
      &autoperfect::launcher,
      "fn_handle"_a,
      "in_shapes"_a,
      "in_dtypes"_a,
      "grid"_a,
      "block"_a,
      "out_shapes"_a,
      "out_dtypes"_a,
      "name"_a,
      "fills"_a = std::vector<uint32_t>{},
      "The instance `fn_handle` at one launch (a grid counted in blocks), made once: call it with "
      "its inputs; `fills`: each output's elements set to these bits first (the judge's).");
}
