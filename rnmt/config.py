"""Typed configuration: dataclasses loaded from YAML, validated once, with clear errors.

A config file has five sections, ``data``, ``model``, ``train``, ``search`` and ``runtime``
(how the computation runs: `RuntimeConfig`); every key is a field below. Unknown keys are
rejected with the closest valid name, values are
checked against the field's type when the config loads: a ``Literal`` field takes one of
its names (a near miss gets the closest), an ``Annotated[..., Range(...)]`` field a number
within its bounds, floats must be finite. ``--set a.b=value`` overrides use YAML syntax
for the value (``--set train.max_steps=100``, ``--set model.cell=atr``).

``model:`` holds the keys several architectures read; what only one architecture (or one
family in one module) reads is under ``model.options``, parsed into that architecture's
options dataclass when the model is built (`rnmt.models.options`). Keys that sat at the top
of ``model:`` before they moved there (`MOVED_MODEL_KEYS`) are still accepted: each is moved
under ``model.options`` with a one-line `DeprecatedConfigKey` warning.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Dict, Iterable, List, Literal, Optional, Sequence, Tuple, Union

import yaml

from rnmt.errors import DeprecatedConfigKey, UserError, shown, shown_key
from rnmt.io.bounded_yaml import MAX_CHARS, load_yaml


@dataclass(frozen=True)
class Range:
    """Bounds of a numeric config value, inclusive unless ``*_open``; None: unbounded."""

    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, value: float) -> bool:
        if self.low is not None and not (value > self.low if self.low_open else value >= self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def describe(self) -> str:
        if self.high is None:
            return f"{'greater than' if self.low_open else 'at least'} {self.low}"
        if self.low is None:
            return f"{'less than' if self.high_open else 'at most'} {self.high}"
        return f"in {'(' if self.low_open else '['}{self.low}, {self.high}{')' if self.high_open else ']'}"


AT_LEAST_1 = Range(1)
NON_NEGATIVE = Range(0)
POSITIVE = Range(0, low_open=True)
PROBABILITY = Range(0, 1, high_open=True)  # dropout, label smoothing: 1 would drop everything
FRACTION = Range(0, 1, low_open=True)
OPEN_UNIT = Range(0, 1, low_open=True, high_open=True)
# Upper bounds guard only against absurd values (a stray digit, a hostile file): a model is
# built on the meta device to check its shapes before training, and 10**9 layers would take
# hours to build, 2**62 units overflow PyTorch's sizes.
SIZE = Range(1, 1048576)
VOCAB = Range(5, 1048576)  # the four special pieces (pad, unk, bos, eos) and at least one more
LAYERS = Range(1, 128)
DEPTH = Range(0, 128)
SEED = Range(0, 4294967295)  # numpy's and sentencepiece's seeds are unsigned 32-bit
INT64 = Range(-(2 ** 63), 2 ** 63 - 1)  # any other int: what a tensor or numpy can hold
# GNMT's length-penalty exponent and coverage weight (the GNMT paper tunes both within
# [0, 1]); ((5 + |Y|) / 6) ** 1e300 overflows a float, so 10 bounds them as the server does
PENALTY = Range(0, 10)
# A corpus weight is how many times an epoch shows each of its pairs: 1,000 repeats a small
# in-domain corpus against one 1,000 times larger; beyond it an epoch of a small corpus is
# billions of pair indices (1e5 took gigabytes before the first batch, 1e18 overflowed).
MAX_CORPUS_WEIGHT = 1000
CORPUS_WEIGHT = Range(0, MAX_CORPUS_WEIGHT, low_open=True)
# Hypotheses one sentence's search holds (beam, n-best, samples): rnmt.search.limits.MAX_SEARCH_ROWS
SEARCH_WIDTH = Range(1, 8192)
NGRAM = Range(0, 32)  # no_repeat_ngram: its history of every row grows with it

VocabType = Literal["bpe", "unigram", "word", "char"]  # word: text segmented beforehand
Readout = Literal["tanh", "maxout"]
EncoderKind = Literal["recurrent", "transformer"]
EncoderNorm = Literal["post", "pre"]
Schedule = Literal["constant", "warmup_decay", "inverse_sqrt", "rnmt_plus", "epoch_halving", "plateau"]
BestMetric = Literal["bleu", "chrf", "loss"]
Amp = Literal["auto", "bf16", "none"]
CompileStep = Union[bool, Literal["auto"]]
CudaGraphs = Union[bool, Literal["auto"]]
Fp32Products = Literal["auto", "onednn", "pytorch"]
Int8Kernels = Literal["auto", "fbgemm", "onednn"]
Switch = Union[bool, Literal["auto"]]
SearchKind = Literal["greedy", "beam"]
Normalize = Literal["gnmt", "length", "none"]
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:[0-9]+)?")


@dataclass
class VocabConfig:
    """Subword vocabulary (sentencepiece)."""

    joint: bool = True  # one model for both sides (needed for tied src/tgt embeddings)
    type: VocabType = "bpe"
    size: Annotated[int, VOCAB] = 8000  # used for both sides unless src_size / tgt_size are given
    src_size: Optional[Annotated[int, VOCAB]] = None
    tgt_size: Optional[Annotated[int, VOCAB]] = None
    character_coverage: Annotated[float, FRACTION] = 1.0
    model: Optional[str] = None  # an existing joint sentencepiece model
    src_model: Optional[str] = None  # existing separate models
    tgt_model: Optional[str] = None


@dataclass
class TrainCorpus:
    """One corpus of a weighted ``data.train`` list: files PREFIX.src and PREFIX.tgt.

    Each epoch sees every pair ``weight`` times in expectation (rnmt/data/corpora.py): the
    whole part of the weight exactly, the fraction by a seeded draw per pair. In a list a
    plain string is a corpus of weight 1. A weight is at most `MAX_CORPUS_WEIGHT`.
    """

    prefix: str = ""
    weight: Annotated[float, CORPUS_WEIGHT] = 1.0


@dataclass
class SubwordSamplingConfig:
    """Subword regularisation: the training pairs are segmented anew every epoch (off by
    default; dev and test are always segmented deterministically). A unigram vocabulary
    samples each word's segmentation among its ``nbest`` best by P(x)^alpha (Kudo, 2018);
    a BPE vocabulary drops each merge with probability ``dropout`` (BPE-dropout, Provilkov
    et al., 2020). rnmt/data/subword_sampling.py."""

    enabled: bool = False
    alpha: Annotated[float, POSITIVE] = 0.1  # unigram: smoothing exponent of P(x)
    nbest: Annotated[int, Range(2, 1000)] = 64  # unigram: segmentations per word to sample from
    dropout: Annotated[float, PROBABILITY] = 0.1  # bpe: probability of dropping a merge


@dataclass
class DataConfig:
    """Where the parallel text is: files are PREFIX.src and PREFIX.tgt.

    ``train`` is one prefix or a list of corpora with weights (`TrainCorpus`)."""

    train: Optional[Union[str, List[TrainCorpus]]] = None
    dev: Optional[str] = None
    test: Optional[str] = None
    src: str = "src"
    tgt: str = "tgt"
    max_len: Annotated[int, AT_LEAST_1] = 100  # training pairs longer than this (subwords) are dropped
    batch_tokens: Annotated[int, AT_LEAST_1] = 4096  # padded source + target tokens per training batch
    dev_max_sentences: Optional[Annotated[int, AT_LEAST_1]] = None  # validate on a prefix of the dev set
    cache_dir: Optional[str] = None  # default: OUT/cache
    vocab: VocabConfig = field(default_factory=VocabConfig)
    subword_sampling: SubwordSamplingConfig = field(default_factory=SubwordSamplingConfig)


@dataclass
class ModelConfig:
    """Architecture. Each architecture reads the keys that apply to it (docs/models.md)."""

    arch: str = "rnnsearch"
    cell: str = "gru"  # unit of encoder and decoder unless enc_cell / dec_cell are given
    enc_cell: Optional[str] = None
    dec_cell: Optional[str] = None
    emb_size: Annotated[int, SIZE] = 620
    hidden_size: Annotated[int, SIZE] = 1000
    src_vocab_size: Optional[Annotated[int, VOCAB]] = None  # taken from the vocabulary when training
    tgt_vocab_size: Optional[Annotated[int, VOCAB]] = None
    dropout: Annotated[float, PROBABILITY] = 0.0  # embeddings and readout
    rnn_dropout: Annotated[float, PROBABILITY] = 0.0  # candidate activation inside the units
    layer_norm: bool = False  # per-gate layer normalisation inside the units
    attention_heads: Annotated[int, SIZE] = 1  # dtmt, transformer, a Transformer encoder
    readout: Readout = "tanh"  # seq2seq, cseq2seq1/2, rnnsearch-minus
    tie_target_embeddings: bool = False  # output layer shares the target input embedding
    enc_layers: Annotated[int, LAYERS] = 1  # stacked encoders (seq2seq-sutskever, luong, gnmt, transformer)
    dec_layers: Annotated[int, LAYERS] = 1
    encoder: EncoderKind = "recurrent"  # rnnsearch, dtmt: their own, or rnmt/models/encoders.py
    # encoder: transformer only: post (Vaswani et al.) | pre (layer norm before each sub-layer and a
    # final one, as tensor2tensor and Sockeye, whose encoders the survey's hybrids used)
    encoder_norm: EncoderNorm = "post"
    cell_options: Dict[str, Any] = field(default_factory=dict)
    # what only this architecture reads: its options dataclass (rnmt/models/<arch>.py)
    options: Dict[str, Any] = field(default_factory=dict)


# model.* keys that moved into model.options (the options dataclass of the one architecture
# that reads them), with the value each had when not given: a config or checkpoint written
# before the move holds them at the top of model: (a resolved config every one of them).
MOVED_MODEL_KEYS: Dict[str, Any] = {
    "attention": "additive",  # luong's score (no other architecture read it)
    "context": "mean",  # cseq2seq1, cseq2seq2
    "enc_depth": 0,  # dtmt
    "query_depth": 0,
    "dec_depth": 0,
    "positional_encoding": False,
    "tie_all_embeddings": False,  # transformer
}


# train.* keys that moved into train.optimizer_options: key -> (the optimiser that read it,
# its name there, the value it had when not given). A config or checkpoint written before
# the move holds them at the top of train: (a resolved config every one of them).
MOVED_TRAIN_KEYS: Dict[str, Tuple[str, str, Any]] = {
    "adam_betas": ("adam", "betas", [0.9, 0.999]),
    "adam_eps": ("adam", "eps", 1e-8),
    "adadelta_rho": ("adadelta", "rho", 0.95),
    "adadelta_eps": ("adadelta", "eps", 1e-6),
    "momentum": ("sgd", "momentum", 0.0),
    "nesterov": ("sgd", "nesterov", False),
}


@dataclass
class TrainConfig:
    seed: Annotated[int, SEED] = 1
    max_steps: Annotated[int, NON_NEGATIVE] = 100000
    max_epochs: Optional[Annotated[int, AT_LEAST_1]] = None
    max_minutes: Optional[Annotated[float, POSITIVE]] = None  # wall-clock budget; training stops cleanly after it
    lr: Annotated[float, POSITIVE] = 1e-3
    schedule: Schedule = "warmup_decay"
    warmup_steps: Annotated[int, NON_NEGATIVE] = 500
    decay_start: Annotated[int, NON_NEGATIVE] = 8000  # rnmt_plus: s; warmup_decay: step where decay begins
    decay_end: Annotated[int, NON_NEGATIVE] = 64000  # rnmt_plus: e (after s)
    # warmup_decay: the factor per decay_steps after decay_start; plateau: the factor per plateau
    decay_rate: Annotated[float, FRACTION] = 0.5
    decay_steps: Annotated[int, AT_LEAST_1] = 5000
    # epoch_halving: the first halving comes after this many epochs (Luong et al. 2015: 5, or 8
    # with dropout), then one after each further epoch
    halve_after_epoch: Annotated[int, AT_LEAST_1] = 1
    # rnmt_plus: n of DTMT eq. 17; unset = number of training processes
    replicas: Optional[Annotated[int, AT_LEAST_1]] = None
    min_lr: Annotated[float, NON_NEGATIVE] = 0.0
    # a name registered in rnmt.training.optimizers (adam, adadelta, sgd), checked with its
    # options before training starts; optimizer_options: that optimiser's own settings (its
    # options dataclass there: adam betas, eps; adadelta rho, eps; sgd momentum, nesterov, ...)
    optimizer: str = "adam"
    optimizer_options: Dict[str, Any] = field(default_factory=dict)
    weight_decay: Annotated[float, NON_NEGATIVE] = 0.0
    clip_norm: Annotated[float, NON_NEGATIVE] = 5.0  # 0: no clipping
    # exponential moving average of the weights, which validation and checkpoints then hold
    # (rnmt.training.weight_average); None: off
    ema_decay: Optional[Annotated[float, OPEN_UNIT]] = None
    label_smoothing: Annotated[float, PROBABILITY] = 0.1
    init_scale: Annotated[float, POSITIVE] = 0.08  # uniform init in [-s, s]
    accumulate: Annotated[int, AT_LEAST_1] = 1  # batches per update and process (gradient accumulation)
    amp: Amp = "auto"  # bf16 autocast: auto (CUDA, or a CPU measured fast in bf16)
    log_every: Annotated[int, AT_LEAST_1] = 100
    validate_every: Annotated[int, NON_NEGATIVE] = 1000  # 0: no validation
    validation_search: SearchKind = "greedy"
    patience: Optional[Annotated[int, AT_LEAST_1]] = 10  # validations without improvement of best_metric: stop
    best_metric: BestMetric = "bleu"  # what "best" means for best.safetensors, patience and plateau
    plateau_patience: Annotated[int, AT_LEAST_1] = 2  # plateau: validations without improvement, then decay
    keep_last: Annotated[int, AT_LEAST_1] = 3
    # checkpoints saved at these updates are kept beyond keep_last (e.g. [1000] for a measurement
    # at update 1,000 after the run has moved on); an update with no checkpoint keeps nothing
    keep_steps: List[Annotated[int, AT_LEAST_1]] = field(default_factory=list)
    # checkpoint every N updates; None: every validate_every (with or without a dev set)
    save_every: Optional[Annotated[int, NON_NEGATIVE]] = None  # 0: at validations and the end only
    # non-finite losses in a row (each update skipped) before training stops
    max_nonfinite: Annotated[int, AT_LEAST_1] = 20
    threads: Optional[Annotated[int, AT_LEAST_1]] = None  # torch intra-op threads; None keeps torch's default
    device: str = "auto"  # auto (CUDA when present) | cpu | cuda | cuda:N (DEVICE_PATTERN)
    progress: bool = True
    tensorboard: bool = False  # also write the log as TensorBoard events to OUT/tensorboard
    # torch.compile teacher forcing's decoder step (fewer kernel launches; meant for GPUs).
    # auto: on CUDA where the step's units are not fused kernels already (docs/gpu.md)
    compile_step: CompileStep = "auto"
    # replay each update's forward and backward from CUDA graphs, one per padded batch shape
    # (a GPU, one process; rnmt/training/update_graphs.py, docs/gpu.md). auto: on CUDA in fp32
    # for the models whose update is one graph
    cuda_graphs: CudaGraphs = "auto"


@dataclass
class SearchConfig:
    beam: Annotated[int, SEARCH_WIDTH] = 5
    alpha: Annotated[float, PENALTY] = 0.6  # GNMT length penalty ((5+|Y|)/6)^alpha; 0 disables
    normalize: Normalize = "gnmt"
    # GNMT coverage penalty beta: a finished hypothesis also scores beta * sum_i log(min(total
    # attention on source word i, 1)) (beam search; models with attention); 0: off
    coverage: Annotated[float, PENALTY] = 0.0
    max_len_ratio: Annotated[float, NON_NEGATIVE] = 1.5  # output at most ratio * source length + max_len_offset
    max_len_offset: Annotated[int, NON_NEGATIVE] = 10
    batch_tokens: Annotated[int, AT_LEAST_1] = 4000
    nbest: Annotated[int, SEARCH_WIDTH] = 1
    no_repeat_ngram: Annotated[int, NGRAM] = 0  # block any n-gram of this many subwords repeating; 0: off
    min_output_tokens: Annotated[int, NON_NEGATIVE] = 0  # no output ends before this many subwords; 0: off


@dataclass
class RuntimeConfig:
    """How the computation runs, not what it computes: each key is a choice of the run's
    execution plan (`rnmt.plan`, docs/architecture.md), ``auto`` decided from the CPU's
    features and the model's size, the same on every start. The precision, the compiled
    step and CUDA graphs stay ``train.amp``, ``train.compile_step`` and ``train.cuda_graphs``."""

    # fp32 CPU matrix products: oneDNN's (rnmt.products) or PyTorch's BLAS; auto: oneDNN on
    # AMD CPUs with AVX-512 (rnmt.hardware.onednn_fp32_products)
    fp32_products: Fp32Products = "auto"
    # int8 decoding's kernels (rnmt.int8); auto: oneDNN's where the CPU has amx_int8
    int8_kernels: Int8Kernels = "auto"
    # rnmt's fused C++ kernels (rnmt/kernels): auto and true build them at first use (false:
    # PyTorch's operations, the same results, slower)
    kernels: Switch = "auto"
    kernel_lock_timeout: Annotated[float, NON_NEGATIVE] = 300.0  # seconds to wait for another process's build
    # oneDNN's primitive cache bounded and the heap trimmed between updates (rnmt.memory)
    memory_bounds: bool = True
    # updates between heap trims (0: never); null: the measured default, rnmt.memory.TRIM_EVERY
    trim_every: Optional[Annotated[int, NON_NEGATIVE]] = None
    # buffers up to 1 GiB from glibc's heap, reused between updates instead of mapped afresh and
    # faulted in each time (rnmt.memory.heap_buffers); false: glibc's own thresholds
    heap_buffers: bool = True
    # one weight-gradient accumulation per training pass (rnmt.deferred_grads); false: plain autograd
    deferred_grads: bool = True
    # the GRU through PyTorch's fused CUDA cell and cuDNN on a GPU (rnmt/fast/gru_cuda.py)
    gpu_fused_gru: bool = True


@dataclass
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def dump(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


_show = shown  # the user's value, at most 80 characters of it: an error stays one readable line


def _choice(value: Any, choices: Sequence[str], key: str, noun: str = "config key") -> str:
    if isinstance(value, str) and value in choices:
        return value
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5) if isinstance(value, str) else []
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise UserError(f"{noun} '{key}' must be one of {', '.join(choices)}, got {_show(value)}{hint}")


def _coerce(value: Any, tp: Any, key: str, bounded: bool = False, noun: str = "config key") -> Any:
    """Check ``value`` against the annotation ``tp``; ints are accepted for floats.
    ``bounded``: a `Range` checks the value next, so the int64 check can wait for it."""
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(tp)):  # Optional: null is a value
            return None
        if len(args) > 1:
            return _coerce(value, _union_member(value, args, key, noun), key, noun=noun)
        return _coerce(value, args[0], key, noun=noun)
    if origin is Annotated:
        base, *bounds = typing.get_args(tp)
        value = _coerce(value, base, key, bounded=True, noun=noun)
        for bound in bounds:
            if isinstance(bound, Range) and not bound.holds(value):
                raise UserError(f"{noun} '{key}' must be {bound.describe()}, got {_show(value)}")
        return _coerce(value, base, key, noun=noun)  # the int64 check
    if origin is Literal:
        return _choice(value, typing.get_args(tp), key, noun)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, str) and tp is TrainCorpus:
            value = {"prefix": value}  # a plain prefix in a list: weight 1
        if not isinstance(value, dict):
            raise UserError(f"{noun} '{key}' must be a mapping, got {_show(value)}")
        return _build(tp, value, key + ".")
    if origin in (list, List):
        if not isinstance(value, (list, tuple)):
            raise UserError(f"{noun} '{key}' must be a list, got {_show(value)}")
        (item,) = typing.get_args(tp)
        return [_coerce(v, item, f"{key}[{i}]", noun=noun) for i, v in enumerate(value)]
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            raise UserError(f"{noun} '{key}' must be a mapping, got {_show(value)}")
        return dict(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        try:
            value = float(value)
        except OverflowError:
            raise UserError(f"{noun} '{key}' is too large, got {_show(value)}") from None
    if tp is float and isinstance(value, str):
        # YAML 1.1 reads 5e-4 (no dot) as a string; accept what float() accepts.
        try:
            value = float(value)
        except ValueError:
            pass
    if tp is bool and not isinstance(value, bool):
        raise UserError(f"{noun} '{key}' must be true or false, got {_show(value)}")
    if tp in (int, float) and isinstance(value, bool):
        raise UserError(f"{noun} '{key}' must be a number, got {_show(value)}")
    if tp in (int, float, str) and not isinstance(value, tp):
        raise UserError(f"{noun} '{key}' must be of type {_type_name(tp)}, got {_show(value)}")
    if tp is float and not math.isfinite(value):
        raise UserError(f"{noun} '{key}' must be a finite number, got {_show(value)}")
    if tp is int and not bounded and not INT64.holds(value):
        raise UserError(f"{noun} '{key}' is out of range, got {_show(value)}")
    if tp is str and "\x00" in value:  # no path or name has one; the OS would refuse it later
        raise UserError(f"{noun} '{key}' must not contain a NUL character, got {_show(value)}")
    return value


def _union_member(value: Any, args: Sequence[Any], key: str, noun: str) -> Any:
    """The member of a ``Union`` (a string or a list) that ``value``'s form asks for."""
    for arg in args:
        origin = typing.get_origin(arg)
        if isinstance(value, str) and (arg is str or typing.get_origin(arg) is Literal):
            return arg
        if isinstance(value, bool) and arg is bool:
            return arg
        if isinstance(value, (list, tuple)) and origin in (list, List):
            return arg
    forms = " or ".join("a string" if a is str else "a list" if typing.get_origin(a) in (list, List) else
                        "true or false" if a is bool else
                        " or ".join(f"'{c}'" for c in typing.get_args(a)) if typing.get_origin(a) is Literal else
                        _type_name(a) for a in args)
    raise UserError(f"{noun} '{key}' must be {forms}, got {_show(value)}")


