"""Label-smoothed cross-entropy.

The reference code of the DTMT and ATR papers (THUMT, zero) puts 1 - eps on the gold word
and eps / (V - 1) on every other word (SPEC section 0); PyTorch's built-in smoothing
spreads eps / V over all words including the gold one. We follow the papers' code.
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor


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
    lprobs = torch.log_softmax(logits.float(), dim=-1)
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    weight = mask.to(lprobs.dtype)
    nll_sum = (nll * weight).sum()
    if eps <= 0:
        return nll_sum, nll_sum
    V = lprobs.size(-1)
    off = eps / (V - 1)
    smooth = -lprobs.sum(-1)  # sum over every class of -log p
    loss = (1.0 - eps - off) * nll + off * smooth
    return (loss * weight).sum(), nll_sum
