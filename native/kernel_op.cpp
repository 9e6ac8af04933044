// One generic MLX primitive that runs any Auto-Perfect CPU kernel.
//
// A generated kernel has the KernelIR ABI
//     void f(void **bufs, const int64_t *dims, const int64_t *strides)
// (inputs then outputs in `bufs`, every buffer row-contiguous). KernelOp holds the kernel's
// address and its launch (dims, per-input strides), so one extension serves every kernel: Python
// passes the address it took from the kernel's already-built shared library, once per launch to
// `launcher` (common.h: Launcher), whose calls then pass only the inputs. Outputs are allocated
// by MLX's allocator and the call is queued on the CPU stream's command encoder, as MLX's own CPU
// ops do, so the op is lazy, composes with other ops and runs inside mx.compile'd code.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mlx/allocator.h"
#include "mlx/array.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

#include "common.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace mlx::core;

namespace autoperfect {

using KernelFn = void (*)(void**, const int64_t*, const int64_t*);

// A setting that is on unless its environment variable is "0".
bool switched_on(const char* variable) {
  const char* setting = std::getenv(variable);
  return setting == nullptr || std::string(setting) != "0";
}

// Outputs of this many bytes or more are offered transparent huge pages, as numpy offers its own
// arrays (it madvises every allocation of 4 MiB or more): a fresh large output otherwise faults
// once per 4 KiB page as the kernel first writes it, which on the machines here costs more than
// the kernel (a 64 MiB output malloc'd, written by two threads and freed: 32 ms on 4 KiB pages,
// 9.6 ms madvised; docs/experiments/2026-12-03-cpu/hp.c). A hint only: where THP is off, or the
// memory is already faulted, nothing changes. AUTOPERFECT_HUGE_PAGES=0 (read once) turns it off.
constexpr size_t kHugePageHintBytes = size_t(4) << 20;

bool huge_pages_wanted() {
  static const bool wanted = switched_on("AUTOPERFECT_HUGE_PAGES");
  return wanted;
}

void offer_huge_pages(void* data, size_t nbytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (nbytes < kHugePageHintBytes || !huge_pages_wanted()) {
    return;
  }
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t page = 4096;
  const std::uintptr_t first = (start + page - 1) / page * page;  // whole pages inside the buffer
  if (first >= start + nbytes) {
    return;
  }
  // Only memory the kernel will fault in: a block glibc reuses (its pages already resident, as
  // under the warm allocator) is left alone, since marking it makes khugepaged collapse it behind
  // the kernels' backs (RMSNorm's warm calls ran 16-25% slower hinted every call).
  unsigned char resident = 0;
  if (mincore(reinterpret_cast<void*>(first), page, &resident) == 0 && (resident & 1)) {
    return;
  }
  madvise(reinterpret_cast<void*>(first), start + nbytes - first, MADV_HUGEPAGE);  // best effort
#else
  (void)data;
  (void)nbytes;
#endif
}

// Outputs start on a cache line. MLX's CPU allocator returns blocks 8 bytes past a 16-byte
// boundary, so an output row would start at one of four places within a line, and a streaming row
// kernel stores the lines its rows share plainly: RMSNorm 4096x1024 ran 8-15% slower on MLX's
// placements than on lines (docs/experiments/2026-12-05e-cpu, 2026-12-05f-cpu). The block is taken
// from MLX's allocator one line longer and the output starts at the first line inside it, an offset
// into its block as a slice's is; MLX frees the block as it frees any. AUTOPERFECT_ALIGN_OUTPUTS=0
// (read at load) keeps MLX's placement; `set_aligned_outputs` changes it for the calls after.
constexpr size_t kLineBytes = 64;

std::atomic<bool>& aligned_outputs() {
  static std::atomic<bool> wanted{switched_on("AUTOPERFECT_ALIGN_OUTPUTS")};
  return wanted;
}

bool set_aligned_outputs(bool wanted) {
  return aligned_outputs().exchange(wanted);
}

void allocate_output(array& out) {
  if (!aligned_outputs().load(std::memory_order_relaxed)) {
    out.set_data(allocator::malloc(out.nbytes()));
    return;
  }
  auto data = allocator::malloc(out.nbytes() + kLineBytes);
  const auto start = reinterpret_cast<std::uintptr_t>(data.buffer().raw_ptr());
  const auto offset = static_cast<int64_t>((kLineBytes - start % kLineBytes) % kLineBytes);
  const auto& shape = out.shape();
  const bool col_contiguous = out.size() <= 1 ||
      out.size() == static_cast<size_t>(*std::max_element(shape.begin(), shape.end()));
  out.set_data(std::move(data), out.size(), out.strides(), {true, true, col_contiguous}, offset);
}

class KernelOp : public FixedLaunch {
 public:
  KernelOp(
      Stream stream,
      std::uintptr_t address,
      std::vector<int64_t> dims,
      std::vector<int64_t> strides,
      std::string name)
      : FixedLaunch(stream, std::move(name)),
        address_(address),
        dims_(std::move(dims)),
        strides_(std::move(strides)) {}

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs)
      override {
    check_row_contiguous(name_, inputs);
    auto& encoder = cpu::get_command_encoder(stream());
    std::vector<void*> bufs;
    bufs.reserve(inputs.size() + outputs.size());
    for (const auto& in : inputs) {
      encoder.set_input_array(in);
      bufs.push_back(const_cast<char*>(in.data<char>()));
    }
    for (auto& out : outputs) {
      allocate_output(out);
      offer_huge_pages(out.data<void>(), out.nbytes());
      encoder.set_output_array(out);
      bufs.push_back(out.data<char>());
    }
    // MLX's evaluator keeps the input and sibling buffers alive until this task has run.
    encoder.dispatch([fn = reinterpret_cast<KernelFn>(address_),
                      bufs = std::move(bufs),
                      dims = dims_,
                      strides = strides_]() mutable {
      fn(bufs.data(), dims.data(), strides.data());
    });
  }

