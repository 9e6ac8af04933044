// What the two kernel-call extensions (kernel_op.cpp for CPU kernels, cuda/kernel_op.cpp for CUDA
// instances) share: their primitives' base, inputs made row-contiguous for the call and checked so
// again when it runs, and the outputs' shapes checked against their dtypes.

#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mlx/array.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace autoperfect {

using mlx::core::array;

// Kernels index every buffer as row-major: a strided view would be read wrongly.
inline void check_row_contiguous(const std::string& name, const std::vector<array>& inputs) {
  for (const auto& in : inputs) {
    if (!in.flags().row_contiguous) {
      throw std::invalid_argument(name + ": an input is not row-contiguous");
    }
  }
}

// An input whose layout is already known to be row-contiguous is passed as it is; any other gets
// MLX's `contiguous`, which shares the buffer when it turns out contiguous and copies otherwise.
inline std::vector<array> row_contiguous(const std::vector<array>& inputs, const mlx::core::Stream& s) {
  std::vector<array> args;
  args.reserve(inputs.size());
  for (const auto& x : inputs) {
    bool known = x.status() != array::Status::unscheduled;
    args.push_back(known && x.flags().row_contiguous ? x : mlx::core::contiguous(x, false, s));
  }
  return args;
}

class FixedLaunch;

// What every call of one launch shares: its outputs' shapes and dtypes, and how to make the
// primitive a call runs. Held by the Launcher and by each primitive it made (FixedLaunch::vmap
// makes more calls of the same launch).
struct Launch : std::enable_shared_from_this<Launch> {
  using Make = std::function<std::shared_ptr<FixedLaunch>(mlx::core::Stream)>;

  Launch(std::vector<mlx::core::Shape> shapes, std::vector<mlx::core::Dtype> dtypes, Make make)
      : shapes(std::move(shapes)), dtypes(std::move(dtypes)), make(std::move(make)) {}

  std::vector<mlx::core::Shape> shapes;
  std::vector<mlx::core::Dtype> dtypes;
  Make make;

  // The outputs of one call on inputs of the launch's shapes and dtypes (checked by the caller);
  // its primitive holds this launch.
  std::vector<array> call(const std::vector<array>& inputs, const mlx::core::Stream& s) const;
};

// A kernel whose launch is fixed when the op is made, under the kernel's name.
class FixedLaunch : public mlx::core::Primitive {
 public:
  FixedLaunch(mlx::core::Stream stream, std::string name)
      : Primitive(stream), name_(std::move(name)) {}

  // mx.compile(shapeless=True) cannot replay a fixed launch.
  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>&) override {
    throw std::invalid_argument(
        name_ + ": a kernel launch has fixed sizes (compile it with shapeless=False)");
  }

  // mx.vmap: the launch's sizes are one example's, so each example of the batch is one call of
  // the same launch on that example's slices, and each output the stack of the calls' (its batch
  // axis first). Correct for any kernel; a batch of B costs B launches.
  std::pair<std::vector<array>, std::vector<int>> vmap(
      const std::vector<array>& inputs,
      const std::vector<int>& axes) override {
    if (!launch_) {
      throw std::invalid_argument(name_ + ": this kernel call can't be batched (no launch)");
    }
    int batch = -1;
    for (size_t i = 0; i < inputs.size(); i++) {
      if (axes[i] >= 0) {
        batch = inputs[i].shape(axes[i]);
        break;
      }
    }
    if (batch < 0) {  // nothing batched: the call as it is
      return {launch_->call(row_contiguous(inputs, stream()), stream()),
              std::vector<int>(launch_->shapes.size(), -1)};
    }
    std::vector<std::vector<array>> outs(launch_->shapes.size());
    for (int b = 0; b < batch; b++) {
      std::vector<array> example;
      example.reserve(inputs.size());
      for (size_t i = 0; i < inputs.size(); i++) {
        example.push_back(axes[i] < 0 ? inputs[i] : mlx::core::take(inputs[i], b, axes[i], stream()));
      }
      auto out = launch_->call(row_contiguous(example, stream()), stream());
      for (size_t o = 0; o < out.size(); o++) {
        outs[o].push_back(std::move(out[o]));
      }
    }
    std::vector<array> stacked;
    stacked.reserve(outs.size());
    for (auto& o : outs) {
      stacked.push_back(mlx::core::stack(o, 0, stream()));
    }
    return {stacked, std::vector<int>(stacked.size(), 0)};
  }

  const char* name() const override {
    return name_.c_str();
  }

  void set_launch(std::shared_ptr<const Launch> launch) {
    launch_ = std::move(launch);
  }

 protected:
  std::string name_;
  std::shared_ptr<const Launch> launch_;
};

inline std::vector<array> Launch::call(const std::vector<array>& inputs, const mlx::core::Stream& s) const {
  auto primitive = make(s);
  primitive->set_launch(shared_from_this());
  return array::make_arrays(shapes, dtypes, std::move(primitive), inputs);
}

