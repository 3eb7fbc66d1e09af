// Reading float32 or bf16 rows as float32, for the element-wise sweeps. Under CPU bf16
// autocast the products hand the sweeps bf16; widening a row in the sweep (exactly: a bf16
// is the top half of a float32) replaces a cast of the whole operand to a float32 copy
// before every step, and that cast's node in the backward, with the same arithmetic.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <cstring>

namespace rnmt_kernels {

inline float widen(float x) { return x; }
inline float widen(c10::BFloat16 x) {
  const uint32_t bits = static_cast<uint32_t>(x.x) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// A row as float32: itself, or widened into ``buffer`` (``width`` floats) when it is bf16.
inline const float* as_float_row(const float* row, float*, int64_t) { return row; }
inline const float* as_float_row(const c10::BFloat16* row, float* buffer, int64_t width) {
#pragma omp simd
  for (int64_t j = 0; j < width; ++j) buffer[j] = widen(row[j]);
  return buffer;
}

inline bool float_or_bf16(const torch::Tensor& t) {
  return t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kBFloat16;
}

// The rows of a 2-d float32 or bf16 tensor with dense rows, its dtype decided at run time:
// ``row(n, buffer)`` is row n as float32 (``buffer`` holds ``width`` floats and is used for
// bf16 only). An empty view (``base`` null) stands for an absent operand.
struct FloatRows {
  const void* base = nullptr;
  int64_t stride = 0;
  int64_t width = 0;
  bool bf16 = false;

  FloatRows() = default;
  explicit FloatRows(const torch::Tensor& t)
      : base(t.data_ptr()), stride(t.stride(0)), width(t.size(1)), bf16(t.scalar_type() == torch::kBFloat16) {}

  const float* row(int64_t n, float* buffer) const {
    if (!bf16) return static_cast<const float*>(base) + n * stride;
    return as_float_row(static_cast<const c10::BFloat16*>(base) + n * stride, buffer, width);
  }
  // Floats a thread needs for ``row``'s buffer.
  int64_t buffer_size() const { return bf16 ? width : 0; }
};

}  // namespace rnmt_kernels