def _build(cls: Any, values: Dict[str, Any], prefix: str = "") -> Any:
    hints = typing.get_type_hints(cls, include_extras=True)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in values.items():
        if key not in names:
            # a misspelled moved key is shown in its new place
            where = {**({k: f"options.{k}" for k in MOVED_MODEL_KEYS} if cls is ModelConfig else {}),
                     **{name: name for name in names}}
            close = difflib.get_close_matches(str(key), list(where), n=1, cutoff=0.5)
            hint = f"; did you mean '{prefix}{where[close[0]]}'?" if close else f"; valid keys: {', '.join(names)}"
            raise UserError(f"unknown config key {_show(prefix + str(key))}{hint}")
        kwargs[key] = _coerce(value, hints[key], prefix + key)
    return cls(**kwargs)


def check_value(section: type, name: str, value: Any, noun: str = "option", key: Optional[str] = None) -> Any:
    """``value`` checked (and converted) as the field ``name`` of the config class
    ``section`` would be, for settings that do not come from a config file (the Python
    API's keyword arguments) or sit in a section of their own (a registered entry's
    options): the error says ``{noun} '{key or name}' must be ...``."""
    return _coerce(value, typing.get_type_hints(section, include_extras=True)[name], key or name, noun=noun)


def _check_together(cfg: Config) -> None:
    """Checks that involve two values, or a value and a pattern."""
    _check_train_corpora(cfg.data.train)
    tc = cfg.train
    if tc.schedule == "rnmt_plus" and tc.decay_end <= tc.decay_start:
        raise UserError(f"config key 'train.decay_end' ({tc.decay_end}) must be greater than train.decay_start "
                        f"({tc.decay_start}) with train.schedule rnmt_plus")
    if not DEVICE_PATTERN.fullmatch(tc.device):
        close = difflib.get_close_matches(tc.device, ["auto", "cpu", "cuda"], n=1, cutoff=0.5)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise UserError(f"config key 'train.device' must be auto, cpu, cuda or cuda:N, got {_show(tc.device)}{hint}")


