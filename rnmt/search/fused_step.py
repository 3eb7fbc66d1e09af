"""A search step's choice straight from the logits, in one C++ pass per row.

The plain step normalises the output layer's logits into [R x V] log-probabilities, masks
the special words, adds each hypothesis's score into another [R x V] tensor and picks each
sentence's best candidates (`rnmt.search.beam.best_extensions`). For a small model the
vocabulary is most of a step: at 8,000 subwords those passes cost a 64-unit GRU student
more than its recurrence (docs/cpu-speed.md, "Decoding"). `rnmt/kernels/beam_candidates.cpp`
does the normalisation, the masks and the selection reading each live row three times and
writing nothing of size V, and skips the rows that are not searching.

Used by greedy and beam search on the CPU when the model offers ``step_logits`` (every
model, and the minimum-length wrapper; not ensembles, blocked repeats or forced prefixes,
which change the log-probabilities themselves) and the kernels are built. Its
log-probabilities equal PyTorch's log_softmax up to float rounding (the sum of exponentials
runs in another order), so scores can differ in their last bits and a translation only
where two hypotheses tie to that precision.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from rnmt import kernels
from rnmt.models.base import StepLogits, TranslationModel

ONLY_EOS, NO_EOS = 1, 2  # the kernel's row flags


def applies(model: TranslationModel, src: Tensor) -> bool:
    """Whether a search over ``src`` with ``model`` chooses from the logits."""
    return model.offers_step_logits and not src.is_cuda and kernels.extension() is not None


def best_extensions(out: StepLogits, scores: Tensor, k: int, excluded: Tensor, eos_id: int,
                    only_eos: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
    """`rnmt.search.beam.best_extensions` of ``log_softmax(out.logits)`` with the words
    ``excluded`` never chosen, only the end of sentence in the rows ``only_eos`` ([R] bool,
    the length limit), and no end of sentence in ``out.eos_forbidden``'s rows: ``(score,
    beam, token)``, each ``[b, k]``, best first."""
    flags = None
    if only_eos is not None or out.eos_forbidden is not None:
        flags = torch.zeros(out.logits.size(0), dtype=torch.uint8)
        if only_eos is not None:
            flags |= only_eos.to(torch.uint8) * ONLY_EOS
        if out.eos_forbidden is not None:
            flags |= out.eos_forbidden.to(torch.uint8) * NO_EOS
    ext = kernels.extension()
    assert ext is not None  # `applies` said so
    values, beam, token = ext.beam_candidates(out.logits.float().contiguous(), scores.float().contiguous(), k,
                                              excluded, flags, eos_id)
    return values, beam, token
