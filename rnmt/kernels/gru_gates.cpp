// The GRU's element-wise step for inference (DTMT eq. 6-9, rnmt/cells/gru.py):
//
//     r = sigma(p_r + u_r),  z = sigma(p_z + u_z),  h~ = tanh(p_h + r * u_h),  h' = h + z * (h~ - h)
//
// from the step's projected input p = [p_r p_z p_h] (W x + nothing) and recurrent product
// u = [u_r u_z u_h] (U h + b), both [N, 3d]. PyTorch runs this as five element-wise
// operations with four [N, d..2d] temporaries; decoding takes one GRU step per unit and
// target word (and Cseq2seq one per source word as well), so here it is one sweep that
// writes only h'. Training uses the pair gru_gates_forward / gru_gates_backward below.
#include <ATen/Parallel.h>
#include <torch/types.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "bf16_rows.h"
#include "fast_math.h"

using rnmt_kernels::as_float_row;
using rnmt_kernels::float_or_bf16;
using rnmt_kernels::sigmoid_rational;
using rnmt_kernels::tanh_rational;

namespace {

int64_t check_step(const torch::Tensor& px, const torch::Tensor& rec, const torch::Tensor& state,
                   const c10::optional<torch::Tensor>& mask) {
  TORCH_CHECK(px.dim() == 2 && rec.dim() == 2 && state.dim() == 2, "gru_gates: expected 2-d tensors");
  const int64_t N = state.size(0), d = state.size(1);
  TORCH_CHECK(px.size(0) == N && rec.size(0) == N && px.size(1) == 3 * d && rec.size(1) == 3 * d,
              "gru_gates: shapes do not match");
  TORCH_CHECK(float_or_bf16(px) && float_or_bf16(rec) && state.scalar_type() == torch::kFloat,
              "gru_gates: float32 state, float32 or bfloat16 projections");
  // Rows may be strided (a time step of a [B, T, 3d] projection); each row must be dense.
  TORCH_CHECK(px.stride(1) == 1 && rec.stride(1) == 1 && state.stride(1) == 1, "gru_gates: rows must be dense");
  if (mask.has_value()) {
    TORCH_CHECK(mask->sizes() == state.sizes() && mask->is_contiguous() && mask->scalar_type() == torch::kFloat,
                "gru_gates: mask must be a dense float32 [N, d]");
  }
  return d;
}

// One row of the sweep: h' into o and, with Save, [r z h~ u_h] into g. ``masked``: m is the
// dropout mask's row; otherwise m is any readable row, never read (a null m made the
// vectorised loop load it under an all-false mask at address 0, which the CPU completes
// through a fault-suppression assist on every vector: ten times the sweep's arithmetic on a
// Zen 5, benchmarks/gates_kernel.py; ln_gates.cpp points its optional operands likewise).
template <bool Save>
inline void step_row(const float* __restrict__ p, const float* __restrict__ u, const float* __restrict__ h,
                     const float* __restrict__ m, bool masked, float* __restrict__ o, float* __restrict__ g,
                     int64_t d) {
#pragma omp simd
  for (int64_t j = 0; j < d; ++j) {
    const float r = sigmoid_rational(p[j] + u[j]);
    const float z = sigmoid_rational(p[d + j] + u[d + j]);
    const float c = tanh_rational(p[2 * d + j] + r * u[2 * d + j]);
    if (Save) {
      g[j] = r;
      g[d + j] = z;
      g[2 * d + j] = c;
      g[3 * d + j] = u[2 * d + j];
    }
    o[j] = h[j] + z * ((masked ? m[j] : 1.f) * c - h[j]);
  }
}

// The sweep itself; with Save, it also keeps [r z h~ u_h] per row in ``saved`` ([N, 4d]).
// P and R: the element types of px and rec (float or c10::BFloat16).
template <bool Save, typename P, typename R>
void sweep_typed(const torch::Tensor& px, const torch::Tensor& rec, const torch::Tensor& state,
                 const c10::optional<torch::Tensor>& mask, torch::Tensor& out, torch::Tensor* saved) {
  const int64_t N = state.size(0), d = state.size(1);
  const P* const pp = px.data_ptr<P>();
  const R* const rp = rec.data_ptr<R>();
  const float* const hp = state.data_ptr<float>();
  const float* const mp = mask.has_value() ? mask->data_ptr<float>() : nullptr;
  float* const op = out.data_ptr<float>();
  float* const gp = Save ? saved->data_ptr<float>() : nullptr;
  const int64_t ps = px.stride(0), rs = rec.stride(0), hs = state.stride(0);
  at::parallel_for(0, N, 16, [=](int64_t begin, int64_t end) {
    std::vector<float> p_row(std::is_same_v<P, float> ? 0 : 3 * d), u_row(std::is_same_v<R, float> ? 0 : 3 * d);
    for (int64_t n = begin; n < end; ++n) {
      const float* h = hp + n * hs;
      step_row<Save>(as_float_row(pp + n * ps, p_row.data(), 3 * d), as_float_row(rp + n * rs, u_row.data(), 3 * d),
                     h, mp != nullptr ? mp + n * d : h, mp != nullptr, op + n * d, Save ? gp + n * 4 * d : nullptr, d);
    }
  });
}

template <bool Save>
void sweep(const torch::Tensor& px, const torch::Tensor& rec, const torch::Tensor& state,
           const c10::optional<torch::Tensor>& mask, torch::Tensor& out, torch::Tensor* saved) {
  const bool p16 = px.scalar_type() == torch::kBFloat16, r16 = rec.scalar_type() == torch::kBFloat16;
  if (p16 && r16) {
    sweep_typed<Save, c10::BFloat16, c10::BFloat16>(px, rec, state, mask, out, saved);
  } else if (p16) {
    sweep_typed<Save, c10::BFloat16, float>(px, rec, state, mask, out, saved);
  } else if (r16) {
    sweep_typed<Save, float, c10::BFloat16>(px, rec, state, mask, out, saved);
  } else {
    sweep_typed<Save, float, float>(px, rec, state, mask, out, saved);
  }
}

}  // namespace

