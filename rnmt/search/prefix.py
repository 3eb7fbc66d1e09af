"""Target prefixes: outputs that start with given words, the search continuing after them.

`PrefixForced` wraps a model so that, until a row has produced its sentence's prefix, its
step allows only the prefix's next subword (with the model's own log-probability, so scores
stay log p(prefix + continuation | source)). The prefix subwords and each row's position in
them travel in the memory and state dicts, which every search already repeats, reorders
and compacts, so greedy search, beam search and sampling all honour prefixes without
knowing about them (as `rnmt.search.ensemble` drives several models as one).

A prefix is encoded with the target vocabulary like any target text, so it should end at a
word boundary: a prefix cut inside a word forces a segmentation the model rarely saw.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from rnmt.models.base import TensorDict, TranslationModel

TOKENS = "prefix.tokens"  # memory: [B, P] prefix subwords, -1 after a sentence's prefix
POSITION = "prefix.position"  # state: [R] the next output position of each row


class PrefixForced(TranslationModel):
    """``model`` whose outputs start with the given prefixes (one id list per sentence)."""

    def __init__(self, model: TranslationModel, prefixes: Sequence[Sequence[int]], device: torch.device) -> None:
        super().__init__()
        self.inner = model
        self.pad_id, self.bos_id, self.eos_id = model.pad_id, model.bos_id, model.eos_id
        self.beam_shares_memory = model.beam_shares_memory
        width = max((len(p) for p in prefixes), default=0)
        tokens = torch.full((len(prefixes), max(width, 1)), -1, dtype=torch.long)
        for b, ids in enumerate(prefixes):
            tokens[b, :len(ids)] = torch.tensor(list(ids), dtype=torch.long)
        self.tokens = tokens.to(device)

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        return {**self.inner.encode(src, src_mask), TOKENS: self.tokens}

    def init_state(self, memory: TensorDict) -> TensorDict:
        state = self.inner.init_state(_without(memory, TOKENS))
        return {**state, POSITION: torch.zeros(memory[TOKENS].size(0), dtype=torch.long,
                                               device=memory[TOKENS].device)}

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> Tuple[Tensor, TensorDict, TensorDict]:
        log_probs, new_state, extras = self.inner.step(prev_tokens, _without(state, POSITION),
                                                       _without(memory, TOKENS))
        tokens, position = memory[TOKENS], state[POSITION]
        rows = position.size(0)
        group = rows // tokens.size(0)  # rows per memory row: K with a shared memory, else 1
        sent = torch.arange(rows, device=position.device) // group
        forced = tokens[sent, position.clamp(max=tokens.size(1) - 1)]
        forced = forced.masked_fill(position >= tokens.size(1), -1)
        active = torch.nonzero(forced >= 0).squeeze(1)
        if active.numel():
            words = forced[active]
            keep = log_probs[active, words]
            log_probs[active] = float("-inf")
            log_probs[active, words] = keep
        return log_probs, {**new_state, POSITION: position + 1}, extras


def _without(tree: TensorDict, key: str) -> TensorDict:
    return {k: v for k, v in tree.items() if k != key}


def with_prefixes(model: TranslationModel, prefixes: Sequence[Sequence[int]], max_len: Tensor,
                  device: torch.device) -> Tuple[TranslationModel, Tensor]:
    """The model to search with and the length limits, raised where a prefix needs it (the
    prefix and an end of sentence always fit). No prefix in the batch: the model itself."""
    if not any(prefixes):
        return model, max_len
    needed = torch.tensor([len(p) + 1 for p in prefixes], dtype=max_len.dtype, device=max_len.device)
    return PrefixForced(model, prefixes, device), torch.maximum(max_len, needed)


def normalize_prefix(text: str) -> str:
    """A prefix as outputs start with it: whitespace runs as one space, none at the ends."""
    return " ".join(text.split())


def restore_prefix(output: str, decoded_prefix: str, prefix: str) -> str:
    """``output`` with its first ``decoded_prefix`` characters (the prefix subwords decoded)
    written as the user's ``prefix`` (normalised), so that characters the vocabulary cannot
    spell (decoded as ``⁇``) come back as given."""
    given = normalize_prefix(prefix)
    if given and decoded_prefix and output.startswith(decoded_prefix):
        return given + output[len(decoded_prefix):]
    return output


def encode_prefixes(prefixes: Optional[Sequence[str]], count: int, encode) -> Optional[List[List[int]]]:
    """Subword ids of each prefix (``[]`` for an empty one); None without prefixes."""
    if prefixes is None:
        return None
    if len(prefixes) != count:
        raise ValueError(f"{len(prefixes)} prefixes for {count} lines")
    return [encode(p) if p.strip() else [] for p in prefixes]
