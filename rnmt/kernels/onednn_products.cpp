// fp32 matrix products through oneDNN, the library PyTorch already carries for its bf16 and
// int8 products. PyTorch sends fp32 products to its BLAS (MKL in the x86 wheels), which on
// AMD processors runs its AVX2 code: on a Zen 5 with AVX-512 oneDNN's fp32 kernels ran
// 2.2-2.7x faster at the shapes rnmt multiplies (docs/performance.md, "fp32 products through
// oneDNN"). Same IEEE fp32 arithmetic (no down-conversion: PyTorch's fp32 math mode stays
// strict unless torch.backends.mkldnn.matmul.fp32_precision says otherwise), a different
// summation order.
#include <torch/extension.h>

namespace at {
namespace native {
// Declared in ATen/native/mkldnn/Matmul.h, which the wheel does not ship; exported by
// libtorch_cpu. result = beta * result + alpha * (mat1 @ mat2), 2-D or 3-D (batched).
TORCH_API void mkldnn_matmul(const Tensor& mat1, const Tensor& mat2, const Tensor& result, float beta, float alpha);
}  // namespace native
}  // namespace at

// out = beta * out + a @ b for fp32 CPU tensors, [M, K] x [K, N] -> [M, N] or batched
// [G, M, K] x [G, K, N] -> [G, M, N]; any strides (transposed views included).
void onednn_matmul(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, double beta) {
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat && out.scalar_type() == at::kFloat,
              "onednn_matmul: float32 tensors only");
  TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu() && out.device().is_cpu(), "onednn_matmul: CPU tensors only");
  TORCH_CHECK(a.dim() == b.dim() && a.dim() == out.dim() && (a.dim() == 2 || a.dim() == 3),
              "onednn_matmul: 2-D or 3-D operands of one rank");
  if (out.numel() == 0) return;
  if (a.size(-1) == 0) {  // an empty sum
    if (beta == 0.0) out.zero_(); else out.mul_(beta);
    return;
  }
  at::native::mkldnn_matmul(a, b, out, static_cast<float>(beta), 1.0f);
}
