// The element-wise step of the layer-normalised gated units (DTMT "Layer Normalization";
// rnmt/cells/gru.py and rnmt/cells/dtmt.py), forward and backward, one sweep each:
//
//     a_k = p_k + u_k                       (gate k's pre-activation; T-GRU: p_k = 0)
//     s_k = sigma(LN_k(a_k)),  LN_k(a) = g_k * (a - mean(a)) / sqrt(var(a) + eps) + o_k
//     r = s_0, z = s_1 (and L-GRU's l = s_2)
//     h~ = tanh(p_h + r * (u_h + b_h))      (T-GRU: p_h = 0)
//     h~ += l * p_x                         (L-GRU's linear term, eq. 15)
//     h' = h + z * (m * h~ - h)             (m: the candidate's dropout mask, 1 without)
//
// p = [p_0 .. p_{G-1} p_h (p_x)] is the step's projected input ([N, (G+1)d] or [N, (G+2)d]
// with the linear term; none for the T-GRU), u = [u_0 .. u_{G-1} u_h] the recurrent product
// without bias ([N, (G+1)d]). PyTorch runs this as about a dozen operations forward and
// more backward, each with its own temporaries and autograd node, and draws the dropout
// mask with bernoulli_ (about 6 ns per element here). Here the mask is a hash of (seed,
// position): drawn again in the backward sweep instead of stored, and reproducible from
// the seed, which comes from PyTorch's generator.
#include <ATen/Parallel.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bf16_rows.h"
#include "fast_math.h"

using rnmt_kernels::float_or_bf16;
using rnmt_kernels::FloatRows;
using rnmt_kernels::sigmoid_rational;
using rnmt_kernels::tanh_rational;

namespace {

constexpr float kEps = 1e-6f;  // the DTMT code's LN epsilon (rnmt/cells/base.py LN_EPS)

// A 32-bit integer hash (xor-shift-multiply rounds) of a position and the call's key:
// uniform enough for dropout masks, and it vectorises (no table, no state).
inline uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// 1/keep for a kept unit, 0 for a dropped one; keep = 1 means no dropout.
inline float dropout_scale(uint32_t key, uint32_t position, uint32_t threshold, float inv_keep) {
  return (mix(position * 0x9e3779b9U + key) >> 8) < threshold ? inv_keep : 0.f;
}

struct Layout {
  int64_t N, d, G;
  bool has_input, linear;
  int64_t saved_width() const { return 2 * G * d + 2 * d; }  // [x^ (Gd) | s (Gd) | h~ (d) | u_h + b_h (d)]
};

Layout check(const c10::optional<torch::Tensor>& px, const torch::Tensor& rec, const torch::Tensor& state,
             int64_t gates, bool linear) {
  TORCH_CHECK(gates == 2 || gates == 3, "ln_gates: 2 or 3 gates");
  TORCH_CHECK(rec.dim() == 2 && state.dim() == 2, "ln_gates: expected 2-d tensors");
  Layout l{state.size(0), state.size(1), gates, px.has_value(), linear};
  // (the linear term's gate is the third: with two, its reads and writes would leave the rows)
  TORCH_CHECK(!linear || (l.has_input && gates == 3), "ln_gates: the linear term needs the projected input and 3 gates");
  TORCH_CHECK(rec.size(0) == l.N && rec.size(1) == (gates + 1) * l.d, "ln_gates: recurrent product shape");
  // p and u may be bf16 (the products' dtype under CPU bf16 autocast), read widened (bf16_rows.h)
  TORCH_CHECK(float_or_bf16(rec) && state.scalar_type() == torch::kFloat,
              "ln_gates: float32 state, float32 or bfloat16 recurrent product");
  TORCH_CHECK(rec.stride(1) == 1 && state.stride(1) == 1, "ln_gates: rows must be dense");
  if (l.has_input) {
    TORCH_CHECK(px->dim() == 2 && px->size(0) == l.N && px->size(1) == (gates + 1 + (linear ? 1 : 0)) * l.d,
                "ln_gates: projected input shape");
    TORCH_CHECK(float_or_bf16(*px) && px->stride(1) == 1, "ln_gates: projected input float32 or bfloat16, dense rows");
  }
  return l;
}

uint32_t dropout_threshold(double keep) { return static_cast<uint32_t>(keep * 16777216.0); }  // of 2^24

}  // namespace

