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

The lists and their file are `rnmt_runtime.shortlist`'s (numpy and JSON only, shared with
the runtime).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, cast

import torch
from torch import Tensor, nn

from rnmt import int8, products
from rnmt.data.vocab import Vocab
from rnmt.errors import UserError
from rnmt.models.base import StepLogits, TensorDict, TranslationModel
from rnmt_runtime.errors import ExportError
from rnmt_runtime.shortlist import DEFAULT_BEST, DEFAULT_FREQUENT, SPECIALS, Shortlist  # noqa: F401 (re-exported)

BUILD_ITERATIONS, BUILD_KEEP, BUILD_MIN_PROB = 5, 100, 0.001  # `rnmt shortlist`'s defaults
KEPT_FREQUENT = 1000  # frequent target subwords a file stores; a search takes the first n_frequent


def build_shortlist(pairs: Sequence[Tuple[Sequence[int], Sequence[int]]], src_vocab: Vocab, tgt_vocab: Vocab,
                    about: Dict[str, Any], iterations: int = BUILD_ITERATIONS, keep: int = BUILD_KEEP,
                    min_prob: float = BUILD_MIN_PROB,
                    progress: Optional[Callable[[str], None]] = None) -> Tuple[str, List[List[Tuple[int, float]]]]:
    """A shortlist file's text from subword id pairs (IBM Model 1, `rnmt.data.lexicon`), with
    how it was built (``about``, the settings added), and each source id's kept translations."""
    from rnmt.data import lexicon

    lex = lexicon.model1(pairs, len(src_vocab), len(tgt_vocab), iterations, progress=progress)
    best = lex.best(keep, min_prob)
    about = {**about, "sentence_pairs": len(pairs), "iterations": iterations, "keep": keep, "min_prob": min_prob}
    return Shortlist.document(lex.frequent(KEPT_FREQUENT, SPECIALS), best, src_vocab, tgt_vocab, about), best


def load_shortlist(path: str | Path, src_vocab: Vocab, tgt_vocab: Vocab) -> Shortlist:
    """`Shortlist.load` with rnmt's one-line `UserError` for a missing, foreign or malformed file."""
    try:
        return Shortlist.load(path, src_vocab, tgt_vocab)
    except ExportError as exc:
        raise UserError(str(exc)) from None


def batch_rows(shortlist: Shortlist, src: Tensor, also: Iterable[int] = ()) -> Tensor:
    """`Shortlist.rows` of a batch held as a tensor (on any device)."""
    return torch.from_numpy(shortlist.rows(src.cpu().numpy(), also))


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


def output_layer(model: nn.Module, vocab_size: int) -> nn.Module:
    """``model``'s output layer: its ``output`` child, or ``readout.output`` in the models
    with a deep output, over ``vocab_size`` words."""
    return _with_output(model, vocab_size, lambda layer: layer)[1]


def _with_output(model: nn.Module, vocab_size: int,
                 replace: Callable[[nn.Module], nn.Module]) -> Tuple[nn.Module, nn.Module]:
    """(a view of ``model`` whose output layer is ``replace(layer)``, the layer)."""
    output = model._modules.get("output")
    if output is not None and getattr(output, "out_features", None) == vocab_size:
        return _view(model, output=replace(output)), output
    readout = model._modules.get("readout")
    inner = None if readout is None else readout._modules.get("output")
    if readout is not None and inner is not None and getattr(inner, "out_features", None) == vocab_size:
        return _view(model, readout=_view(readout, output=replace(inner))), inner
    raise UserError(f"a shortlist needs the model's output layer ('output' or 'readout.output' over "
                    f"{vocab_size:,} words); {type(model).__name__} has neither")


def restrict_output(model: nn.Module, rows: Tensor, vocab_size: int) -> nn.Module:
    """``model`` with its output layer cut to ``rows``; ``model`` itself is unchanged. An
    ensemble's members are each cut the same way."""
    from rnmt.search.ensemble import Ensemble

    if isinstance(model, Ensemble):
        return Ensemble([cast(TranslationModel, restrict_output(m, rows, vocab_size)) for m in model.models])
    return _with_output(model, vocab_size, lambda layer: OutputRows(layer, rows))[0]


def readout_view(model: TranslationModel, vocab_size: int) -> TranslationModel:
    """``model`` without its output layer: its ``step_logits`` gives what the output layer
    multiplies (the readout, [R, d]) instead of the logits. What an export's readout step
    computes for a runtime that multiplies by a shortlist's rows itself (`rnmt.export`)."""
    return cast(TranslationModel, _with_output(model, vocab_size, lambda layer: nn.Identity())[0])


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
