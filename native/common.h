// What the two kernel-call extensions (kernel_op.cpp for CPU kernels, cuda/kernel_op.cpp for CUDA
// instances) share: their primitives' base, inputs made row-contiguous for the call and checked so
// again when it runs, and the outputs' shapes checked against their dtypes.

#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"

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

} // namespace autoperfect
