// What the two kernel-call extensions (kernel_op.cpp for CPU kernels, cuda/kernel_op.cpp for CUDA
// instances) share: their primitives' base, inputs made row-contiguous for the call and checked so
// again when it runs, and the outputs' shapes checked against their dtypes.

#pragma once

#include <functional>
#include <memory>
#include <sstream>
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

  const char* name() const override {
    return name_.c_str();
  }

 protected:
  std::string name_;
};

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

inline std::vector<mlx::core::Shape> output_shapes(
    const std::string& name,
    const std::vector<std::vector<int>>& out_shapes,
    const std::vector<mlx::core::Dtype>& out_dtypes) {
  if (out_shapes.empty() || out_shapes.size() != out_dtypes.size()) {
    std::ostringstream msg;
    msg << name << ": " << out_shapes.size() << " output shapes for " << out_dtypes.size()
        << " output dtypes";
    throw std::invalid_argument(msg.str());
  }
  std::vector<mlx::core::Shape> shapes;
  for (const auto& shape : out_shapes) {
    shapes.emplace_back(shape.begin(), shape.end());
  }
  return shapes;
}

// A launch made once, then called with its inputs only: the outputs' shapes and dtypes are checked
// and converted when it is made, so a call costs the host MLX's graph building and a new primitive,
// not our arguments' conversions. Each call gets its own primitive: mx.compile takes arrays that
// share one for siblings and would not merge two equal calls. (`Tag` keeps the two extensions'
// Launchers distinct C++ types: nanobind refuses a type registered twice in one process, and a
// process may load both.)
template <class Tag>
class Launcher {
 public:
  using Make = std::function<std::shared_ptr<mlx::core::Primitive>(mlx::core::Stream)>;

  Launcher(
      std::string name,
      mlx::core::Device device,
      size_t inputs,
      const std::vector<std::vector<int>>& out_shapes,
      std::vector<mlx::core::Dtype> out_dtypes,
      Make make)
      : name_(std::move(name)),
        device_(device),
        inputs_(inputs),
        shapes_(output_shapes(name_, out_shapes, out_dtypes)),
        dtypes_(std::move(out_dtypes)),
        make_(std::move(make)) {}

  std::vector<array> operator()(const std::vector<array>& inputs) {
    // the kernel's ABI is its inputs then its outputs: another count would pass it wrong pointers
    if (inputs.size() != inputs_) {
      std::ostringstream msg;
      msg << name_ << ": takes " << inputs_ << " inputs, got " << inputs.size();
      throw std::invalid_argument(msg.str());
    }
    mlx::core::Stream s = mlx::core::to_stream({}, device_);
    return array::make_arrays(shapes_, dtypes_, make_(s), row_contiguous(inputs, s));
  }

  const std::string& name() const {
    return name_;
  }

 private:
  std::string name_;
  mlx::core::Device device_;
  size_t inputs_;
  std::vector<mlx::core::Shape> shapes_;
  std::vector<mlx::core::Dtype> dtypes_;
  Make make_;
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