// One shape per dtype ("input" or "output" names which), as MLX's Shape.
inline std::vector<mlx::core::Shape> shapes_of(
    const std::string& name,
    const char* what,
    const std::vector<std::vector<int>>& shapes,
    const std::vector<mlx::core::Dtype>& dtypes) {
  if (shapes.size() != dtypes.size()) {
    throw std::invalid_argument(
        name + ": " + std::to_string(shapes.size()) + " " + what + " shapes for " +
        std::to_string(dtypes.size()) + " " + what + " dtypes");
  }
  std::vector<mlx::core::Shape> out;
  out.reserve(shapes.size());
  for (const auto& shape : shapes) {
    out.emplace_back(shape.begin(), shape.end());
  }
  return out;
}

// A dtype's name, spelled here: MLX's `dtype_to_string` is not exported from libmlx, and its
// `operator<<` wants a stream. (Messages here are built from std::string alone: on the H200's
// machine any std::ostringstream in these extensions crashed the process, 2026-12-02.)
inline const char* dtype_name(mlx::core::Dtype dtype) {
  using Val = mlx::core::Dtype::Val;
  switch (dtype.val()) {
    case Val::bool_: return "bool";
    case Val::uint8: return "uint8";
    case Val::uint16: return "uint16";
    case Val::uint32: return "uint32";
    case Val::uint64: return "uint64";
    case Val::int8: return "int8";
    case Val::int16: return "int16";
    case Val::int32: return "int32";
    case Val::int64: return "int64";
    case Val::float16: return "float16";
    case Val::float32: return "float32";
    case Val::float64: return "float64";
    case Val::bfloat16: return "bfloat16";
    case Val::complex64: return "complex64";
  }
  return "an unknown dtype";
}

// "float32 [4096, 1024]": how a launch's errors name an array.
inline std::string describe(mlx::core::Dtype dtype, const mlx::core::Shape& shape) {
  std::string out = std::string(dtype_name(dtype)) + " [";
  for (size_t d = 0; d < shape.size(); d++) {
    out += (d ? ", " : "") + std::to_string(shape[d]);
  }
  return out + "]";
}

// A launch made once, then called with its inputs only: the outputs' shapes and dtypes are checked
// and converted when it is made, so a call costs the host MLX's graph building and a new primitive,
// not our arguments' conversions. A call's inputs must be the arrays the launch was made for (their
// count, shapes and dtypes): the kernel's sizes are fixed, and any other array would be read out of
// its bounds. Each call gets its own primitive: mx.compile takes arrays that
// share one for siblings and would not merge two equal calls. (`Tag` keeps the two extensions'
// Launchers distinct C++ types: nanobind refuses a type registered twice in one process, and a
// process may load both.)
template <class Tag>
class Launcher {
 public:
  using Make = Launch::Make;

  Launcher(
      std::string name,
      mlx::core::Device device,
      const std::vector<std::vector<int>>& in_shapes,
      std::vector<mlx::core::Dtype> in_dtypes,
      const std::vector<std::vector<int>>& out_shapes,
      std::vector<mlx::core::Dtype> out_dtypes,
      Make make)
      : name_(std::move(name)),
        device_(device),
        in_shapes_(shapes_of(name_, "input", in_shapes, in_dtypes)),
        in_dtypes_(std::move(in_dtypes)),
        launch_(std::make_shared<const Launch>(
            shapes_of(name_, "output", out_shapes, out_dtypes), std::move(out_dtypes), std::move(make))) {
    if (launch_->shapes.empty()) {
      throw std::invalid_argument(name_ + ": a kernel launch needs an output");
    }
  }

  std::vector<array> operator()(const std::vector<array>& inputs) {
    // the kernel's ABI is its inputs then its outputs: another count would pass it wrong pointers
    if (inputs.size() != in_shapes_.size()) {
      throw std::invalid_argument(
          name_ + ": takes " + std::to_string(in_shapes_.size()) + " inputs, got " +
          std::to_string(inputs.size()));
    }
    for (size_t i = 0; i < inputs.size(); i++) {
      if (inputs[i].shape() != in_shapes_[i] || inputs[i].dtype() != in_dtypes_[i]) {
        throw std::invalid_argument(
            name_ + ": input " + std::to_string(i) + " is " +
            describe(inputs[i].dtype(), inputs[i].shape()) + ", and the launch was made for " +
            describe(in_dtypes_[i], in_shapes_[i]));
      }
    }
    mlx::core::Stream s = mlx::core::to_stream({}, device_);
    return launch_->call(row_contiguous(inputs, s), s);
  }

  const std::string& name() const {
    return name_;
  }

 private:
  std::string name_;
  mlx::core::Device device_;
  std::vector<mlx::core::Shape> in_shapes_;
  std::vector<mlx::core::Dtype> in_dtypes_;
  std::shared_ptr<const Launch> launch_;
};

// The Python class of a Launcher: called with the list of its inputs.
template <class L>
void bind_launcher(nanobind::module_& m) {
  using namespace nanobind::literals;
  nanobind::class_<L>(m, "Launcher")
      .def("__call__", &L::operator(), "inputs"_a, "Lazy MLX arrays: the launch's outputs on `inputs`.")
      .def_prop_ro("name", &L::name);
}

} // namespace autoperfect
