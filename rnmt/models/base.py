"""The one interface every translation model implements.

Search, training, analysis and serving talk to models only through these methods, so they
never need to know which paper a model comes from:

* ``encode(src, src_mask) -> memory``: source states, cached attention keys, the mask.
* ``init_state(memory) -> state``: the decoder's initial state.
* ``step(prev_tokens, state, memory) -> (log_probs, state, extras)``: one decoding step;
  ``extras`` may carry attention weights (``"attention"``, [B, S]) or gate values.
* ``forward(src, src_mask, tgt_in) -> logits``: teacher-forced scores for all target
  positions at once; agrees with a loop of ``step``.

``memory`` and ``state`` are flat dicts of tensors whose first dimension is the batch, so
beam search reorders and shrinks them with `select` without asking the model. A model whose
``step`` reads the memory only through an attention that takes G queries per sentence
(`AdditiveAttention`, `MultiHeadAdditiveAttention`) sets ``beam_shares_memory``: beam search
then keeps one memory row per sentence for its K hypotheses (state rows b*K .. b*K+K-1)
instead of K copies.
"""

from __future__ import annotations

from typing import Dict, Tuple

import torch
from torch import Tensor, nn

from rnmt import deferred_grads
from rnmt.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rnmt.models.reports import Reports

TensorDict = Dict[str, Tensor]


def select(tree: TensorDict, index: Tensor) -> TensorDict:
    """Pick batch rows ``index`` from every tensor of a memory or state dict."""
    return {k: v.index_select(0, index) for k, v in tree.items()}


def repeat_rows(tree: TensorDict, times: int) -> TensorDict:
    """Repeat every batch row ``times`` times in place order (row i -> rows i*times..)."""
    return {k: v.repeat_interleave(times, dim=0) for k, v in tree.items()}


class TranslationModel(nn.Module):
    """Base class: subclasses implement encode / init_state / step / forward."""

    pad_id: int = PAD_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID
    beam_shares_memory: bool = False  # step accepts K state rows per memory row (see above)

    def __init__(self) -> None:
        super().__init__()
        # A training forward pass sums each recurrent weight's gradient over the time steps
        # in one buffer (rnmt/deferred_grads.py); decoding (step) never opens the scope.
        self.register_forward_pre_hook(deferred_grads.open_for_training)
        self.register_forward_hook(deferred_grads.close_after_forward, always_call=True)

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        raise NotImplementedError

    def init_state(self, memory: TensorDict) -> TensorDict:
        raise NotImplementedError

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> Tuple[Tensor, TensorDict, TensorDict]:
        raise NotImplementedError

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        raise NotImplementedError

    def reports(self) -> Reports:
        """What analysis may ask this model for beyond ``step``'s extras (`rnmt.models.reports`);
        a model that reports gates or traces overrides this and the methods it names."""
        return Reports()


def time_steps(x: Tensor) -> Tuple[Tensor, ...]:
    """Split [B, T, D] into T tensors [B, D] for a step loop.

    Use this instead of ``x[:, t]`` in a loop that is differentiated: indexing makes the
    backward pass allocate and zero-fill a full-size gradient for every step (quadratic in
    T), while ``unbind``'s backward stacks the step gradients once.
    """
    return x.transpose(0, 1).unbind(0)


def masked_mean(states: Tensor, mask: Tensor) -> Tensor:
    """Mean over real positions: states [B, T, D], mask [B, T] -> [B, D]."""
    m = mask.unsqueeze(-1).to(states.dtype)
    return (states * m).sum(1) / m.sum(1).clamp_min(1.0)


def uniform_init_(module: nn.Module, scale: float) -> None:
    """Uniform initialisation in [-scale, scale] of every parameter (as in the papers' code);
    layer normalisations keep their identity start (gain 1, offset 0) and padding rows of
    embeddings stay zero."""
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(-scale, scale)
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                if m.weight is not None:
                    nn.init.ones_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif hasattr(m, "reset_norm_parameters"):
                m.reset_norm_parameters()
            if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                m.weight[m.padding_idx].zero_()
