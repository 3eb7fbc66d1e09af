"""Validation: the dev set, its loss, BLEU and chrF, and which of them picks the best checkpoint.

Rank 0 alone validates (rnmt.training.trainer); the other processes never load the dev set.
The dev loss is the plain NLL per target token (no label smoothing), so that it compares
across recipes; BLEU and chrF are sacrebleu's on the detokenised output of the search
``train.validation_search`` names (greedy or the config's beam).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import sacrebleu
import torch

from rnmt.config import Config
from rnmt.data import EncodedCorpus, TokenBatchSampler, Vocab, collate, encode_corpus, read_parallel
from rnmt.models.base import TranslationModel
from rnmt.search.translator import Translator
from rnmt.training.loss import label_smoothed_nll
from rnmt.training.preflight import corpus_files

# train.best_metric -> the validation figure it reads (loss: lower is better).
BEST_METRICS = {"bleu": "dev_bleu", "chrf": "dev_chrf", "loss": "dev_loss"}


def improves(metric: str, value: float, best: Optional[float]) -> bool:
    """Whether ``value`` of ``train.best_metric`` beats the best so far (the first always does)."""
    return best is None or (value < best if metric == "loss" else value > best)


@dataclass
class DevSet:
    """The dev sentences as text (for BLEU) and encoded in fixed batches (for the loss)."""

    src: List[str]
    ref: List[str]
    corpus: EncodedCorpus
    batches: List[List[int]]


def load_dev_set(cfg: Config, src_vocab: Vocab, tgt_vocab: Vocab, cache: Path) -> Optional[DevSet]:
    """``data.dev`` read and encoded (at most ``data.dev_max_sentences`` pairs), or None."""
    if not cfg.data.dev:
        return None
    src, tgt = corpus_files(cfg.data.dev, cfg, "dev")
    src_lines, ref_lines, _ = read_parallel(src, tgt)
    limit = cfg.data.dev_max_sentences
    if limit:
        src_lines, ref_lines = src_lines[:limit], ref_lines[:limit]
    corpus = encode_corpus(src, tgt, src_vocab, tgt_vocab, cache, max_len=0)
    indices = list(range(min(len(corpus), limit))) if limit else list(range(len(corpus)))
    batches = TokenBatchSampler(corpus.src_lens[indices], corpus.tgt_lens[indices],
                                cfg.data.batch_tokens, shuffle=False).epoch_batches(0)
    return DevSet(src_lines, ref_lines, corpus, [[indices[i] for i in b] for b in batches])


class Validator:
    """Scores the model on the dev set; the model is back in training mode afterwards."""

    def __init__(self, model: TranslationModel, translator: Translator, dev: DevSet,
                 device: torch.device, search: str) -> None:
        self.model, self.translator, self.dev, self.device = model, translator, dev, device
        self.greedy = search == "greedy"

    @torch.no_grad()
    def __call__(self) -> Dict[str, float]:
        """``dev_loss``, ``dev_ppl``, ``dev_bleu`` and ``dev_chrf``."""
        self.model.eval()
        try:
            loss_sum, ntok = 0.0, 0
            for indices in self.dev.batches:
                batch = collate(self.dev.corpus, indices, self.device)
                logits = self.model(batch.src, batch.src_mask, batch.tgt_in)
                _, nll = label_smoothed_nll(logits, batch.tgt_out, batch.tgt_mask, 0.0)
                loss_sum += float(nll)
                ntok += batch.ntokens
            hyps = self.translator.translate_best(self.dev.src, greedy=self.greedy)
        finally:
            self.model.train()
        bleu = sacrebleu.corpus_bleu(hyps, [self.dev.ref]).score
        chrf = sacrebleu.corpus_chrf(hyps, [self.dev.ref]).score
        dev_loss = loss_sum / max(ntok, 1)
        return {"dev_loss": dev_loss, "dev_ppl": math.exp(min(dev_loss, 50)), "dev_bleu": bleu, "dev_chrf": chrf}