def _check_train_corpora(train: Optional[Union[str, List[TrainCorpus]]]) -> None:
    """A list form of ``data.train``: at least one corpus, each with a prefix, none twice."""
    if not isinstance(train, list):
        return
    if not train:
        raise UserError("config key 'data.train' is an empty list; give a prefix or at least one corpus")
    seen: Dict[str, int] = {}
    for i, corpus in enumerate(train):
        if not corpus.prefix:
            raise UserError(f"config key 'data.train[{i}].prefix' is not set")
        if corpus.prefix in seen:
            raise UserError(f"config key 'data.train[{i}]': {corpus.prefix} is also data.train[{seen[corpus.prefix]}]; "
                            f"give it once with the sum of the weights")
        seen[corpus.prefix] = i


def train_corpora(cfg: Config) -> List[TrainCorpus]:
    """``data.train`` as a list of corpora (a plain prefix is one corpus of weight 1)."""
    train = cfg.data.train
    if train is None or train == "":
        raise UserError("config key 'data.train' is not set")
    return [TrainCorpus(train)] if isinstance(train, str) else list(train)


def set_path(tree: Dict[str, Any], dotted: str, value: Any) -> None:
    """``tree["a"]["b"] = value`` for ``dotted = "a.b"``, making missing sections; a part that
    is set but is not a section is a `UserError` naming the key."""
    parts = dotted.split(".")
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise UserError(f"--set {_show(dotted)}: {_show(part)} is not a section")
        node = child
    node[parts[-1]] = value


