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
from rnmt.search.prefix import encode_prefixes, restore_prefix, with_prefixes
from rnmt.search.sampling import Sampling, sample_search


@dataclass
class Translation:
    text: str
    score: float
    tokens: List[int]
    src_pieces: List[str]
    tgt_pieces: List[str]
    attention: Optional[torch.Tensor] = None  # [len(tgt_pieces) + 1, len(src_pieces) + 1] (EOS rows/cols)
    token_log_probs: Optional[List[float]] = None  # per target piece and </s>, from `add_token_scores`


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
                  sampling: Optional[Sampling] = None, prefixes: Optional[Sequence[str]] = None,
                  first_line: int = 0, **overrides) -> List[List[Translation]]:
        """N-best translations of every line (one empty translation for a blank line).

        ``overrides`` replace fields of the search config (beam, alpha, nbest, ...).
        ``max_output`` caps every output length (EOS included) whatever the source length;
        ``should_stop`` is passed to the search (it raises `SearchStopped` when it fires).
        ``sampling`` draws ``nbest`` samples per line instead of searching; line i's draws
        are keyed by ``first_line + i`` (`rnmt.search.sampling`). ``prefixes`` (one per
        line, empty for none) start the outputs (`rnmt.search.prefix`).
        """
        opts = replace(self.search, **{k: v for k, v in overrides.items() if v is not None})
        was_training = self.model.training
        self.model.eval()
        results: List[List[Translation]] = [[Translation("", 0.0, [], [], [])] for _ in lines]
        todo = [i for i, line in enumerate(lines) if line.strip()]
        ids = [self.src_vocab.encode(lines[i]) for i in todo]
        prefix_ids = encode_prefixes(prefixes, len(lines), self.tgt_vocab.encode)
        try:
            batch_indices, batch_results = [], []
            for idx, src, mask in make_translation_batches(ids, opts.batch_tokens):
                src, mask = src.to(self.device), mask.to(self.device)
                src_len = mask.sum(1)
                max_len = (src_len.float() * opts.max_len_ratio).long() + opts.max_len_offset
                if max_output is not None:
                    max_len = max_len.clamp(max=max(1, max_output))
                model = self.model
                if prefix_ids is not None:
                    model, max_len = with_prefixes(model, [prefix_ids[todo[i]] for i in idx], max_len, self.device)
                if sampling is not None:
                    nbest = sample_search(model, src, mask, max_len, sampling, [first_line + todo[i] for i in idx],
                                          n=opts.nbest, alpha=opts.alpha, normalize=opts.normalize,
                                          return_attention=return_attention, should_stop=should_stop)
                elif greedy or opts.beam <= 1 and opts.nbest <= 1:
                    nbest = [[h] for h in greedy_search(model, src, mask, max_len, return_attention,
                                                        should_stop=should_stop)]
                else:
                    nbest = beam_search(model, src, mask, max_len, beam=max(opts.beam, opts.nbest),
                                        alpha=opts.alpha, normalize=opts.normalize, nbest=opts.nbest,
                                        return_attention=return_attention, should_stop=should_stop)
                batch_indices.append(idx)
                batch_results.append([[self._finish(h, ids[i], prefixes[todo[i]] if prefixes else None,
                                                    prefix_ids[todo[i]] if prefix_ids else None) for h in hyps]
                                      for i, hyps in zip(idx, nbest)])
            for pos, translations in zip(todo, restore_order(batch_indices, batch_results) if todo else []):
                results[pos] = translations
        finally:
            self.model.train(was_training)
        return results

    def translate_best(self, lines: Sequence[str], **kwargs) -> List[str]:
        return [nbest[0].text for nbest in self.translate(lines, **kwargs)]

    def add_token_scores(self, lines: Sequence[str], results: List[List[Translation]],
                         batch_tokens: Optional[int] = None) -> None:
        """Fill in ``token_log_probs`` of every non-blank translation by forced decoding of
        its own subwords (the log-probabilities the search saw, prefix and EOS included)."""
        from rnmt.search.forced import forced_decode

        pairs = [(k, t) for k, hyps in enumerate(results) if lines[k].strip() for t in hyps]
        if not pairs:
            return
        src = [self.src_vocab.encode(lines[k]) for k, _ in pairs]
        decoded = forced_decode(self.model, src, [t.tokens for _, t in pairs],
                                batch_tokens or self.search.batch_tokens, self.device)
        for (_, t), fd in zip(pairs, decoded):
            t.token_log_probs = [float(x) for x in fd.token_log_probs]

    def _finish(self, hyp: Hypothesis, src_ids: List[int], prefix: Optional[str] = None,
                prefix_ids: Optional[List[int]] = None) -> Translation:
        attention = None
        if hyp.attention is not None:
            attention = hyp.attention[:, : len(src_ids) + 1]
        text = self.tgt_vocab.decode(hyp.tokens)
        if prefix_ids:
            text = restore_prefix(text, self.tgt_vocab.decode(prefix_ids), prefix or "")
        return Translation(
            text=text,
            score=hyp.score,
            tokens=hyp.tokens,
            src_pieces=[self.src_vocab.id_to_piece(i) for i in src_ids],
            tgt_pieces=[self.tgt_vocab.id_to_piece(i) for i in hyp.tokens],
            attention=attention,
        )
