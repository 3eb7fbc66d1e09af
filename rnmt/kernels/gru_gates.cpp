// The GRU's element-wise step for inference (DTMT eq. 6-9, rnmt/cells/gru.py):
//
//     r = sigma(p_r + u_r),  z = sigma(p_z + u_z),  h~ = tanh(p_h + r * u_h),  h' = h + z * (h~ - h)
//
// from the step's projected input p = [p_r p_z p_h] (W x + nothing) and recurrent product
// u = [u_r u_z u_h] (U h + b), both [N, 3d]. PyTorch runs this as five element-wise
// operations with four [N, d..2d] temporaries; decoding takes one GRU step per unit and
// target word (and Cseq2seq one per source word as well), so here it is one sweep that
// writes only h'. No autograd: training keeps the PyTorch expression.
#include <ATen/Parallel.h>
#include <torch/types.h>

#include "fast_math.h"

using rnmt_kernels::sigmoid_rational;
using rnmt_kernels::tanh_rational;

torch::Tensor gru_gates_inference(const torch::Tensor& px, const torch::Tensor& rec, const torch::Tensor& state) {
  TORCH_CHECK(px.dim() == 2 && rec.dim() == 2 && state.dim() == 2, "gru_gates: expected 2-d tensors");
  const int64_t N = state.size(0), d = state.size(1);
  TORCH_CHECK(px.size(0) == N && rec.size(0) == N && px.size(1) == 3 * d && rec.size(1) == 3 * d,
              "gru_gates: shapes do not match");
  TORCH_CHECK(px.scalar_type() == torch::kFloat && rec.scalar_type() == torch::kFloat &&
              state.scalar_type() == torch::kFloat, "gru_gates: float32 only");
  // Rows may be strided (a time step of a [B, T, 3d] projection); each row must be dense.
  TORCH_CHECK(px.stride(1) == 1 && rec.stride(1) == 1 && state.stride(1) == 1, "gru_gates: rows must be dense");
  auto out = torch::empty({N, d}, state.options());
  const float* const pp = px.data_ptr<float>();
  const float* const rp = rec.data_ptr<float>();
  const float* const hp = state.data_ptr<float>();
  float* const op = out.data_ptr<float>();
  const int64_t ps = px.stride(0), rs = rec.stride(0), hs = state.stride(0);
  at::parallel_for(0, N, 16, [=](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* __restrict__ p = pp + n * ps;
      const float* __restrict__ u = rp + n * rs;
      const float* __restrict__ h = hp + n * hs;
      float* __restrict__ o = op + n * d;
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) {
        const float r = sigmoid_rational(p[j] + u[j]);
        const float z = sigmoid_rational(p[d + j] + u[d + j]);
        const float c = tanh_rational(p[2 * d + j] + r * u[2 * d + j]);
        o[j] = h[j] + z * (c - h[j]);
      }
    }
  });
  return out;
}
