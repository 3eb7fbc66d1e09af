// The label-smoothed loss's passes over the [tokens x V] scores (rnmt/training/loss.py):
// forward, per row, the log-sum-exp, the sum of the scores and the gold score; backward,
// per row, grad = exp(x - lse) * p_coef - off_coef, minus gold_coef at the gold word. In
// PyTorch ops the backward alone is four full passes (sub, exp_, mul_, sub_) over a tensor
// of tokens x V floats (67 MB for a 4,000-token batch at V = 8,000) and logsumexp several
// more; here each direction reads the scores once or twice and writes the gradient once.
// Scores may be float32 or bf16 (the output layer's product under CPU bf16 autocast): bf16
// is read and written as is, every sum in float32, so the loss needs no float32 copy of the
// scores and the gradient is rounded once, exactly as a cast of the float32 gradient would be.
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <torch/types.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

// One row's log-sum-exp, sum and gold score.
inline void forward_row(const float* __restrict__ x, int64_t V, int64_t gold, float* lse, float* sum, float* gs) {
  float most = -std::numeric_limits<float>::infinity(), total = 0.f;
#pragma omp simd reduction(max : most) reduction(+ : total)
  for (int64_t j = 0; j < V; ++j) {
    most = x[j] > most ? x[j] : most;
    total += x[j];
  }
  float expsum = 0.f;
#pragma omp simd reduction(+ : expsum)
  for (int64_t j = 0; j < V; ++j) expsum += std::exp(x[j] - most);
  *lse = most + std::log(expsum);
  *sum = total;
  *gs = x[gold];
}

// One row's gradient: exp(x - l) * p - o, less g_coef at the gold word.
inline void backward_row(const float* __restrict__ x, int64_t V, int64_t gold, float l, float p, float o,
                         float g_coef, float* __restrict__ g) {
#pragma omp simd
  for (int64_t j = 0; j < V; ++j) g[j] = std::exp(x[j] - l) * p - o;
  g[gold] -= g_coef;
}

// bf16 rows go through a float32 row buffer per thread, so that the arithmetic is the
// float32 path's exactly (the result is that of a cast, the float32 kernel and a cast back).
inline void widen(const c10::BFloat16* __restrict__ x, int64_t V, float* __restrict__ out) {
#pragma omp simd
  for (int64_t j = 0; j < V; ++j) out[j] = static_cast<float>(x[j]);
}

inline void narrow(const float* __restrict__ x, int64_t V, c10::BFloat16* __restrict__ out) {
  for (int64_t j = 0; j < V; ++j) out[j] = static_cast<c10::BFloat16>(x[j]);
}

bool float_or_bf16(const torch::Tensor& t) {
  return t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kBFloat16;
}

}  // namespace

// Returns {lse [N], row sums [N], gold scores [N]}, float32.
std::vector<torch::Tensor> smoothed_nll_forward(const torch::Tensor& scores, const torch::Tensor& target) {
  TORCH_CHECK(scores.dim() == 2 && scores.is_contiguous() && float_or_bf16(scores),
              "smoothed_nll: scores must be a dense float32 or bf16 [N, V]");
  TORCH_CHECK(target.dim() == 1 && target.size(0) == scores.size(0) && target.scalar_type() == torch::kLong,
              "smoothed_nll: target must be int64 [N]");
  const int64_t N = scores.size(0), V = scores.size(1);
  const auto opts = scores.options().dtype(torch::kFloat);
  auto lse = torch::empty({N}, opts);
  auto sums = torch::empty({N}, opts);
  auto gold = torch::empty({N}, opts);
  const auto t = target.contiguous();
  const int64_t* const tp = t.data_ptr<int64_t>();
  for (int64_t n = 0; n < N; ++n) {
    TORCH_CHECK(tp[n] >= 0 && tp[n] < V, "smoothed_nll: target id ", tp[n], " out of range for ", V, " words");
  }
  float* const lp = lse.data_ptr<float>();
  float* const sp = sums.data_ptr<float>();
  float* const gp = gold.data_ptr<float>();
  const bool bf16 = scores.scalar_type() == torch::kBFloat16;
  const void* const base = scores.data_ptr();
  at::parallel_for(0, N, 1, [=](int64_t begin, int64_t end) {
    std::vector<float> row(bf16 ? V : 0);
    for (int64_t n = begin; n < end; ++n) {
      const float* x;
      if (bf16) {
        widen(static_cast<const c10::BFloat16*>(base) + n * V, V, row.data());
        x = row.data();
      } else {
        x = static_cast<const float*>(base) + n * V;
      }
      forward_row(x, V, tp[n], lp + n, sp + n, gp + n);
    }
  });
  return {lse, sums, gold};
}

// grad [N, V] (the scores' dtype) = exp(x - lse) * p_coef - off_coef, and gold_coef less at
// each row's gold word.
torch::Tensor smoothed_nll_backward(const torch::Tensor& scores, const torch::Tensor& lse, const torch::Tensor& target,
                                    const torch::Tensor& p_coef, const torch::Tensor& off_coef,
                                    const torch::Tensor& gold_coef) {
  TORCH_CHECK(scores.dim() == 2 && scores.is_contiguous() && float_or_bf16(scores),
              "smoothed_nll: scores must be a dense float32 or bf16 [N, V]");
  const int64_t N = scores.size(0), V = scores.size(1);
  for (const auto* v : {&lse, &p_coef, &off_coef, &gold_coef}) {
    TORCH_CHECK(v->dim() == 1 && v->size(0) == N && v->is_contiguous() && v->scalar_type() == torch::kFloat,
                "smoothed_nll: per-row coefficients must be dense float32 [N]");
  }
  auto grad = torch::empty_like(scores);
  const auto t = target.contiguous();
  const float* const lp = lse.data_ptr<float>();
  const int64_t* const tp = t.data_ptr<int64_t>();
  const float* const pc = p_coef.data_ptr<float>();
  const float* const oc = off_coef.data_ptr<float>();
  const float* const gc = gold_coef.data_ptr<float>();
  const bool bf16 = scores.scalar_type() == torch::kBFloat16;
  const void* const base = scores.data_ptr();
  void* const out = grad.data_ptr();
  at::parallel_for(0, N, 1, [=](int64_t begin, int64_t end) {
    std::vector<float> row(bf16 ? V : 0), g(bf16 ? V : 0);
    for (int64_t n = begin; n < end; ++n) {
      if (bf16) {
        widen(static_cast<const c10::BFloat16*>(base) + n * V, V, row.data());
        backward_row(row.data(), V, tp[n], lp[n], pc[n], oc[n], gc[n], g.data());
        narrow(g.data(), V, static_cast<c10::BFloat16*>(out) + n * V);
      } else {
        backward_row(static_cast<const float*>(base) + n * V, V, tp[n], lp[n], pc[n], oc[n], gc[n],
                     static_cast<float*>(out) + n * V);
      }
    }
  });
  return grad;
}
