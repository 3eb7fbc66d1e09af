"""The attention modules' per-step operations through the fused score kernel and the
deferred-gradient step functions: the fast variant of `rnmt.modules.scores.AttentionSteps`.

In a training pass (`rnmt.deferred_grads`) the query's projection defers its weight
gradient to one buffer per pass (`linear_step`), the read of the values computes the
values' gradient as one batched product at the end (`step_bmm`), and the score kernel adds
each step's key gradient in place to the keys' buffer (`rnmt.fast.scores`). Outside a pass
they are the plain operations, the scores through the C++ kernel where it applies.
"""

from __future__ import annotations

from torch import Tensor, nn

from rnmt.deferred_grads import linear_step, step_bmm
from rnmt.fast import scores
from rnmt.fast.registry import variant
from rnmt.modules.scores import AttentionSteps


@variant(AttentionSteps)
class FastAttentionSteps(AttentionSteps):
    def step_linear(self, x: Tensor, layer: nn.Module) -> Tensor:
        return linear_step(x, layer)

    def scores(self, keys: Tensor, query: Tensor, v: Tensor, heads: int = 1) -> Tensor:
        return scores.additive_scores(keys, query, v, heads)

    def read(self, weights: Tensor, values: Tensor) -> Tensor:
        return step_bmm(weights, values)

    def keys_for_scores(self, keys: Tensor) -> Tensor:
        return scores.keys_for_scores(keys)
