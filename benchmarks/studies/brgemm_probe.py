"""Study. Question: Could bf16 products on an AMX CPU avoid oneDNN's per-shape kernel compilation by driving
PyTorch's brgemm micro-kernel directly?
Measured at: abd21e6.
Answer: no: its kernels build in 0.07-0.39 ms instead of 2.5-13.5, but the large products ran at
38-126% of torch.mm's rate, which costs more than the compilations save; not used
(docs/cpu-classes.md, "An Intel Xeon with AMX").

Could bf16 products skip oneDNN's per-shape kernel compilation? A probe of PyTorch's brgemm.

    python -m benchmarks.studies.brgemm_probe [--threads 2] [--reps 20]

On a CPU with AMX, oneDNN compiles a matmul kernel for every new product shape (milliseconds
each; `benchmarks/studies/onednn_creations.py`), and token batches bring new shapes at every update.
PyTorch also exports the batch-reduce GEMM micro-kernel it builds its CPU attention on
(``at::native::cpublas::brgemm``, oneDNN's ukernel): one small kernel per block shape, not
per product shape. This compiles a plain driver around it (B packed once in the pairs-of-rows
layout AMX reads, rows of A in blocks of MB, columns of B in panels of NB, blocks spread over
the threads) and prints, against ``torch.mm`` in bf16:

- the time a new micro-kernel takes to build, and the time of a matmul at a new row count
  (its first call: the primitive creation plus one product);
- each driver's GFLOP/s at rnmt's training shapes (best over MB x NB) against ``torch.mm``'s
  steady state, once its kernel is cached.

Needs a C++ compiler and a CPU where PyTorch packs bf16 for brgemm (AMX): elsewhere it says
so and stops. Results: docs/cpu-classes.md, "An Intel Xeon with AMX".
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from torch.utils.cpp_extension import load_inline

SOURCE = r"""
#include <torch/extension.h>
#include <ATen/native/CPUBlas.h>
#include <ATen/Parallel.h>
#include <chrono>
using at::BFloat16;
namespace cb = at::native::cpublas;

// w [K, N] bf16 (K even) -> panels [P][K/2][nb][2]: each panel in the pairs-of-rows layout.
torch::Tensor pack_b(const torch::Tensor& w, int64_t nb) {
  const int64_t K = w.size(0), N = w.size(1), P = (N + nb - 1) / nb;
  auto out = torch::zeros({P, K / 2, nb, 2}, w.options());
  auto src = w.accessor<BFloat16, 2>();
  BFloat16* o = out.data_ptr<BFloat16>();
  at::parallel_for(0, P, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < nb && p * nb + n < N; ++n)
          o[((p * (K / 2) + k / 2) * nb + n) * 2 + (k & 1)] = src[k][p * nb + n];
  });
  return out;
}

// a [M, K] bf16 contiguous times the packed panels -> [M, N] fp32.
torch::Tensor mm(const torch::Tensor& a, const torch::Tensor& packed, int64_t N, int64_t mb) {
  const int64_t M = a.size(0), K = a.size(1), P = packed.size(0), nb = packed.size(2);
  auto out = torch::empty({M, N}, a.options().dtype(torch::kFloat));
  const BFloat16* A = a.data_ptr<BFloat16>();
  const BFloat16* B = packed.data_ptr<BFloat16>();
  float* C = out.data_ptr<float>();
  const int64_t blocks = (M + mb - 1) / mb;
  at::parallel_for(0, blocks * P, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p = t % P, m0 = (t / P) * mb, n0 = p * nb;
      cb::brgemm(std::min(mb, M - m0), std::min(nb, N - n0), K, K, nb, N, false, A + m0 * K, B + p * K * nb,
                 C + m0 * N + n0, true);
    }
    cb::brgemm_release(true);
  });
  return out;
}

// Milliseconds of one brgemm call whose kernel is new (M, N, K not seen before in this thread).
double first_call_ms(int64_t M, int64_t N, int64_t K) {
  auto a = torch::zeros({M, K}, torch::kBFloat16);
  auto b = torch::zeros({K / 2, N, 2}, torch::kBFloat16);
  auto c = torch::zeros({M, N}, torch::kFloat);
  const auto t0 = std::chrono::steady_clock::now();
  cb::brgemm(M, N, K, K, N, N, false, a.data_ptr<BFloat16>(), b.data_ptr<BFloat16>(), c.data_ptr<float>(), true);
  cb::brgemm_release(true);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool could_pack() { return cb::could_pack(at::kBFloat16); }
"""

SHAPES = [  # (M, K, N, what)
    (64, 512, 1536, "a unit's recurrent product, 64 rows"),
    (67, 1024, 1536, "the decoder's second unit, 67 rows"),
    (4000, 256, 1536, "input projections of 4,000 tokens"),
    (1000, 512, 8000, "the output layer, 1,000 tokens"),
    (3000, 1024, 1536, "the context's projections, 3,000 tokens"),
]


def best_seconds(run, reps: int) -> float:
    run()
    start = time.perf_counter()
    for _ in range(reps):
        run()
    return (time.perf_counter() - start) / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ext = load_inline("rnmt_brgemm_probe", SOURCE, functions=["pack_b", "mm", "first_call_ms", "could_pack"],
                      extra_cflags=["-O3"], verbose=False)
    if not ext.could_pack():
        sys.exit("this CPU has no bf16 brgemm packing in PyTorch (AMX): nothing to probe")
    print(f"torch {torch.__version__}, {args.threads} threads")
    for m, n, k in [(32, 64, 512), (17, 64, 512), (32, 64, 1024), (32, 256, 256)]:
        print(f"new brgemm kernel {m} x {n} x {k}: first call {ext.first_call_ms(m, n, k):.3f} ms, "
              f"then {ext.first_call_ms(m, n, k):.3f} ms")
    weight = torch.randn(512, 1536).bfloat16()
    firsts = []
    for rows in (61, 67, 71, 73, 79):
        x = torch.randn(rows, 512).bfloat16()
        start = time.perf_counter()
        torch.mm(x, weight)
        firsts.append((time.perf_counter() - start) * 1e3)
    print("torch.mm at a new row count (x 512 x 1536), first call ms: " + ", ".join(f"{t:.2f}" for t in firsts))
    print(f"{'shape':<22} {'torch.mm GFLOP/s':>17} {'brgemm driver':>14}  best MB, NB  (what)")
    for m, k, n, what in SHAPES:
        a, w = torch.randn(m, k).bfloat16(), torch.randn(k, n).bfloat16()
        exact = a.float() @ w.float()
        flop = 2 * m * k * n
        best = (0.0, 0, 0)
        for nb in (64, 128, 256, 512):
            packed = ext.pack_b(w, nb)
            for mb in (32, 64, 128):
                out = ext.mm(a, packed, n, mb)
                assert (out - exact).abs().max() <= 1e-5 * exact.abs().max(), "the driver's product is wrong"
                rate = flop / best_seconds(lambda a=a, p=packed, n=n, mb=mb: ext.mm(a, p, n, mb), args.reps) / 1e9
                best = max(best, (rate, mb, nb))
        reference = flop / best_seconds(lambda a=a, w=w: torch.mm(a, w), args.reps) / 1e9
        print(f"{m} x {k} x {n:<10} {reference:>17.0f} {best[0]:>14.0f}  {best[1]:>3}, {best[2]:<4}  ({what})")


if __name__ == "__main__":
    main()