def parse_overrides(overrides: Sequence[str]) -> List[tuple]:
    """``["a.b=1", ...]`` -> ``[("a.b", 1), ...]`` with YAML-typed values."""
    pairs = []
    for item in overrides:
        if "=" not in item:
            raise UserError(f"--set expects key.path=value, got {_show(item)}")
        key, raw = item.split("=", 1)
        try:
            value = load_yaml(raw) if raw != "" else ""
        except yaml.YAMLError:
            value = raw
        pairs.append((key.strip(), value))
    return pairs


def _deprecated(key: str) -> None:
    # Issued from this one line (stacklevel 1): Python's default filter shows each key's
    # warning once per process, however often the config is read.
    warnings.warn(DeprecatedConfigKey(f"model.{key} is deprecated: write it as model.options.{key} "
                                      f"(the architecture's own options, docs/models.md)"), stacklevel=1)


def _section_to_upgrade(tree: Any, section: str, options_key: str,
                        moved: Iterable[str]) -> Optional[Tuple[Dict[str, Any], Dict[str, Any]]]:
    """Copies of ``tree[section]`` and of its ``options_key`` dict (empty when not given),
    when the section holds one of the ``moved`` keys; None when there is nothing to move, or
    when either is not a dict (the type checks that follow report that)."""
    part = tree.get(section) if isinstance(tree, dict) else None
    if not isinstance(part, dict) or not any(key in part for key in moved):
        return None
    options = part.get(options_key)
    if options is None:
        options = {}
    if not isinstance(options, dict):
        return None
    return dict(part), dict(options)


