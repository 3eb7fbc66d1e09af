"""Lexical shortlists: a batch searches over the target subwords its sources make likely.

Every search step of a recurrent model multiplies its readout by the whole output layer and
normalises over the whole vocabulary; for a small model that is most of the step (8,000
subwords against a 64-unit recurrence: docs/distill.md). A shortlist, as in Marian's
``--shortlist``, gives each batch a candidate vocabulary: the ``frequent`` most frequent
target subwords, the ``best`` most probable translations p(t | s) of each of the batch's
source subwords (IBM Model 1 over the training corpus: `rnmt.data.lexicon`, built by
``rnmt shortlist``), the special words, and the subwords of the batch's prefixes and
constraints. The output layer's rows for those words are gathered once per batch, and the
search runs over that vocabulary: its softmax normalises over the shortlist only (as
Marian's does), so scores are the shortlisted model's, and a word outside the list cannot
be produced. It is an approximation; docs/translation.md measures what it costs in BLEU
and gains in speed.

`ShortlistModel` wraps a model as `rnmt.search.prefix.PrefixForced` does: the search sees
a model whose ids are positions in the batch's sorted shortlist. The special words (ids 0-3,
`rnmt.data.vocab`) are always listed and are the smallest ids, so they keep their ids and
every search's masks and end-of-sentence rules apply unchanged; the wrapper maps each fed
back position to its vocabulary id, and the translator maps the outputs back.

The file is JSON (no code runs when it loads), keyed by pieces, with the fingerprints of
the vocabularies it was built with, so a shortlist of another model is refused by name.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, cast

import numpy as np
import torch
from torch import Tensor, nn

from rnmt import int8, products
from rnmt.data.vocab import EOS_ID, PAD_ID, Vocab
from rnmt.errors import UserError
from rnmt.models.base import StepLogits, TensorDict, TranslationModel

FORMAT = "rnmt-shortlist"
VERSION = 1
SPECIALS = tuple(range(PAD_ID, EOS_ID + 1))  # pad, unk, bos, eos: listed in every shortlist
DEFAULT_FREQUENT = 100
DEFAULT_BEST = 50


@dataclass
class Shortlist:
    """Candidate target ids: ``frequent`` (most frequent first) and, per source id, its
    most probable translations (``best[s]``, most probable first); a batch takes the first
    ``n_frequent`` of the one and the first ``n_best`` of each of its sources' others."""

    frequent: np.ndarray  # [F] target ids
    best: List[np.ndarray]  # per source id: target ids
    n_frequent: int = DEFAULT_FREQUENT
    n_best: int = DEFAULT_BEST

    def with_sizes(self, n_frequent: int, n_best: int) -> Shortlist:
        """The same lists taken at other sizes (``--shortlist-sizes``)."""
        if n_frequent < 0 or n_best < 0:
            raise UserError(f"shortlist sizes must be at least 0, got {n_frequent} frequent and {n_best} best")
        return Shortlist(self.frequent, self.best, n_frequent, n_best)

    def rows(self, src: Tensor, also: Iterable[int] = ()) -> Tensor:
        """The sorted target ids a batch of source ids ``src`` ([B, S], padding included)
        searches over, plus ``also`` (prefix and constraint subwords)."""
        ids = [np.asarray(SPECIALS), self.frequent[:self.n_frequent], np.fromiter(also, dtype=np.int64)]
        if self.n_best:
            for s in np.unique(src.cpu().numpy()):
                if 0 <= s < len(self.best):
                    ids.append(self.best[s][:self.n_best])
        return torch.from_numpy(np.unique(np.concatenate(ids).astype(np.int64)))

    # -- the file ----------------------------------------------------------------------
    @staticmethod
    def document(frequent: Sequence[int], best: Sequence[Sequence[Tuple[int, float]]], src_vocab: Vocab,
                 tgt_vocab: Vocab, about: Dict[str, Any]) -> str:
        """The shortlist file's text: the frequent target pieces, each source piece's
        translations with p(t | s), the vocabularies' fingerprints and ``about`` (how it was
        built)."""
        piece = tgt_vocab.id_to_piece
        doc = {"format": FORMAT, "version": VERSION,
               "source_vocabulary": src_vocab.fingerprint, "target_vocabulary": tgt_vocab.fingerprint,
               **about,
               "frequent": [piece(t) for t in frequent],
               "translations": {src_vocab.id_to_piece(s): [[piece(t), round(p, 6)] for t, p in pairs]
                                for s, pairs in enumerate(best) if pairs}}
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"

    @classmethod
    def load(cls, path: str | Path, src_vocab: Vocab, tgt_vocab: Vocab) -> Shortlist:
        """Read a shortlist file for a model with these vocabularies; a missing, foreign or
        malformed file is a `UserError` naming it."""
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"{path}: no such shortlist file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UserError(f"{path}: not a shortlist file ({type(exc).__name__}: {exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise UserError(f"{path}: not a shortlist file (no \"format\": \"{FORMAT}\"; rnmt shortlist writes one)")
        if doc.get("version") != VERSION:
            raise UserError(f"{path}: shortlist version {doc.get('version')!r}; this rnmt reads version {VERSION}")
        for side, vocab in (("source", src_vocab), ("target", tgt_vocab)):
            if doc.get(f"{side}_vocabulary") != vocab.fingerprint:
                raise UserError(f"{path}: built for another {side} vocabulary than this model's "
                                f"(rnmt shortlist --model MODEL builds one for it)")
        try:
            frequent = np.array([_id(tgt_vocab, p) for p in doc["frequent"]], dtype=np.int64)
            best = [np.zeros(0, dtype=np.int64) for _ in range(len(src_vocab))]
            for s, pairs in doc["translations"].items():
                best[_id(src_vocab, s)] = np.array([_id(tgt_vocab, t) for t, _ in pairs], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{path}: malformed shortlist ({type(exc).__name__}: {exc})") from None
        return cls(frequent, best)


def _id(vocab: Vocab, piece: Any) -> int:
    if not isinstance(piece, str):
        raise ValueError(f"a piece must be a string, got {piece!r}")
    i = vocab.piece_to_id(piece)
    if i == vocab.unk_id and piece != vocab.id_to_piece(vocab.unk_id):
        raise ValueError(f"piece {piece!r} is not in the vocabulary")
    return i


# -- the model over a shortlist -----------------------------------------------------------
class OutputRows(nn.Module):
    """The rows ``rows`` of an output layer (``nn.Linear`` or its int8 twin): logits for
    those words only, in their order."""

    def __init__(self, layer: nn.Module, rows: Tensor) -> None:
        super().__init__()
        self.int8: Optional[nn.Module] = None
        self.weight: Optional[Tensor] = None
        self.bias: Optional[Tensor] = None
        if int8.is_int8_linear(layer):
            self.int8 = int8.linear_rows(layer, rows)
        elif isinstance(layer, nn.Linear):
            self.weight = layer.weight.detach()[rows].contiguous()
            self.bias = None if layer.bias is None else layer.bias.detach()[rows].contiguous()
        else:
            raise UserError(f"a shortlist needs the output layer to be a linear layer, found {type(layer).__name__}")

    def forward(self, x: Tensor) -> Tensor:
        if self.int8 is not None:
            return self.int8(x)
        assert self.weight is not None
        return products.linear(x, self.weight, self.bias, transposed=True)


def _view(module: nn.Module, **children: nn.Module) -> nn.Module:
    """A shallow copy of ``module`` that shares every parameter, buffer and child with it
    except ``children``, which replace the children of those names in the copy only."""
    view = copy.copy(module)
    view._modules = dict(module._modules)  # the copy's own table of children: the original keeps its own
    view._modules.update(children)
    return view


def restrict_output(model: nn.Module, rows: Tensor, vocab_size: int) -> nn.Module:
    """``model`` with its output layer (``output``, or ``readout.output`` in the models with
    a deep output) cut to ``rows``; ``model`` itself is unchanged. An ensemble's members are
    each cut the same way."""
    from rnmt.search.ensemble import Ensemble

    if isinstance(model, Ensemble):
        return Ensemble([cast(TranslationModel, restrict_output(m, rows, vocab_size)) for m in model.models])
    output = model._modules.get("output")
    if output is not None and getattr(output, "out_features", None) == vocab_size:
        return _view(model, output=OutputRows(output, rows))
    readout = model._modules.get("readout")
    inner = None if readout is None else readout._modules.get("output")
    if readout is not None and inner is not None and getattr(inner, "out_features", None) == vocab_size:
        return _view(model, readout=_view(readout, output=OutputRows(inner, rows)))
    raise UserError(f"a shortlist needs the model's output layer ('output' or 'readout.output' over "
                    f"{vocab_size:,} words); {type(model).__name__} has neither")


class ShortlistModel(TranslationModel):
    """``model`` over the target ids ``rows`` (sorted, starting with the special words):
    the search's word i is the vocabulary's ``rows[i]``."""

    def __init__(self, model: TranslationModel, rows: Tensor, vocab_size: int) -> None:
        super().__init__()
        if rows[:len(SPECIALS)].tolist() != list(SPECIALS):
            raise ValueError("a shortlist's rows start with the special words")
        device = next(model.parameters()).device
        rows = rows.to(device)
        self.inner = cast(TranslationModel, restrict_output(model, rows, vocab_size))
        self.rows = rows
        self.pad_id, self.bos_id, self.eos_id = model.pad_id, model.bos_id, model.eos_id
        self.beam_shares_memory = model.beam_shares_memory
        self.offers_step_logits = model.offers_step_logits

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        return self.inner.encode(src, src_mask)

    def init_state(self, memory: TensorDict) -> TensorDict:
        return self.inner.init_state(memory)

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> Tuple[Tensor, TensorDict, TensorDict]:
        return self.inner.step(self.rows[prev_tokens], state, memory)

    def step_logits(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> StepLogits:
        return self.inner.step_logits(self.rows[prev_tokens], state, memory)

    def to_vocabulary(self, tokens: List[int]) -> List[int]:
        """A search output over the shortlist in vocabulary ids."""
        return self.rows.cpu()[torch.tensor(tokens, dtype=torch.long)].tolist() if tokens else []

    def to_shortlist(self, ids: Sequence[int]) -> List[int]:
        """Vocabulary ids (each in the shortlist) as the search's ids."""
        return torch.searchsorted(self.rows.cpu(), torch.tensor(list(ids), dtype=torch.long)).tolist() if ids else []