// ``mask`` (optional, [N, d], already scaled by 1 / (1 - p)) is the candidate's dropout
// (a training-mode step without autograd).
torch::Tensor gru_gates_inference(const torch::Tensor& px, const torch::Tensor& rec, const torch::Tensor& state,
                                  const c10::optional<torch::Tensor>& mask) {
  const int64_t d = check_step(px, rec, state, mask);
  auto out = torch::empty({state.size(0), d}, state.options());
  sweep<false>(px, rec, state, mask, out, nullptr);
  return out;
}

// Training: the same step with its backward, so that autograd sees one node per GRU step
// instead of the split, two sigmoids, chunk, tanh, addcmul and lerp (and the concatenations
// their backward needs to rebuild [N, 3d] gradients). The forward keeps g = [r z h~ u_h]
// for the backward; sigma' = s (1 - s) and tanh' = 1 - t^2 come from those saved values.
std::vector<torch::Tensor> gru_gates_forward(const torch::Tensor& px, const torch::Tensor& rec,
                                             const torch::Tensor& state, const c10::optional<torch::Tensor>& mask) {
  const int64_t d = check_step(px, rec, state, mask);
  auto out = torch::empty({state.size(0), d}, state.options());
  auto saved = torch::empty({state.size(0), 4 * d}, state.options());
  sweep<true>(px, rec, state, mask, out, &saved);
  return {out, saved};
}

// Gradients of gru_gates_forward: of the projected input p ([N, 3d]), of the recurrent
// product u ([N, 3d]; equal to p's on the r and z columns, times r on the h~ columns) and
// of the previous state through the interpolation only (its path through u is autograd's).
// float32 whatever the forward's p and u were: autograd casts each to its input's dtype, as
// the backward of a cast to float32 did.
std::vector<torch::Tensor> gru_gates_backward(const torch::Tensor& grad, const torch::Tensor& state,
                                              const torch::Tensor& saved, const c10::optional<torch::Tensor>& mask) {
  const int64_t N = state.size(0), d = state.size(1);
  TORCH_CHECK(grad.sizes() == state.sizes() && saved.size(0) == N && saved.size(1) == 4 * d,
              "gru_gates: shapes do not match");
  TORCH_CHECK(state.stride(1) == 1 && saved.is_contiguous(), "gru_gates: rows must be dense");
  const auto g_in = grad.contiguous();
  auto grad_p = torch::empty({N, 3 * d}, state.options());
  auto grad_u = torch::empty({N, 3 * d}, state.options());
  auto grad_h = torch::empty({N, d}, state.options());
  const float* const dp = g_in.data_ptr<float>();
  const float* const hp = state.data_ptr<float>();
  const float* const sp = saved.data_ptr<float>();
  const float* const mp = mask.has_value() ? mask->data_ptr<float>() : nullptr;
  float* const gpp = grad_p.data_ptr<float>();
  float* const gup = grad_u.data_ptr<float>();
  float* const ghp = grad_h.data_ptr<float>();
  const int64_t hs = state.stride(0);
  at::parallel_for(0, N, 16, [=](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* __restrict__ dn = dp + n * d;
      const float* __restrict__ h = hp + n * hs;
      const float* __restrict__ s = sp + n * 4 * d;
      const float* __restrict__ m = mp != nullptr ? mp + n * d : h;  // never null: see sweep
      float* __restrict__ gp = gpp + n * 3 * d;
      float* __restrict__ gu = gup + n * 3 * d;
      float* __restrict__ gh = ghp + n * d;
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) {
        const float r = s[j], z = s[d + j], c = s[2 * d + j];
        const float keep = mp != nullptr ? m[j] : 1.f;
        const float cd = c * keep;  // the candidate as the interpolation saw it
        const float dz = dn[j] * (cd - h[j]) * z * (1.f - z);
        const float dc = dn[j] * z * keep * (1.f - c * c);  // through tanh: d(p_h + r u_h)
        const float dr = dc * s[3 * d + j] * r * (1.f - r);
        gp[j] = dr;
        gp[d + j] = dz;
        gp[2 * d + j] = dc;
        gu[j] = dr;
        gu[d + j] = dz;
        gu[2 * d + j] = dc * r;
        gh[j] = dn[j] * (1.f - z);
      }
    }
  });
  return {grad_p, grad_u, grad_h};
}
