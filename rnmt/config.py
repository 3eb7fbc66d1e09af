"""Typed configuration: dataclasses loaded from YAML, validated once, with clear errors.

A config file has four sections, ``data``, ``model``, ``train`` and ``search``; every key
is a field below. Unknown keys are rejected with the closest valid name, values are
checked against the field's type, and ``--set a.b=value`` overrides use YAML syntax for
the value (``--set train.max_steps=100``, ``--set model.cell=atr``).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import yaml

from rnmt.errors import UserError


@dataclass
class VocabConfig:
    """Subword vocabulary (sentencepiece)."""

    joint: bool = True  # one model for both sides (needed for tied src/tgt embeddings)
    type: str = "bpe"  # bpe | unigram
    size: int = 8000  # used for both sides unless src_size / tgt_size are given
    src_size: Optional[int] = None
    tgt_size: Optional[int] = None
    character_coverage: float = 1.0
    model: Optional[str] = None  # an existing joint sentencepiece model
    src_model: Optional[str] = None  # existing separate models
    tgt_model: Optional[str] = None


@dataclass
class DataConfig:
    """Where the parallel text is: files are PREFIX.src and PREFIX.tgt."""

    train: Optional[str] = None
    dev: Optional[str] = None
    test: Optional[str] = None
    src: str = "src"
    tgt: str = "tgt"
    max_len: int = 100  # training pairs longer than this (subwords) are dropped
    batch_tokens: int = 4096  # padded source + target tokens per training batch
    dev_max_sentences: Optional[int] = None  # validate on a prefix of the dev set
    cache_dir: Optional[str] = None  # default: OUT/cache
    vocab: VocabConfig = field(default_factory=VocabConfig)


@dataclass
class ModelConfig:
    """Architecture. Each architecture reads the keys that apply to it (docs/models.md)."""

    arch: str = "rnnsearch"
    cell: str = "gru"  # unit of encoder and decoder unless enc_cell / dec_cell are given
    enc_cell: Optional[str] = None
    dec_cell: Optional[str] = None
    emb_size: int = 620
    hidden_size: int = 1000
    src_vocab_size: Optional[int] = None  # taken from the vocabulary when training
    tgt_vocab_size: Optional[int] = None
    dropout: float = 0.0  # embeddings and readout
    rnn_dropout: float = 0.0  # candidate activation inside the units
    layer_norm: bool = False  # per-gate layer normalisation inside the units
    attention: str = "additive"  # Luong scores: dot | general | concat | local-p (luong only)
    attention_heads: int = 1
    readout: str = "tanh"  # tanh | maxout
    tie_target_embeddings: bool = False  # output layer shares the target input embedding
    tie_all_embeddings: bool = False  # plus the source embedding (joint vocabulary only)
    enc_layers: int = 1
    dec_layers: int = 1
    enc_depth: int = 0  # T-GRUs after the bottom unit in the encoder transition (DTMT)
    query_depth: int = 0
    dec_depth: int = 0
    positional_encoding: bool = False
    context: str = "mean"  # Cseq2seq context: mean | last
    encoder: str = "recurrent"  # rnnsearch, dtmt: recurrent (their own) | transformer (rnmt/models/encoders.py)
    # encoder: transformer only: post (Vaswani et al.) | pre (layer norm before each sub-layer and a
    # final one, as tensor2tensor and Sockeye, whose encoders the survey's hybrids used)
    encoder_norm: str = "post"
    cell_options: Dict[str, Any] = field(default_factory=dict)
    options: Dict[str, Any] = field(default_factory=dict)  # architecture-specific extras


@dataclass
class TrainConfig:
    seed: int = 1
    max_steps: int = 100000
    max_epochs: Optional[int] = None
    max_minutes: Optional[float] = None  # wall-clock budget; training stops cleanly after it
    lr: float = 1e-3
    schedule: str = "warmup_decay"  # constant | warmup_decay | inverse_sqrt | rnmt_plus | epoch_halving | plateau
    warmup_steps: int = 500
    decay_start: int = 8000  # rnmt_plus: s; warmup_decay: step where decay begins
    decay_end: int = 64000  # rnmt_plus: e
    decay_rate: float = 0.5  # warmup_decay: factor per decay_steps after decay_start; plateau: per plateau
    decay_steps: int = 5000
    replicas: Optional[int] = None  # rnmt_plus: n of DTMT eq. 17; unset = number of training processes
    min_lr: float = 0.0
    optimizer: str = "adam"  # adam | adadelta | sgd (rnmt.train.optimizers)
    adam_betas: List[float] = field(default_factory=lambda: [0.9, 0.999])
    adam_eps: float = 1e-8
    adadelta_rho: float = 0.95  # Zeiler (2012)
    adadelta_eps: float = 1e-6
    momentum: float = 0.0  # sgd
    nesterov: bool = False  # sgd, with momentum > 0
    weight_decay: float = 0.0
    clip_norm: float = 5.0
    label_smoothing: float = 0.1
    init_scale: float = 0.08  # uniform init in [-s, s]
    accumulate: int = 1  # batches per update and process (gradient accumulation)
    amp: str = "auto"  # bf16 autocast: auto (CUDA, or a CPU measured fast in bf16) | bf16 | none
    log_every: int = 100
    validate_every: int = 1000
    validation_search: str = "greedy"  # greedy | beam
    patience: Optional[int] = 10  # validations without improvement of best_metric before stopping
    best_metric: str = "bleu"  # bleu | chrf | loss: what "best" means for best.safetensors, patience, plateau
    plateau_patience: int = 2  # plateau: validations without improvement before the rate decays
    keep_last: int = 3
    # checkpoint every N updates; None: every validate_every (with or without a dev set)
    save_every: Optional[int] = None
    max_nonfinite: int = 20  # non-finite losses in a row (each update skipped) before training stops
    threads: Optional[int] = None  # torch intra-op threads; None keeps torch's default
    device: str = "auto"  # auto (CUDA when present) | cpu | cuda | cuda:N
    progress: bool = True
    tensorboard: bool = False  # also write the log as TensorBoard events to OUT/tensorboard


@dataclass
class SearchConfig:
    beam: int = 5
    alpha: float = 0.6  # GNMT length penalty ((5+|Y|)/6)^alpha; 0 disables
    normalize: str = "gnmt"  # gnmt | length | none
    max_len_ratio: float = 1.5  # output at most ratio * source length + max_len_offset
    max_len_offset: int = 10
    batch_tokens: int = 4000
    nbest: int = 1


@dataclass
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    search: SearchConfig = field(default_factory=SearchConfig)

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def dump(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Check ``value`` against the annotation ``tp``; ints are accepted for floats."""
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _coerce(value, args[0], key)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise UserError(f"config key '{key}' must be a mapping, got {value!r}")
        return _build(tp, value, key + ".")
    if origin in (list, List):
        if not isinstance(value, (list, tuple)):
            raise UserError(f"config key '{key}' must be a list, got {value!r}")
        (item,) = typing.get_args(tp)
        return [_coerce(v, item, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            raise UserError(f"config key '{key}' must be a mapping, got {value!r}")
        return dict(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is float and isinstance(value, str):
        # YAML 1.1 reads 5e-4 (no dot) as a string; accept what float() accepts.
        try:
            return float(value)
        except ValueError:
            pass
    if tp is bool and not isinstance(value, bool):
        raise UserError(f"config key '{key}' must be true or false, got {value!r}")
    if tp in (int, float) and isinstance(value, bool):
        raise UserError(f"config key '{key}' must be a number, got {value!r}")
    if tp in (int, float, str) and not isinstance(value, tp):
        raise UserError(f"config key '{key}' must be of type {_type_name(tp)}, got {value!r}")
    return value


def _build(cls: Any, values: Dict[str, Any], prefix: str = "") -> Any:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in values.items():
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.5)
            hint = f"; did you mean '{prefix}{close[0]}'?" if close else f"; valid keys: {', '.join(names)}"
            raise UserError(f"unknown config key '{prefix}{key}'{hint}")
        kwargs[key] = _coerce(value, hints[key], prefix + key)
    return cls(**kwargs)


def _set_path(tree: Dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise UserError(f"--set {dotted}: '{part}' is not a section")
        node = child
    node[parts[-1]] = value


def parse_overrides(overrides: Sequence[str]) -> List[tuple]:
    """``["a.b=1", ...]`` -> ``[("a.b", 1), ...]`` with YAML-typed values."""
    pairs = []
    for item in overrides:
        if "=" not in item:
            raise UserError(f"--set expects key.path=value, got '{item}'")
        key, raw = item.split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError:
            value = raw
        pairs.append((key.strip(), value))
    return pairs


def config_from_dict(tree: Dict[str, Any], overrides: Sequence[str] = (), source: str = "config") -> Config:
    tree = copy.deepcopy(dict(tree or {}))  # overrides must not leak into the caller's dict
    for key, value in parse_overrides(overrides):
        _set_path(tree, key, value)
    if not isinstance(tree, dict):
        raise UserError(f"{source}: the top level must be a mapping")
    return _build(Config, tree)


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> Config:
    """Read a YAML config file (or a built-in config by name, see `rnmt.resources`),
    apply ``--set`` overrides and validate everything."""
    from rnmt.resources import resolve_config

    path = resolve_config(path)
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError:
        raise UserError(f"{path}: not valid UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{path}:{where} invalid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(tree, dict):
        raise UserError(f"{path}: the top level must be a mapping of sections")
    try:
        return config_from_dict(tree, overrides, source=str(path))
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None
