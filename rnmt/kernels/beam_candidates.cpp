// A search step's choice straight from the output layer's logits (rnmt/search/fused_step.py):
// each sentence's k best one-word extensions, where extending hypothesis i of sentence s
// (score scores[s, i], row r = s * K + i) with word w scores
//     scores[s, i] + log_softmax(logits[r])[w].
// In PyTorch operations this is a log_softmax that writes the [R x V] log-probabilities, the
// masking of the special words, an addition of the scores into another [R x V] tensor and
// the block pre-selection of rnmt/search/beam.py (a max per block and two topk): six passes
// over R x V floats for at most 2K numbers per sentence. Here each live row is read three
// times (its maximum, its sum of exponentials, the selection) and nothing of size V is
// written. Rows whose score is -inf (the first step's copies of the start, a finished
// sentence's rows) are not read at all.
//
// The selection keeps the k best candidates in a small sorted array; a chunk of 16
// candidates is looked at one by one only when its largest beats the k-th best so far,
// which after the first few chunks is rare. Equal candidates keep index order (row, then
// word), as a stable sort would. The log-sum-exp is computed like PyTorch's log_softmax
// (maximum, then log of the sum of exp(x - max), subtracted from x - max) but its sum runs
// in another order and exp is the C library's vector exp, so a log-probability can differ
// from PyTorch's in its last bits (tests/unit/test_fused_step.py bounds it).
//
// flags[r] (optional, uint8): bit 0 -- only the end of sentence may follow (the length
// limit: it keeps its own log-probability); bit 1 -- the end of sentence may not follow (a
// minimum length). Words in `excluded` (padding, the start symbol) never follow.
#include <ATen/Parallel.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace {

constexpr int64_t CHUNK = 16;

// The k best (value, flat index) so far, best first; `count` of them are filled.
struct Best {
  float* value;
  int64_t* index;
  int64_t k;
  int64_t count = 0;

  void offer(float v, int64_t i) {
    if (count == k && !(v > value[k - 1])) return;
    int64_t pos = count < k ? count : k - 1;  // the slot the candidate takes before moving up
    while (pos > 0 && v > value[pos - 1]) {  // strictly: an equal earlier candidate stays ahead
      value[pos] = value[pos - 1];
      index[pos] = index[pos - 1];
      --pos;
    }
    value[pos] = v;
    index[pos] = i;
    if (count < k) ++count;
  }
};

// log of the sum of exp(x - most) over the row, and `most`, the row's maximum.
inline void log_sum_exp(const float* __restrict__ x, int64_t V, float* most_out, float* log_sum_out) {
  float most = std::numeric_limits<float>::lowest();
#pragma omp simd reduction(max : most)
  for (int64_t j = 0; j < V; ++j) most = x[j] > most ? x[j] : most;
  float total = 0.f;
#pragma omp simd reduction(+ : total)
  for (int64_t j = 0; j < V; ++j) total += std::exp(x[j] - most);
  *most_out = most;
  *log_sum_out = std::log(total);
}

// Offer row `row`'s candidates score + ((x - most) - log_sum) to `best`. Compiled without
// reassociation (the build's -ffast-math would hoist score - most - log_sum out of the loop and
// round each candidate at the score's magnitude twice, a drift of 1e-3 over a 150-word search).
__attribute__((optimize("no-associative-math"))) void select_row(const float* __restrict__ x, int64_t V, float score, float most, float log_sum,
                       const unsigned char* __restrict__ skip, int64_t row, Best& best) {
  float buf[CHUNK];
  for (int64_t j0 = 0; j0 < V; j0 += CHUNK) {
    const int64_t n = std::min(CHUNK, V - j0);
    float top = std::numeric_limits<float>::lowest();
#pragma omp simd reduction(max : top)
    for (int64_t j = 0; j < n; ++j) {
      buf[j] = score + ((x[j0 + j] - most) - log_sum);
      top = buf[j] > top ? buf[j] : top;
    }
    if (best.count == best.k && !(top > best.value[best.k - 1])) continue;
    for (int64_t j = 0; j < n; ++j) {
      if (!skip[j0 + j]) best.offer(buf[j], row * V + j0 + j);
    }
  }
}

}  // namespace

