// Python bindings of rnmt's C++ kernels (one extension module for all of them).
#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <atomic>
#include <vector>

torch::Tensor scores_forward(const torch::Tensor& keys, const torch::Tensor& query, const torch::Tensor& v,
                             int64_t heads);
std::vector<torch::Tensor> scores_backward(const torch::Tensor& grad, const torch::Tensor& keys,
                                           const torch::Tensor& query, const torch::Tensor& v, int64_t heads,
                                           const c10::optional<torch::Tensor>& into);
torch::Tensor gru_gates_inference(const torch::Tensor& px, const torch::Tensor& rec, const torch::Tensor& state,
                                  const c10::optional<torch::Tensor>& mask);
std::vector<torch::Tensor> gru_gates_forward(const torch::Tensor& px, const torch::Tensor& rec,
                                             const torch::Tensor& state, const c10::optional<torch::Tensor>& mask);
std::vector<torch::Tensor> gru_gates_backward(const torch::Tensor& grad, const torch::Tensor& state,
                                              const torch::Tensor& saved, const c10::optional<torch::Tensor>& mask);
std::vector<torch::Tensor> ln_gates_forward(const c10::optional<torch::Tensor>& px, const torch::Tensor& rec,
                                            const torch::Tensor& state, const torch::Tensor& gain,
                                            const torch::Tensor& offset, const torch::Tensor& bias_h, int64_t gates,
                                            bool linear, double keep, int64_t seed, int64_t group_rows);
std::vector<torch::Tensor> ln_gates_backward(const torch::Tensor& grad, const c10::optional<torch::Tensor>& px,
                                             const torch::Tensor& state, const torch::Tensor& saved,
                                             const torch::Tensor& rstd, const torch::Tensor& gain, int64_t gates,
                                             bool linear, double keep, int64_t seed, int64_t group_rows);
std::vector<torch::Tensor> smoothed_nll_forward(const torch::Tensor& scores, const torch::Tensor& target);
torch::Tensor smoothed_nll_backward(const torch::Tensor& scores, const torch::Tensor& lse, const torch::Tensor& target,
                                    const torch::Tensor& p_coef, const torch::Tensor& off_coef,
                                    const torch::Tensor& gold_coef);
std::vector<torch::Tensor> beam_candidates(const torch::Tensor& logits, const torch::Tensor& scores, int64_t k,
                                           const torch::Tensor& excluded, const c10::optional<torch::Tensor>& flags,
                                           int64_t eos);
void onednn_matmul(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, double beta);

// How many threads at::parallel_for gives a loop here (1 when the build lacks OpenMP).
int64_t parallel_threads() {
  std::atomic<int64_t> most{1};
  at::parallel_for(0, 1024, 1, [&](int64_t, int64_t) {
    const int64_t mine = at::get_thread_num() + 1;
    int64_t seen = most.load();
    while (mine > seen && !most.compare_exchange_weak(seen, mine)) {
    }
  });
  return most.load();
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("parallel_threads", &parallel_threads, "threads a parallel loop of this build uses");
  m.def("scores_forward", &scores_forward, "additive attention scores (forward)");
  m.def("scores_backward", &scores_backward, "additive attention scores (backward)", py::arg("grad"),
        py::arg("keys"), py::arg("query"), py::arg("v"), py::arg("heads"), py::arg("into") = py::none());
  m.def("gru_gates_inference", &gru_gates_inference, "the GRU's element-wise step without autograd",
        py::arg("px"), py::arg("rec"), py::arg("state"), py::arg("mask") = py::none());
  m.def("gru_gates_forward", &gru_gates_forward, "the GRU's element-wise step, keeping its gates",
        py::arg("px"), py::arg("rec"), py::arg("state"), py::arg("mask") = py::none());
  m.def("gru_gates_backward", &gru_gates_backward, "gradients of gru_gates_forward", py::arg("grad"),
        py::arg("state"), py::arg("saved"), py::arg("mask") = py::none());
  m.def("ln_gates_forward", &ln_gates_forward, "the layer-normalised gated units' element-wise step");
  m.def("ln_gates_backward", &ln_gates_backward, "gradients of ln_gates_forward");
  m.def("beam_candidates", &beam_candidates, "a search step's k best extensions per sentence from the logits",
        py::arg("logits"), py::arg("scores"), py::arg("k"), py::arg("excluded"), py::arg("flags") = py::none(),
        py::arg("eos"));
  m.def("smoothed_nll_forward", &smoothed_nll_forward, "log-sum-exp, row sum and gold score of each row");
  m.def("onednn_matmul", &onednn_matmul, "out = beta * out + a @ b in fp32 through oneDNN", py::arg("out"),
        py::arg("a"), py::arg("b"), py::arg("beta"));
  m.def("smoothed_nll_backward", &smoothed_nll_backward, "the label-smoothed loss's gradient in one pass");
}