def upgrade_model_keys(tree: Dict[str, Any], warn: bool = True) -> Dict[str, Any]:
    """``tree`` (a config's sections as read) with the keys of `MOVED_MODEL_KEYS` moved from
    the top of ``model:`` into ``model.options``; the caller's dict is not changed.

    A key at the value it had when not given says nothing and is dropped (a resolved config
    written before the move holds every one of them, whatever its architecture); any other
    value goes to ``model.options``. A key given both ways with different values is a
    `UserError` naming both. ``warn``: one `DeprecatedConfigKey` warning per key (a config
    file or ``--set``); files rnmt wrote itself (checkpoints, a run's saved config) are
    upgraded silently."""
    found = _section_to_upgrade(tree, "model", "options", MOVED_MODEL_KEYS)
    if found is None:
        return tree
    model, options = found
    for key, before in MOVED_MODEL_KEYS.items():
        if key not in model:
            continue
        value = model.pop(key)
        if key in options and (options[key] != value or type(options[key]) is not type(value)):
            raise UserError(f"model.{key} ({_show(value)}) and model.options.{key} ({_show(options[key])}) are "
                            f"both given: model.{key} is the deprecated form of model.options.{key}; keep only "
                            f"model.options.{key}")
        if warn:
            _deprecated(key)
        if key not in options and (value != before or type(value) is not type(before)):
            options[key] = value
    model["options"] = options
    return {**tree, "model": model}


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, float) and a == b
                                             and not isinstance(a, bool))