// Returns {values [b, k] float32, beam [b, k] int64, word [b, k] int64}, best first; a slot
// with no finite candidate holds -inf, beam 0 and word 0.
std::vector<torch::Tensor> beam_candidates(const torch::Tensor& logits, const torch::Tensor& scores, int64_t k,
                                           const torch::Tensor& excluded, const c10::optional<torch::Tensor>& flags,
                                           int64_t eos) {
  TORCH_CHECK(logits.dim() == 2 && logits.is_contiguous() && logits.scalar_type() == torch::kFloat,
              "beam_candidates: logits must be a dense float32 [R, V]");
  TORCH_CHECK(scores.dim() == 2 && scores.is_contiguous() && scores.scalar_type() == torch::kFloat,
              "beam_candidates: scores must be a dense float32 [b, K]");
  const int64_t b = scores.size(0), K = scores.size(1), V = logits.size(1);
  TORCH_CHECK(logits.size(0) == b * K, "beam_candidates: logits must have b * K rows");
  TORCH_CHECK(k >= 1 && k <= K * V, "beam_candidates: k must be in [1, K * V]");
  TORCH_CHECK(eos >= 0 && eos < V, "beam_candidates: end of sentence id out of range");
  TORCH_CHECK(excluded.dim() == 1 && excluded.scalar_type() == torch::kLong, "beam_candidates: excluded must be int64");
  const unsigned char* fp = nullptr;
  torch::Tensor flag_t;
  if (flags.has_value()) {
    flag_t = flags->contiguous();
    TORCH_CHECK(flag_t.dim() == 1 && flag_t.size(0) == b * K && flag_t.scalar_type() == torch::kByte,
                "beam_candidates: flags must be uint8 [R]");
    fp = flag_t.data_ptr<unsigned char>();
  }
  std::vector<unsigned char> skip(V, 0);
  const auto ex = excluded.contiguous();
  for (int64_t i = 0; i < ex.size(0); ++i) {
    const int64_t w = ex.data_ptr<int64_t>()[i];
    TORCH_CHECK(w >= 0 && w < V, "beam_candidates: excluded id out of range");
    skip[w] = 1;
  }
  std::vector<unsigned char> skip_eos(skip);
  skip_eos[eos] = 1;

  auto values = torch::full({b, k}, -std::numeric_limits<float>::infinity(), scores.options());
  auto index = torch::zeros({b, k}, scores.options().dtype(torch::kLong));
  const float* const xp = logits.data_ptr<float>();
  const float* const sp = scores.data_ptr<float>();
  float* const vp = values.data_ptr<float>();
  int64_t* const ip = index.data_ptr<int64_t>();
  const unsigned char* const skip_specials = skip.data();
  const unsigned char* const skip_specials_and_eos = skip_eos.data();
  at::parallel_for(0, b, 1, [=](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      Best best{vp + s * k, ip + s * k, k};
      for (int64_t i = 0; i < K; ++i) {
        const int64_t r = s * K + i;
        const float score = sp[r];
        if (!(score > -1e30f)) continue;  // -inf: a row that is not searching
        const unsigned char f = fp ? fp[r] : 0;
        const float* x = xp + r * V;
        float most, log_sum;
        log_sum_exp(x, V, &most, &log_sum);
        if (f & 1) {  // only the end of sentence, with its own log-probability
          if (!(f & 2)) best.offer(score + ((x[eos] - most) - log_sum), i * V + eos);
        } else {
          select_row(x, V, score, most, log_sum, (f & 2) ? skip_specials_and_eos : skip_specials, i, best);
        }
      }
    }
  });
  // Flat index within the sentence (row i of K, word w) -> beam i, word w.
  auto beam = index.div(V, "floor");
  auto word = index.remainder(V);
  return {values, beam, word};
}
