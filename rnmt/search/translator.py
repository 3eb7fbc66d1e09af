"""Text in, text out: subword encoding, length-sorted batches, search, decoding.

Empty or whitespace-only input lines are never sent to the model; they come back as
empty translations so that line i of the output always belongs to line i of the input.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, List, Optional, Sequence

import torch

from rnmt.config import SearchConfig
from rnmt.data import Vocab, make_translation_batches, restore_order
from rnmt.models.base import TranslationModel
from rnmt.search.beam import Hypothesis, beam_search, greedy_search


@dataclass
class Translation:
    text: str
    score: float
    tokens: List[int]
    src_pieces: List[str]
    tgt_pieces: List[str]
    attention: Optional[torch.Tensor] = None  # [len(tgt_pieces) + 1, len(src_pieces) + 1] (EOS rows/cols)


class Translator:
    def __init__(self, model: TranslationModel, src_vocab: Vocab, tgt_vocab: Vocab,
                 search: SearchConfig | None = None, device: str | torch.device = "cpu") -> None:
        self.model = model
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
        self.search = search or SearchConfig()
        self.device = torch.device(device)

    def translate(self, lines: Sequence[str], greedy: bool = False, return_attention: bool = False,
                  max_output: Optional[int] = None, should_stop: Optional[Callable[[], bool]] = None,
                  **overrides) -> List[List[Translation]]:
        """N-best translations of every line (one empty translation for a blank line).

        ``overrides`` replace fields of the search config (beam, alpha, nbest, ...).
        ``max_output`` caps every output length (EOS included) whatever the source length;
        ``should_stop`` is passed to the search (it raises `SearchStopped` when it fires).
        """
        opts = replace(self.search, **{k: v for k, v in overrides.items() if v is not None})
        was_training = self.model.training
        self.model.eval()
        results: List[List[Translation]] = [[Translation("", 0.0, [], [], [])] for _ in lines]
        todo = [i for i, line in enumerate(lines) if line.strip()]
        ids = [self.src_vocab.encode(lines[i]) for i in todo]
        try:
            batch_indices, batch_results = [], []
            for idx, src, mask in make_translation_batches(ids, opts.batch_tokens):
                src, mask = src.to(self.device), mask.to(self.device)
                src_len = mask.sum(1)
                max_len = (src_len.float() * opts.max_len_ratio).long() + opts.max_len_offset
                if max_output is not None:
                    max_len = max_len.clamp(max=max(1, max_output))
                if greedy or opts.beam <= 1 and opts.nbest <= 1:
                    nbest = [[h] for h in greedy_search(self.model, src, mask, max_len, return_attention,
                                                        should_stop=should_stop)]
                else:
                    nbest = beam_search(self.model, src, mask, max_len, beam=max(opts.beam, opts.nbest),
                                        alpha=opts.alpha, normalize=opts.normalize, nbest=opts.nbest,
                                        return_attention=return_attention, should_stop=should_stop)
                batch_indices.append(idx)
                batch_results.append([[self._finish(h, ids[i]) for h in hyps] for i, hyps in zip(idx, nbest)])
            for pos, translations in zip(todo, restore_order(batch_indices, batch_results) if todo else []):
                results[pos] = translations
        finally:
            self.model.train(was_training)
        return results

    def translate_best(self, lines: Sequence[str], **kwargs) -> List[str]:
        return [nbest[0].text for nbest in self.translate(lines, **kwargs)]

    def _finish(self, hyp: Hypothesis, src_ids: List[int]) -> Translation:
        attention = None
        if hyp.attention is not None:
            attention = hyp.attention[:, : len(src_ids) + 1]
        return Translation(
            text=self.tgt_vocab.decode(hyp.tokens),
            score=hyp.score,
            tokens=hyp.tokens,
            src_pieces=[self.src_vocab.id_to_piece(i) for i in src_ids],
            tgt_pieces=[self.tgt_vocab.id_to_piece(i) for i in hyp.tokens],
            attention=attention,
        )