def upgrade_train_keys(tree: Dict[str, Any], warn: bool = True) -> Dict[str, Any]:
    """``tree`` with the keys of `MOVED_TRAIN_KEYS` moved from the top of ``train:`` into
    ``train.optimizer_options`` (run after ``--set``, when the optimiser is known); the
    caller's dict is not changed.

    A key of the optimiser the config trains with is moved (with a `DeprecatedConfigKey`
    warning when ``warn``); one at the value it had when not given is dropped. A key of
    another optimiser would do nothing: at its old default it is dropped (a resolved config
    written before the move holds every one of them), otherwise it is a `UserError` naming
    the key and both optimisers; in a file rnmt wrote itself (``warn`` false) it is dropped."""
    found = _section_to_upgrade(tree, "train", "optimizer_options", MOVED_TRAIN_KEYS)
    if found is None:
        return tree
    train, options = found
    optimizer = train.get("optimizer", TrainConfig.optimizer)
    for key, (owner, name, before) in MOVED_TRAIN_KEYS.items():
        if key not in train:
            continue
        value = train.pop(key)
        if owner != optimizer:
            if warn and not _same(value, before):
                raise UserError(f"train.{key} is a setting of optimizer '{owner}', but train.optimizer is "
                                f"{_show(optimizer)}: it would do nothing; remove it or set train.optimizer: {owner}")
            continue
        if name in options and not _same(value, options[name]):
            raise UserError(f"train.{key} ({_show(value)}) and train.optimizer_options.{name} "
                            f"({_show(options[name])}) are both given: train.{key} is the deprecated form of "
                            f"train.optimizer_options.{name}; keep only train.optimizer_options.{name}")
        if warn:
            warnings.warn(DeprecatedConfigKey(f"train.{key} is deprecated: write it as train.optimizer_options."
                                              f"{name} (the {owner} optimiser's own options, docs/architecture.md)"),
                          stacklevel=1)
        if name not in options and not _same(value, before):
            options[name] = value
    train["optimizer_options"] = options
    return {**tree, "train": train}