// Returns {h' [N, d], saved [N, 2Gd + 2d], rstd [N, G]} (saved and rstd for the backward).
// ``group_rows`` > 0: consecutive blocks of that many rows are different units of the same
// kind stepping together (``Cell.lockstep``), block i using the i-th row of gain, offset and
// b_h ([groups, Gd], [groups, Gd], [groups, d]); 0: one unit, one set of parameters.
std::vector<torch::Tensor> ln_gates_forward(const c10::optional<torch::Tensor>& px, const torch::Tensor& rec,
                                            const torch::Tensor& state, const torch::Tensor& gain,
                                            const torch::Tensor& offset, const torch::Tensor& bias_h, int64_t gates,
                                            bool linear, double keep, int64_t seed, int64_t group_rows) {
  const Layout L = check(px, rec, state, gates, linear);
  const int64_t N = L.N, d = L.d, G = L.G;
  const int64_t groups = group_rows > 0 ? bias_h.numel() / d : 1;
  TORCH_CHECK(group_rows <= 0 || groups * group_rows == N, "ln_gates: rows must split evenly into the groups");
  TORCH_CHECK(gain.numel() == groups * G * d && offset.numel() == groups * G * d && bias_h.numel() == groups * d &&
              gain.is_contiguous() && offset.is_contiguous() && bias_h.is_contiguous(),
              "ln_gates: parameter shapes");
  const int64_t per_group = group_rows > 0 ? group_rows : N;
  auto out = torch::empty({N, d}, state.options());
  auto saved = torch::empty({N, L.saved_width()}, state.options());
  auto rstd = torch::empty({N, G}, state.options());
  const FloatRows P = L.has_input ? FloatRows(*px) : FloatRows(), U(rec);
  const bool has_p = L.has_input;
  const float* const hp = state.data_ptr<float>();
  const float* const gp = gain.data_ptr<float>();
  const float* const op = offset.data_ptr<float>();
  const float* const bp = bias_h.data_ptr<float>();
  float* const outp = out.data_ptr<float>();
  float* const sp = saved.data_ptr<float>();
  float* const rp = rstd.data_ptr<float>();
  const int64_t hs = state.stride(0), W = L.saved_width();
  const bool drop = keep < 1.0;
  const uint32_t threshold = dropout_threshold(keep), key = mix(static_cast<uint32_t>(seed));
  const float inv_keep = static_cast<float>(1.0 / keep);
  at::parallel_for(0, N, 8, [=](int64_t begin, int64_t end) {
    std::vector<float> p_buffer(P.buffer_size()), u_buffer(U.buffer_size());
    for (int64_t n = begin; n < end; ++n) {
      const float* __restrict__ u = U.row(n, u_buffer.data());
      const float* __restrict__ p = has_p ? P.row(n, p_buffer.data()) : u;  // never null (gru_gates.cpp, sweep)
      const float* __restrict__ h = hp + n * hs;
      float* __restrict__ xhat = sp + n * W;
      float* __restrict__ s = xhat + G * d;
      float* __restrict__ c = s + G * d;
      float* __restrict__ uh = c + d;
      const int64_t group = n / per_group;
      const float* __restrict__ bh = bp + group * d;
      for (int64_t k = 0; k < G; ++k) {
        float* __restrict__ x = xhat + k * d;
        float sum = 0.f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < d; ++j) {
          x[j] = u[k * d + j] + (has_p ? p[k * d + j] : 0.f);
          sum += x[j];
        }
        const float mean = sum / d;
        float var = 0.f;
#pragma omp simd reduction(+ : var)
        for (int64_t j = 0; j < d; ++j) {
          x[j] -= mean;
          var += x[j] * x[j];
        }
        const float r = 1.f / std::sqrt(var / d + kEps);
        rp[n * G + k] = r;
        const float* __restrict__ g = gp + (group * G + k) * d;
        const float* __restrict__ o = op + (group * G + k) * d;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) {
          x[j] *= r;
          s[k * d + j] = sigmoid_rational(x[j] * g[j] + o[j]);
        }
      }
      float* __restrict__ o = outp + n * d;
      const uint32_t row = static_cast<uint32_t>(n * d);
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) {
        const float r = s[j], z = s[d + j];
        uh[j] = u[G * d + j] + bh[j];
        float cand = tanh_rational((has_p ? p[G * d + j] : 0.f) + r * uh[j]);
        c[j] = cand;
        if (linear) cand += s[2 * d + j] * p[(G + 1) * d + j];
        const float m = drop ? dropout_scale(key, row + static_cast<uint32_t>(j), threshold, inv_keep) : 1.f;
        o[j] = h[j] + z * (m * cand - h[j]);
      }
    }
  });
  return {out, saved, rstd};
}