  void eval_gpu(const std::vector<array>&, std::vector<array>&) override {
    throw std::runtime_error(name_ + ": a CPU kernel has no GPU implementation");
  }

  // mx.compile merges equivalent nodes: two calls are one only if they run the same code on the
  // same launch (output shapes and dtypes are compared by MLX itself).
  bool is_equivalent(const Primitive& other) const override {
    const auto* o = dynamic_cast<const KernelOp*>(&other);
    return o != nullptr && address_ == o->address_ && dims_ == o->dims_ &&
        strides_ == o->strides_ && name_ == o->name_;
  }

 private:
  std::uintptr_t address_;
  std::vector<int64_t> dims_;
  std::vector<int64_t> strides_;
};

using CpuLauncher = Launcher<struct CpuKernels>;

CpuLauncher launcher(
    std::uintptr_t fn_address,
    const std::vector<std::vector<int>>& in_shapes,
    std::vector<Dtype> in_dtypes,
    std::vector<int64_t> dims,
    std::vector<int64_t> strides,
    const std::vector<std::vector<int>>& out_shapes,
    std::vector<Dtype> out_dtypes,
    std::string name) {
  if (fn_address == 0) {
    throw std::invalid_argument(name + ": null kernel address");
  }
  if (dims.empty() || strides.size() < in_shapes.size() * dims.size()) {
    throw std::invalid_argument(name + ": launch dims/strides do not match the inputs");
  }
  return CpuLauncher(
      name, Device::cpu, in_shapes, std::move(in_dtypes), out_shapes, std::move(out_dtypes),
      [=](Stream s) { return std::make_shared<KernelOp>(s, fn_address, dims, strides, name); });
}

// Whether any of `arrays` is being traced by an MLX transformation (mx.grad, mx.vjp, mx.jvp,
// mx.vmap, mx.compile): their inputs are marked tracers, and so is every array computed from one.
bool any_tracer(const std::vector<array>& arrays) {
  for (const auto& a : arrays) {
    if (a.is_tracer()) {
      return true;
    }
  }
  return false;
}

} // namespace autoperfect

NB_MODULE(_kernel_op, m) {
  m.doc() = "Auto-Perfect's generic MLX primitive for generated CPU kernels";
  autoperfect::bind_launcher<autoperfect::CpuLauncher>(m);
  m.def(
      "launcher",
      &autoperfect::launcher,
      "fn_address"_a,
      "in_shapes"_a,
      "in_dtypes"_a,
      "dims"_a,
      "strides"_a,
      "out_shapes"_a,
      "out_dtypes"_a,
      "name"_a,
      "The kernel at `fn_address` (KernelIR ABI) at one launch, made once: call it with its inputs.");
  m.def(
      "any_tracer",
      &autoperfect::any_tracer,
      "arrays"_a,
      "Whether an MLX transformation (grad, vjp, jvp, vmap, compile) is tracing any of `arrays`.");
  m.def(
      "set_aligned_outputs",
      &autoperfect::set_aligned_outputs,
      "wanted"_a,
      "Start the outputs of the calls evaluated after this on a 64-byte line (True, the default "
      "unless AUTOPERFECT_ALIGN_OUTPUTS=0) or where MLX's allocator puts them; returns the old setting.");
}