def upgrade_override_key(key: str, warn: bool = True) -> str:
    """The dotted key of a ``--set`` (or of a reproduction recipe): ``model.KEY`` of a moved
    key as ``model.options.KEY``, so that it sets the option (over the file's value in either
    form). A moved optimiser setting (``train.nesterov``) stays as given: `apply_overrides`
    clears the file's value of it and `upgrade_train_keys` moves it once the optimiser is
    known, or refuses it for another optimiser."""
    parts = key.split(".")
    if len(parts) == 2 and parts[0] == "model" and parts[1] in MOVED_MODEL_KEYS:
        if warn:
            _deprecated(parts[1])
        return f"model.options.{parts[1]}"
    return key


def apply_overrides(tree: Dict[str, Any], overrides: Sequence[str], warn_deprecated: bool = True) -> Dict[str, Any]:
    """A config's sections as read (``tree``, changed in place) with ``--set`` overrides
    (``["model.options.context=last", ...]``, YAML-typed values) applied, moved keys in either
    form landing where the config reads them; the result is not checked (`config_from_dict`
    checks it)."""
    for key, value in parse_overrides(overrides):
        parts = key.split(".")
        if len(parts) == 2 and parts[0] == "train" and parts[1] in MOVED_TRAIN_KEYS:
            options = tree.get("train", {}).get("optimizer_options") if isinstance(tree.get("train"), dict) else None
            if isinstance(options, dict):  # the --set wins over the file's value in either form
                tree["train"]["optimizer_options"] = {k: v for k, v in options.items()
                                                      if k != MOVED_TRAIN_KEYS[parts[1]][1]}
        set_path(tree, upgrade_override_key(key, warn_deprecated), value)
    return upgrade_model_keys(tree, warn_deprecated)  # a whole model section given with --set


