// Fused additive-attention scores for the CPU (Bahdanau et al. 2015; Cseq2seq paper eq. 4):
//
//     e[r, s] = sum_a v[a] * tanh(k[b, s, a] + q[r, a]),   r = b * G + g
//
// and its multi-head form (DTMT): with the A units split into H heads of A/H, one score per
// head, e[r, s, h] = sum over the units a of head h of the same term. G queries share one
// sentence's keys: in training G = 1 (one decoder state per sentence), in beam search G is
// the beam, so the keys are neither copied per hypothesis nor read from memory once per
// hypothesis (a key row is loaded once and scored against all G queries).
//
// PyTorch evaluates this as an add, a tanh, and a matrix-vector product, allocating two
// [B, S, A] tensors at every target step and keeping one of them for the backward pass.
// Here the forward pass is one sweep over the keys that allocates only the [B, S] scores,
// and the backward pass recomputes tanh from the keys (which the model keeps anyway) in a
// second single sweep, so no [B, S, A] activation is saved per step.
#include <ATen/Parallel.h>
#include <torch/types.h>

#include <vector>

#include "fast_math.h"

namespace {

using rnmt_kernels::tanh_rational;

void check(const torch::Tensor& keys, const torch::Tensor& query, const torch::Tensor& v, int64_t heads) {
  TORCH_CHECK(heads > 0 && keys.dim() == 3 && keys.size(2) % heads == 0, "additive_scores: heads must divide A");
  TORCH_CHECK(keys.dim() == 3 && query.dim() == 2 && v.dim() == 1, "additive_scores: expected keys [B,S,A], query [B*G,A], v [A]");
  TORCH_CHECK(keys.size(0) > 0 && query.size(0) % keys.size(0) == 0 && keys.size(2) == query.size(1) &&
              keys.size(2) == v.size(0), "additive_scores: shapes do not match");
  TORCH_CHECK(keys.scalar_type() == torch::kFloat && query.scalar_type() == torch::kFloat && v.scalar_type() == torch::kFloat,
              "additive_scores: float32 only");
  TORCH_CHECK(keys.is_contiguous() && query.is_contiguous() && v.is_contiguous(), "additive_scores: contiguous tensors only");
}

}  // namespace

torch::Tensor scores_forward(const torch::Tensor& keys, const torch::Tensor& query, const torch::Tensor& v,
                             int64_t heads) {
  check(keys, query, v, heads);
  const int64_t B = keys.size(0), S = keys.size(1), A = keys.size(2), H = heads, U = A / heads;
  const int64_t G = query.size(0) / B;
  auto scores = torch::empty({B * G, S, H}, keys.options());
  const float* const kp = keys.data_ptr<float>();
  const float* const qp = query.data_ptr<float>();
  const float* const vp_ = v.data_ptr<float>();
  float* const out = scores.data_ptr<float>();
  // One (b, s) key row is G * A multiply-adds; a grain of 8 rows keeps thread hand-offs rare.
  at::parallel_for(0, B * S, 8, [=](int64_t begin, int64_t end) {
    const float* __restrict__ vp = vp_;  // a local restrict copy: the loop below vectorises
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / S, s = row % S;
      const float* __restrict__ k = kp + row * A;
      for (int64_t g = 0; g < G; ++g) {
        const float* __restrict__ q = qp + (b * G + g) * A;
        float* e = out + ((b * G + g) * S + s) * H;
        for (int64_t h = 0; h < H; ++h) {
          float acc = 0.f;
#pragma omp simd reduction(+ : acc)
          for (int64_t a = h * U; a < (h + 1) * U; ++a) acc += vp[a] * tanh_rational(k[a] + q[a]);
          e[h] = acc;
        }
      }
    }
  });
  return scores;
}

// Gradients of the scores [B*G,S,H] with respect to keys [B,S,A], query [B*G,A] and v [A].
// With ``into`` (a [B,S,A] tensor) the key gradient is added to it in place and returned:
// a training pass sums the key gradients of all its target steps in one buffer.
std::vector<torch::Tensor> scores_backward(const torch::Tensor& grad, const torch::Tensor& keys,
                                           const torch::Tensor& query, const torch::Tensor& v, int64_t heads,
                                           const c10::optional<torch::Tensor>& into) {
  check(keys, query, v, heads);
  TORCH_CHECK(grad.is_contiguous() && grad.scalar_type() == torch::kFloat &&
              grad.numel() == query.size(0) * keys.size(1) * heads, "additive_scores: bad gradient");
  const int64_t B = keys.size(0), S = keys.size(1), A = keys.size(2), H = heads, U = A / heads;
  const int64_t G = query.size(0) / B;
  const bool accumulate = into.has_value() && into->defined();
  if (accumulate) {
    TORCH_CHECK(into->sizes() == keys.sizes() && into->is_contiguous() && into->scalar_type() == torch::kFloat,
                "additive_scores: the key-gradient buffer must be a contiguous float32 tensor shaped like the keys");
  }
  auto grad_keys = accumulate ? *into : torch::empty_like(keys);
  auto grad_query = torch::zeros_like(query);
  auto grad_v_rows = torch::zeros({B, A}, keys.options());  // per sentence, summed below (no races)
  const float* const gp = grad.data_ptr<float>();
  const float* const kp = keys.data_ptr<float>();
  const float* const qp = query.data_ptr<float>();
  const float* const vp_ = v.data_ptr<float>();
  float* const gkp = grad_keys.data_ptr<float>();
  float* const gqp = grad_query.data_ptr<float>();
  float* const gvp = grad_v_rows.data_ptr<float>();
  // One sentence per task: its key rows and its G queries are written by this task only.
  at::parallel_for(0, B, 1, [=](int64_t begin, int64_t end) {
    const float* __restrict__ vp = vp_;
    for (int64_t b = begin; b < end; ++b) {
      float* __restrict__ gv = gvp + b * A;
      for (int64_t s = 0; s < S; ++s) {
        const float* __restrict__ k = kp + (b * S + s) * A;
        float* __restrict__ gk = gkp + (b * S + s) * A;
        for (int64_t g = 0; g < G; ++g) {
          // restrict: the rows never overlap, which lets the compiler vectorise the loops.
          const float* __restrict__ q = qp + (b * G + g) * A;
          float* __restrict__ gq = gqp + (b * G + g) * A;
          const float* ge = gp + ((b * G + g) * S + s) * H;
          for (int64_t h = 0; h < H; ++h) {
            const float e = ge[h];
            if (g == 0 && !accumulate) {  // the first query initialises the key gradient, the others add to it
#pragma omp simd
              for (int64_t a = h * U; a < (h + 1) * U; ++a) {
                const float t = tanh_rational(k[a] + q[a]);
                const float d = e * vp[a] * (1.f - t * t);
                gk[a] = d;
                gq[a] += d;
                gv[a] += e * t;
              }
            } else {
#pragma omp simd
              for (int64_t a = h * U; a < (h + 1) * U; ++a) {
                const float t = tanh_rational(k[a] + q[a]);
                const float d = e * vp[a] * (1.f - t * t);
                gk[a] += d;
                gq[a] += d;
                gv[a] += e * t;
              }
            }
          }
        }
      }
    }
  });
  return {grad_keys, grad_query, grad_v_rows.sum(0)};
}
