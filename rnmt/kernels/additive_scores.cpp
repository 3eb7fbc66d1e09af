// Fused additive-attention scores for the CPU (Bahdanau et al. 2015; Cseq2seq paper eq. 4):
//
//     e[b, s] = sum_a v[a] * tanh(k[b, s, a] + q[b, a])
//
// and its multi-head form (DTMT): with the A units split into H heads of A/H, one score per
// head, e[b, s, h] = sum over the units a of head h of the same term.
//
// PyTorch evaluates this as an add, a tanh, and a matrix-vector product, allocating two
// [B, S, A] tensors at every target step and keeping one of them for the backward pass.
// Here the forward pass is one sweep over the keys that allocates only the [B, S] scores,
// and the backward pass recomputes tanh from the keys (which the model keeps anyway) in a
// second single sweep, so no [B, S, A] activation is saved per step.
#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

namespace {

// tanh(x) = 1 - 2 / (exp(2x) + 1). Written with expf so that the compiler can use a vector
// exp inside the simd loops below (glibc's libmvec); the clamp keeps exp finite
// (|x| = 15 already gives tanh = +-1 in float32). Absolute error below 1e-7.
inline float tanh_exp(float x) {
  x = x < -15.f ? -15.f : (x > 15.f ? 15.f : x);
  return 1.f - 2.f / (std::exp(2.f * x) + 1.f);
}

void check(const torch::Tensor& keys, const torch::Tensor& query, const torch::Tensor& v, int64_t heads) {
  TORCH_CHECK(heads > 0 && keys.dim() == 3 && keys.size(2) % heads == 0, "additive_scores: heads must divide A");
  TORCH_CHECK(keys.dim() == 3 && query.dim() == 2 && v.dim() == 1, "additive_scores: expected keys [B,S,A], query [B,A], v [A]");
  TORCH_CHECK(keys.size(0) == query.size(0) && keys.size(2) == query.size(1) && keys.size(2) == v.size(0),
              "additive_scores: shapes do not match");
  TORCH_CHECK(keys.scalar_type() == torch::kFloat && query.scalar_type() == torch::kFloat && v.scalar_type() == torch::kFloat,
              "additive_scores: float32 only");
  TORCH_CHECK(keys.is_contiguous() && query.is_contiguous() && v.is_contiguous(), "additive_scores: contiguous tensors only");
}

}  // namespace

torch::Tensor scores_forward(const torch::Tensor& keys, const torch::Tensor& query, const torch::Tensor& v,
                             int64_t heads) {
  check(keys, query, v, heads);
  const int64_t B = keys.size(0), S = keys.size(1), A = keys.size(2), H = heads, U = A / heads;
  auto scores = torch::empty({B, S, H}, keys.options());
  const float* kp = keys.data_ptr<float>();
  const float* qp = query.data_ptr<float>();
  const float* vp = v.data_ptr<float>();
  float* out = scores.data_ptr<float>();
  // One (b, s) row is A multiply-adds; a grain of 8 rows keeps thread hand-offs rare.
  at::parallel_for(0, B * S, 8, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* __restrict__ k = kp + row * A;
      const float* __restrict__ q = qp + (row / S) * A;
      for (int64_t h = 0; h < H; ++h) {
        float acc = 0.f;
#pragma omp simd reduction(+ : acc)
        for (int64_t a = h * U; a < (h + 1) * U; ++a) acc += vp[a] * tanh_exp(k[a] + q[a]);
        out[row * H + h] = acc;
      }
    }
  });
  return scores;
}

// Gradients of the scores [B,S,H] with respect to keys [B,S,A], query [B,A] and v [A].
std::vector<torch::Tensor> scores_backward(const torch::Tensor& grad, const torch::Tensor& keys,
                                           const torch::Tensor& query, const torch::Tensor& v, int64_t heads) {
  check(keys, query, v, heads);
  TORCH_CHECK(grad.is_contiguous() && grad.scalar_type() == torch::kFloat && grad.numel() == keys.size(0) * keys.size(1) * heads,
              "additive_scores: bad gradient");
  const int64_t B = keys.size(0), S = keys.size(1), A = keys.size(2), H = heads, U = A / heads;
  auto grad_keys = torch::empty_like(keys);
  auto grad_query = torch::zeros_like(query);
  auto grad_v_rows = torch::zeros({B, A}, keys.options());  // per sentence, summed below (no races)
  const float* gp = grad.data_ptr<float>();
  const float* kp = keys.data_ptr<float>();
  const float* qp = query.data_ptr<float>();
  const float* __restrict__ vp = v.data_ptr<float>();
  float* gkp = grad_keys.data_ptr<float>();
  float* gqp = grad_query.data_ptr<float>();
  float* gvp = grad_v_rows.data_ptr<float>();
  at::parallel_for(0, B, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      // restrict: the five rows never overlap, which lets the compiler vectorise the loop.
      const float* __restrict__ q = qp + b * A;
      float* __restrict__ gq = gqp + b * A;
      float* __restrict__ gv = gvp + b * A;
      for (int64_t s = 0; s < S; ++s) {
        const int64_t row = b * S + s;
        const float* __restrict__ k = kp + row * A;
        float* __restrict__ gk = gkp + row * A;
        for (int64_t h = 0; h < H; ++h) {
          const float g = gp[row * H + h];
#pragma omp simd
          for (int64_t a = h * U; a < (h + 1) * U; ++a) {
            const float t = tanh_exp(k[a] + q[a]);
            const float d = g * vp[a] * (1.f - t * t);
            gk[a] = d;
            gq[a] += d;
            gv[a] += g * t;
          }
        }
      }
    }
  });
  return {grad_keys, grad_query, grad_v_rows.sum(0)};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scores_forward", &scores_forward, "additive attention scores (forward)");
  m.def("scores_backward", &scores_backward, "additive attention scores (backward)");
}
