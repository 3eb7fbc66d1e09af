"""What the trainer checks before it writes anything.

The config loader checks every value on its own (types, choices, ranges). What depends on
the architecture, such as keys it does not read, its ``model.options``, a Luong score on
another model or heads that do not divide a width, shows only when the model is built:
here it is built on PyTorch's meta device (shapes only, no memory) with the vocabulary
sizes the config implies, so such a mistake is reported before a vocabulary is trained or
an output directory is made, not minutes later.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

from rnmt.config import Config, train_corpora
from rnmt.data.corpora import CorpusFiles
from rnmt.errors import UserError
from rnmt.training.optimizers import optimizer_options


def corpus_files(prefix: Optional[str], cfg: Config, key: str) -> Tuple[Path, Path]:
    """``PREFIX.src`` and ``PREFIX.tgt`` of ``data.<key>``; a `UserError` when one is missing."""
    if not prefix:
        raise UserError(f"config key 'data.{key}' is not set")
    src, tgt = Path(f"{prefix}.{cfg.data.src}"), Path(f"{prefix}.{cfg.data.tgt}")
    for path in (src, tgt):
        if not path.is_file():
            raise UserError(f"data.{key}: file not found: {path}")
    return src, tgt


def train_files(cfg: Config) -> List[CorpusFiles]:
    """The files and weights of ``data.train`` (a plain prefix: one corpus of weight 1); a
    `UserError` naming the entry when a file is missing."""
    if isinstance(cfg.data.train, str) or cfg.data.train is None:
        src, tgt = corpus_files(cfg.data.train, cfg, "train")
        return [CorpusFiles(src, tgt)]
    out = []
    for i, corpus in enumerate(train_corpora(cfg)):
        src, tgt = corpus_files(corpus.prefix, cfg, f"train[{i}]")
        out.append(CorpusFiles(src, tgt, corpus.weight))
    return out


def planned_vocab_sizes(cfg: Config) -> Tuple[int, int]:
    """The vocabulary sizes the model will get: the config's own, else those a trained
    vocabulary will have (a given sentencepiece model's size is not read here: the shapes
    checked do not depend on it)."""
    m, vc = cfg.model, cfg.data.vocab
    src = m.src_vocab_size or vc.src_size or vc.size
    tgt = m.tgt_vocab_size or (src if vc.joint else vc.tgt_size or vc.size)
    return src, tgt


def check_model(cfg: Config) -> None:
    """Build the model of ``cfg`` on the meta device; any failure is a one-line `UserError`."""
    from rnmt.models import build_skeleton

    build_skeleton(cfg.model, *planned_vocab_sizes(cfg))


def check_before_writing(cfg: Config) -> None:
    """Everything about ``cfg`` that can be checked before training: the model, the corpus
    files, and a dev set with text (validation on none would fail in the metrics)."""
    from rnmt.data.reading import is_blank, iter_lines

    check_model(cfg)
    optimizer_options(cfg.train)  # the optimiser's name and its own options
    train_files(cfg)
    if cfg.data.dev:
        for path in corpus_files(cfg.data.dev, cfg, "dev"):
            if all(is_blank(line) for line in iter_lines(path)):  # stops at the first line with text
                raise UserError(f"data.dev: {path} has no text (it is empty or has only blank lines); "
                                f"remove data.dev to train without a dev set")
