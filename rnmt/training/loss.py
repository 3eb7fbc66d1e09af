"""Label-smoothed cross-entropy.

The reference code of the DTMT and ATR papers (THUMT, zero) puts 1 - eps on the gold word
and eps / (V - 1) on every other word (SPEC section 0); PyTorch's built-in smoothing
spreads eps / V over all words including the gold one. We follow the papers' code.
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor

from rnmt import kernels


def label_smoothed_nll(logits: Tensor, target: Tensor, mask: Tensor, eps: float) -> Tuple[Tensor, Tensor]:
    """Sums over the real target tokens.

    Args:
        logits: [..., V] unnormalised scores.
        target: [...] gold word ids.
        mask: [...] True on real (non-padding) target positions.
        eps: smoothing mass taken from the gold word.

    Returns:
        (smoothed loss summed over tokens, plain negative log-likelihood summed over tokens).
    """
    if logits.dtype == torch.bfloat16 and _kernel(logits.reshape(-1, logits.size(-1))) is not None:
        x = logits  # the kernel reads bf16 and sums in float32: no float32 copy of the scores
    else:
        x = logits if logits.dtype == torch.float64 else logits.float()
    weight_dtype = torch.float32 if x.dtype == torch.bfloat16 else x.dtype
    return _SmoothedNLL.apply(x, target, mask.to(weight_dtype), max(float(eps), 0.0))


class _SmoothedNLL(torch.autograd.Function):
    """Both sums in one function, with the gradient written in one buffer.

    With ``lse`` the log-sum-exp of a row, ``-log p(y) = lse - x_y`` and ``-sum_v log p(v) =
    V lse - sum_v x_v``; the row's loss is ``(1 - eps - off) nll + off smooth`` with ``off =
    eps / (V - 1)``, whose gradient is ``(1 - eps - off + off V) p - (1 - eps - off) onehot(y)
    - off``. Autograd through log_softmax, gather and sum would build the same gradient from a
    zero-filled scatter, an addition and log_softmax's backward, several passes over the
    [tokens x V] scores more.
    """

    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, weight: Tensor, eps: float):
        V = logits.size(-1)
        x = logits.reshape(-1, V)
        t = target.reshape(-1, 1)
        w = weight.reshape(-1)
        ext = _kernel(x)
        if ext is not None:  # one C++ pass pair over the rows (rnmt/kernels/smoothed_nll.cpp)
            lse, row_sums, gold_scores = ext.smoothed_nll_forward(x, t.reshape(-1))
        else:
            lse, row_sums, gold_scores = torch.logsumexp(x, -1), None, x.gather(1, t).squeeze(1)
        nll = lse - gold_scores
        off = eps / (V - 1) if eps > 0 else 0.0
        if eps > 0:
            row_sums = x.sum(-1) if row_sums is None else row_sums
            loss = (1.0 - eps - off) * nll + off * (V * lse - row_sums)
        else:
            loss = nll
        ctx.save_for_backward(x, lse, t, w)
        ctx.eps, ctx.off, ctx.shape, ctx.kernel = eps, off, logits.shape, ext is not None
        return (loss * w).sum(), (nll * w).sum()

    @staticmethod
    def backward(ctx, grad_loss: Tensor, grad_nll: Tensor):
        x, lse, t, w = ctx.saved_tensors
        V = x.size(1)
        gold = 1.0 - ctx.eps - ctx.off
        p_coef = w * (grad_loss * (gold + ctx.off * V) + grad_nll)
        gold_coef = w * (grad_loss * gold + grad_nll)
        off_coef = w * grad_loss * ctx.off
        if ctx.kernel:
            grad = kernels.extension().smoothed_nll_backward(x, lse, t.reshape(-1), p_coef.contiguous(),
                                                            off_coef.contiguous(), gold_coef.contiguous())
            return grad.view(ctx.shape), None, None, None
        grad = torch.sub(x, lse.unsqueeze(1)).exp_()  # softmax
        grad.mul_(p_coef.unsqueeze(1))
        if ctx.off:
            grad.sub_(off_coef.unsqueeze(1))
        grad.scatter_add_(1, t, -gold_coef.unsqueeze(1))
        return grad.view(ctx.shape), None, None, None


def _kernel(x: Tensor):
    """The C++ extension when it applies to these scores (dense float32 or bf16 on the CPU),
    else None."""
    if x.dtype not in (torch.float32, torch.bfloat16) or x.device.type != "cpu" or not x.is_contiguous():
        return None
    return kernels.extension()
