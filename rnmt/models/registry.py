"""Architecture registry: config name -> builder.

Model files register themselves with ``@register("name")``; `build_model` looks the name
up, so adding an architecture never touches training, search or serving code.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Callable, Dict

from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.models.base import TranslationModel

_BUILDERS: Dict[str, Callable[[ModelConfig, int, int], TranslationModel]] = {}

# modules whose import registers architectures
_MODEL_MODULES = (
    "rnmt.models.rnnsearch",
    "rnmt.models.seq2seq",
    "rnmt.models.cseq2seq",
    "rnmt.models.bahdanau",
    "rnmt.models.atr_rnnsearch",
    "rnmt.models.dtmt",
    "rnmt.models.luong",
    "rnmt.models.gnmt",
    "rnmt.models.transformer",
)


def register(*names: str):
    def wrap(builder):
        for name in names:
            _BUILDERS[name] = builder
        return builder

    return wrap


def _load_all() -> None:
    for module in _MODEL_MODULES:
        importlib.import_module(module)


def architectures() -> list:
    _load_all()
    return sorted(_BUILDERS)


def build_model(cfg: ModelConfig, src_vocab_size: int | None = None, tgt_vocab_size: int | None = None) -> TranslationModel:
    """Build the architecture ``cfg.arch``; vocabulary sizes default to the config's."""
    _load_all()
    src_v = src_vocab_size or cfg.src_vocab_size
    tgt_v = tgt_vocab_size or cfg.tgt_vocab_size
    if not src_v or not tgt_v:
        raise UserError("model.src_vocab_size and model.tgt_vocab_size are needed to build a model without data")
    if cfg.arch not in _BUILDERS:
        close = difflib.get_close_matches(cfg.arch, list(_BUILDERS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(sorted(_BUILDERS))}"
        raise UserError(f"unknown model.arch '{cfg.arch}'{hint}")
    return _BUILDERS[cfg.arch](cfg, int(src_v), int(tgt_v))