def config_from_dict(tree: Dict[str, Any], overrides: Sequence[str] = (), source: str = "config",
                     warn_deprecated: bool = True) -> Config:
    """Build and check a config from its sections as read and ``--set`` overrides. Keys in
    their form before a move (`MOVED_MODEL_KEYS`) are upgraded, each with a one-line warning
    unless ``warn_deprecated`` is false (a file rnmt wrote itself)."""
    if not isinstance(tree or {}, dict):
        raise UserError(f"{source}: the top level must be a mapping")
    tree = upgrade_model_keys(copy.deepcopy(dict(tree or {})), warn_deprecated)  # the caller's dict is kept
    tree = upgrade_train_keys(apply_overrides(tree, overrides, warn_deprecated), warn_deprecated)
    cfg = _build(Config, tree)
    _check_together(cfg)
    return cfg


MAX_BASES = 16  # configs in one chain of bases: a deeper chain is a mistake, not a design


def _read_tree(path: Path) -> Dict[str, Any]:
    """One YAML config file's sections as read; a `UserError` naming the file for a file
    that cannot be read, is larger than `MAX_CHARS` bytes (refused before it is read
    whole) or is not YAML within the bounds of `rnmt.io.bounded_yaml`."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CHARS + 1)
        if len(data) > MAX_CHARS:
            raise UserError(f"{path}: larger than the {MAX_CHARS:,} bytes a config may hold")
        tree = load_yaml(data.decode("utf-8")) or {}
    except UnicodeDecodeError:
        raise UserError(f"{path}: not valid UTF-8") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({(exc.strerror or str(exc)).lower()})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{path}:{where} invalid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(tree, dict):
        raise UserError(f"{path}: the top level must be a mapping of sections")
    return tree


def merge_trees(base: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    """``over`` laid on ``base``: mappings merge key by key (at any depth, so ``model.options``
    too), anything else (a value, a list such as ``data.train``) replaces the base's."""
    merged = dict(base)
    for key, value in over.items():
        old = merged.get(key)
        merged[key] = merge_trees(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return merged


def _with_bases(path: Path, chain: Tuple[Path, ...]) -> Dict[str, Any]:
    """The sections of ``path`` laid over those of its ``base:`` (and the base's base ...)."""
    read = _read_tree(path)
    if "base" not in read:
        # a file without a base is returned as read (a run's own config.yaml is upgraded
        # silently by its reader); a base's moved keys go in their place before merging
        return read if not chain else upgrade_model_keys(read)
    base = read["base"]
    tree = upgrade_model_keys({k: v for k, v in read.items() if k != "base"})
    if not isinstance(base, str) or not base.strip():
        raise UserError(f"{path}: 'base' must name a config file (relative to this one), got {_show(base)}")
    base_path = path.parent / base
    if not base_path.is_file():
        raise UserError(f"{path}: base config not found: {shown_key(base)} (looked for {shown_key(str(base_path))})")
    here = [p.resolve() for p in chain] + [path.resolve()]
    if base_path.resolve() in here:
        names = " -> ".join(str(p) for p in (*chain, path, base_path))
        raise UserError(f"{path}: its bases form a cycle ({names})")
    if len(here) >= MAX_BASES:
        raise UserError(f"{path}: more than {MAX_BASES} configs in its chain of bases")
    return merge_trees(_with_bases(base_path, (*chain, path)), tree)


def read_config_tree(path: str | Path) -> Tuple[Path, Dict[str, Any]]:
    """(the file, its sections as read) of a YAML config file or a built-in config by name
    (see `rnmt.resources`), before overrides and checks.

    A file may name another as its ``base:`` (a path relative to the file): the result is
    the base's sections with the file's laid over them (`merge_trees`), bases of bases
    included; a missing base or a cycle is a `UserError` naming the file."""
    from rnmt.resources import resolve_config

    path = resolve_config(path)
    return path, _with_bases(path, ())


def load_config(path: str | Path, overrides: Sequence[str] = (), warn_deprecated: bool = True) -> Config:
    """Read a YAML config file (or a built-in config by name, see `rnmt.resources`),
    apply ``--set`` overrides and validate everything (`config_from_dict`)."""
    path, tree = read_config_tree(path)
    try:
        return config_from_dict(tree, overrides, source=str(path), warn_deprecated=warn_deprecated)
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None
