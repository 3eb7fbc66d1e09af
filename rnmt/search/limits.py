"""How long a translation may be, and what happens to a source line too long for it.

One rule for `rnmt translate`, the Python API and the server: an output has at most

    min(floor(source length * search.max_len_ratio) + search.max_len_offset, max_output_tokens)

subwords, end-of-sentence mark included, where the source length counts its end mark
too; ``max_output_tokens`` defaults to `MAX_OUTPUT_TOKENS` everywhere (the server's
``--max-output-tokens``). The cap bounds the work a line can cause whatever its length.

The cap alone would cut off the translation of a long line, so the command line and the
API also translate a source line longer than ``max_input_tokens`` subwords in pieces:
cut after a sentence end where there is one in the second half of the piece, else before
a word, never inside one unless a single word is longer than a piece. Each piece is
translated on its own and the translations are joined with a space: one output line per
input line. The default piece length is the longest source whose output limit fits under
the cap, so no piece's translation is cut short by it. The server does not split: it
refuses a request over ``--max-request-tokens`` (413) instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

# The rules that need no tensors are the torch-free runtime's, shared so that both decode alike.
from rnmt_runtime.limits import (  # noqa: F401  (re-exported: rnmt's modules import them from here)
    MAX_OUTPUT_TOKENS,
    MAX_SEARCH_ROWS,
    MAX_SEARCH_SCORES,
    default_input_limit,
    ends_sentence,
    search_rows,
    sentences_per_batch,
    split_source,
)

if TYPE_CHECKING:  # tensors come in from the caller: the limits are read without loading PyTorch
    import torch


def output_limits(src_len: torch.Tensor, ratio: float, offset: int, cap: Optional[int]) -> torch.Tensor:
    """The longest output (subwords, end mark included) of each source of ``src_len``
    subwords (end mark included): ``ratio * length + offset``, at most ``cap``, at least 1."""
    # Each term clamped to the cap first: a large ratio (1e300 is finite) overflows float32 to
    # inf, whose cast to int64 is negative, and a large offset wraps the sum; either made the
    # limit 1, an empty output, silently. Without a cap, 2**61 stands in for none.
    most = cap if cap is not None else 2 ** 61
    scaled = (src_len.float() * ratio).clamp(max=float(most))
    return (scaled.long() + min(offset, most)).clamp(min=1, max=most)