// Returns {grad of p ([N, P], empty without input), grad of u ([N, (G+1)d]), grad of h through
// the interpolation ([N, d]), per-row grads of the LN gain and offset ([N, Gd] each)}; the
// bias b_h's per-row grad equals u_h's.
std::vector<torch::Tensor> ln_gates_backward(const torch::Tensor& grad, const c10::optional<torch::Tensor>& px,
                                             const torch::Tensor& state, const torch::Tensor& saved,
                                             const torch::Tensor& rstd, const torch::Tensor& gain, int64_t gates,
                                             bool linear, double keep, int64_t seed, int64_t group_rows) {
  const int64_t N = state.size(0), d = state.size(1), G = gates;
  const int64_t per_group = group_rows > 0 ? group_rows : N;
  const bool has_input = px.has_value();
  const Layout L{N, d, G, has_input, linear};
  TORCH_CHECK(!linear || (has_input && G == 3), "ln_gates: the linear term needs the projected input and 3 gates");
  TORCH_CHECK(grad.sizes() == state.sizes() && saved.size(0) == N && saved.size(1) == L.saved_width() &&
              saved.is_contiguous() && rstd.is_contiguous() && state.stride(1) == 1,
              "ln_gates: backward shapes");
  TORCH_CHECK(!has_input || (float_or_bf16(*px) && px->dim() == 2 && px->size(0) == N && px->stride(1) == 1),
              "ln_gates: backward projected input");
  const auto dn_all = grad.contiguous();
  const int64_t P = has_input ? px->size(1) : 0;
  auto grad_p = torch::empty({has_input ? N : 0, P}, state.options());
  auto grad_u = torch::empty({N, (G + 1) * d}, state.options());
  auto grad_h = torch::empty({N, d}, state.options());
  auto grad_gain = torch::empty({N, G * d}, state.options());
  auto grad_offset = torch::empty({N, G * d}, state.options());
  const float* const dp = dn_all.data_ptr<float>();
  // only the linear term reads p here (bf16 under autocast, widened as in the forward)
  const FloatRows p_rows = linear ? FloatRows(*px) : FloatRows();
  const float* const hp = state.data_ptr<float>();
  const float* const sp = saved.data_ptr<float>();
  const float* const rp = rstd.data_ptr<float>();
  const float* const gp = gain.data_ptr<float>();
  float* const gpp = has_input ? grad_p.data_ptr<float>() : nullptr;
  auto spare_row = torch::empty({has_input ? 0 : (G + 1) * d}, state.options());
  float* const spare = has_input ? nullptr : spare_row.data_ptr<float>();
  float* const gup = grad_u.data_ptr<float>();
  float* const ghp = grad_h.data_ptr<float>();
  float* const ggp = grad_gain.data_ptr<float>();
  float* const gop = grad_offset.data_ptr<float>();
  const int64_t hs = state.stride(0), W = L.saved_width();
  const bool drop = keep < 1.0;
  const uint32_t threshold = dropout_threshold(keep), key = mix(static_cast<uint32_t>(seed));
  const float inv_keep = static_cast<float>(1.0 / keep);
  at::parallel_for(0, N, 8, [=](int64_t begin, int64_t end) {
    std::vector<float> p_buffer(p_rows.buffer_size());
    for (int64_t n = begin; n < end; ++n) {
      const float* __restrict__ dn = dp + n * d;
      const float* __restrict__ h = hp + n * hs;
      const float* __restrict__ xhat = sp + n * W;
      const float* __restrict__ p = linear ? p_rows.row(n, p_buffer.data()) : xhat;  // never null, as in the forward
      const float* __restrict__ s = xhat + G * d;
      const float* __restrict__ c = s + G * d;
      const float* __restrict__ uh = c + d;
      float* __restrict__ gpr = gpp != nullptr ? gpp + n * P : spare;  // never written without input
      float* __restrict__ gu = gup + n * (G + 1) * d;
      float* __restrict__ gh = ghp + n * d;
      float* __restrict__ gg = ggp + n * G * d;
      float* __restrict__ go = gop + n * G * d;
      const uint32_t row = static_cast<uint32_t>(n * d);
      // The candidate and the sigmoids' outputs first: dy_k (into go) = ds_k * s_k (1 - s_k).
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) {
        const float r = s[j], z = s[d + j];
        const float m = drop ? dropout_scale(key, row + static_cast<uint32_t>(j), threshold, inv_keep) : 1.f;
        const float cand = c[j] + (linear ? s[2 * d + j] * p[(G + 1) * d + j] : 0.f);
        const float dcand = dn[j] * z * m;
        const float dc = dcand * (1.f - c[j] * c[j]);  // through tanh
        gh[j] = dn[j] * (1.f - z);
        go[j] = dc * uh[j] * r * (1.f - r);
        go[d + j] = dn[j] * (m * cand - h[j]) * z * (1.f - z);
        if (linear) {
          const float l = s[2 * d + j];
          go[2 * d + j] = dcand * p[(G + 1) * d + j] * l * (1.f - l);
          gpr[(G + 1) * d + j] = dcand * l;
        }
        gu[G * d + j] = dc * r;
        if (gpp != nullptr) gpr[G * d + j] = dc;
      }
      // Through each gate's LN: da = rstd * (dx^ - mean(dx^) - x^ mean(dx^ x^)), dx^ = dy * g.
      for (int64_t k = 0; k < G; ++k) {
        const float* __restrict__ x = xhat + k * d;
        const float* __restrict__ g = gp + ((n / per_group) * G + k) * d;
        float* __restrict__ dy = go + k * d;
        float sum = 0.f, dot = 0.f;
#pragma omp simd reduction(+ : sum, dot)
        for (int64_t j = 0; j < d; ++j) {
          const float dx = dy[j] * g[j];
          sum += dx;
          dot += dx * x[j];
        }
        const float r = rp[n * G + k], mean = sum / d, mean_dot = dot / d;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) {
          const float da = r * (dy[j] * g[j] - mean - x[j] * mean_dot);
          gg[k * d + j] = dy[j] * x[j];
          gu[k * d + j] = da;
          if (gpp != nullptr) gpr[k * d + j] = da;
        }
      }
    }
  });
  return {grad_p, grad_u, grad_h, grad_gain, grad_offset};
}
