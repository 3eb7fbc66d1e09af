"""The Python interface: load a model and translate, score or align with it; train; evaluate.

    import rnmt
    model = rnmt.load("runs/quickstart")          # a run directory or a checkpoint file
    model.translate(["Y dijo Dios: sea la luz."]) # -> ["And God said, Let there be light."]

The ``rnmt`` commands are thin wrappers over these functions, so both behave the same; user
errors raise `rnmt.errors.UserError` (the commands print it as ``error: ...``).
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, overload

from typing_extensions import Unpack

from rnmt.errors import LongLineWarning, UserError
from rnmt.search.options import SearchOptions, TranslateKeywords

if TYPE_CHECKING:  # the heavy modules are imported only when a function runs
    import torch

    from rnmt.models.loading import LoadedModel

PathLike = Union[str, Path]



@dataclass(frozen=True)
class Hypothesis:
    """One translation of an n-best list: its text and its (length-normalised) score; with
    ``token_scores=True`` also its target subwords (``</s>`` last) and the natural-log
    probability of each."""

    text: str
    score: float
    pieces: Tuple[str, ...] = ()
    token_log_probs: Tuple[float, ...] = ()


@dataclass(frozen=True)
class Score:
    """Forced decoding of one pair: log p(target | source) and its parts per token.

    ``tokens`` are the target's subword pieces followed by ``</s>``; ``token_log_probs``
    has one natural-log probability per token, and ``log_prob`` is their sum.
    """

    log_prob: float
    tokens: List[str]
    token_log_probs: List[float]


Link = Tuple[int, int]  # (source word, target word), 0-based whitespace words
# Subwords a side of a pair score() and align() force-decode: one pass over the whole pair,
# whose time and attention memory grow with both lengths (a 5,000-word line scored for three
# minutes and aligned out of memory); 10x the training's default length limit.
MAX_FORCED_TOKENS = 1024
class Model:
    """A trained model (or an ensemble) with its vocabularies and search settings."""

    def __init__(self, loaded: LoadedModel, device: torch.device) -> None:
        from rnmt.search.translator import Translator

        self.loaded = loaded
        self.device = device
        self.config = loaded.config
        self.plan: Any = None  # the execution plan it decodes under (rnmt.plan; set by `load`)
        self._translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search, device)

    def use_shortlist(self, path: Optional[PathLike], frequent: int = 100, best: int = 50) -> None:
        """Search every batch over a lexical shortlist from now on (`rnmt.search.shortlist`;
        ``rnmt shortlist`` builds the file): the ``frequent`` most frequent target subwords
        and the ``best`` most probable translations of each source subword of the batch.
        Faster, and an approximation (docs/translation.md, "Lexical shortlists"); sampling
        still draws from the whole vocabulary. ``None`` goes back to the whole vocabulary.
        A missing file or one built for other vocabularies is a `UserError`."""
        from rnmt.search.shortlist import load_shortlist

        if path is None:
            self._translator.shortlist = None
            return
        _count("frequent", frequent, 0)
        _count("best", best, 0)
        shortlist = load_shortlist(path, self.loaded.src_vocab, self.loaded.tgt_vocab)
        self._translator.shortlist = shortlist.with_sizes(frequent, best)

    @overload
    def translate(  # type: ignore[overload-overlap]  # a str is a Sequence[str] too
            self, lines: str, options: Optional[SearchOptions] = ...,
            **keywords: Unpack[TranslateKeywords]) -> Union[str, Hypothesis, List[Hypothesis]]: ...

    @overload
    def translate(self, lines: Sequence[str], options: Optional[SearchOptions] = ...,
                  **keywords: Unpack[TranslateKeywords]) -> Union[List[str], List[Hypothesis],
                                                                  List[List[Hypothesis]]]: ...

    def translate(self, lines: Union[str, Sequence[str]], options: Optional[SearchOptions] = None,
                  **keywords: Unpack[TranslateKeywords]) -> Any:
        """Translate one line or a list of lines.

        Options come as a `SearchOptions` (``model.translate(lines, SearchOptions(beam=4))``),
        as keywords of the same names (``model.translate(lines, beam=4)``; both type-checked,
        keywords override the object's fields), or both; `rnmt.search.options` lists them
        with their bounds, and a value out of its bound is a `UserError` before any work.

        ``nbest=1`` gives strings; ``nbest > 1`` gives, per line, the best ``nbest``
        `Hypothesis` objects, best first; with ``mbr`` (``"chrf"`` or ``"bleu"``) the
        ``nbest`` hypotheses (or samples) are candidates, and each line gives the one string
        of highest expected ``mbr`` against the others (`rnmt.search.mbr`). ``beam`` and ``alpha`` (GNMT length penalty)
        default to the model's config; ``beam=1`` is greedy search. Further options:
        ``greedy``, ``normalize`` (gnmt | length | none), ``max_len_ratio``,
        ``batch_tokens``, ``max_output_tokens`` (every output's length cap in subwords,
        default `rnmt.search.limits.MAX_OUTPUT_TOKENS` as for the server) and
        ``max_input_tokens`` (a longer line is translated in pieces joined into one, with
        a `rnmt.errors.LongLineWarning`; default: the longest source whose output the cap
        does not cut), ``no_repeat_ngram`` (N: no output repeats an N-subword sequence;
        `rnmt.search.repeats`), ``min_output_tokens`` (N: no output ends before N subwords,
        `rnmt.search.min_length`), ``coverage`` (beta of GNMT's coverage penalty on the finished
        hypotheses of beam search, 0 off; `rnmt.search.coverage`). Blank lines give empty
        translations.

        ``sample=True`` draws each word instead of searching (``nbest`` samples per line),
        with ``topk``, ``topp``, ``temperature`` (``inf``: a uniform draw), ``epsilon`` (no
        word of probability below it) and ``seed`` (0 to
        2**32 - 1; the same seed gives the same samples, different seeds different ones;
        line i's draws are keyed by ``line_offset + i``, so a text translated in pieces
        samples as in one call). ``prefix``: one target prefix per line (``""`` for none),
        which each output starts with. ``token_scores=True`` returns `Hypothesis` objects (one
        per line, or lists with ``nbest > 1``) with per-subword log-probabilities.
        ``constraints``: per line, a list of target phrases that every output of the line
        must contain (``[]`` for none; for a single line, one list of phrases), found by
        beam search with dynamic beam allocation (`rnmt.search.constraints`); with
        ``greedy`` (or ``beam=1``) it searches with a beam of one; not with ``sample``. A
        prefix and constraints together must leave room for the end of sentence under
        ``max_output_tokens``.
        """
        opts = _search_options(options, dict(keywords))
        single = isinstance(lines, str)
        batch = [lines] if isinstance(lines, str) else _strings(lines,
                                                                "translate() takes a string or a list of strings")
        plan = self._search_plan(opts, batch, single)
        results = self._translator.translate(batch, **plan)
        if opts.token_scores:
            self._translator.add_token_scores(batch, results, plan.get("batch_tokens"))
            out: list = [[_hypothesis(t) for t in hyps] for hyps in results]
            if opts.nbest == 1 or opts.mbr:
                out = [hyps[0] for hyps in out]
        elif opts.nbest > 1 and not opts.mbr:
            out = [[Hypothesis(t.text, float(t.score)) for t in hyps] for hyps in results]
        else:
            out = [hyps[0].text for hyps in results]
        return out[0] if single else out

    def _search_plan(self, opts: SearchOptions, batch: List[str], single: bool) -> Dict[str, Any]:
        """The translator's keywords for ``opts`` (checked one by one already), after the
        checks that involve several options or the model's config."""
        from rnmt.search.limits import default_input_limit
        from rnmt.search.options import API, in_config, names
        from rnmt.search.sampling import sampling_options

        # the options the config's search: section holds too (None: the model's value)
        search = {name: getattr(opts, name) for name in names(API)
                  if in_config(name) and getattr(opts, name) is not None}
        greedy = opts.greedy
        if greedy and opts.nbest > 1:
            raise UserError(f"nbest={opts.nbest} needs beam search: greedy search gives one hypothesis")
        if opts.coverage and (greedy or opts.sample or opts.beam == 1):
            raise UserError(f"coverage={opts.coverage} ranks the finished hypotheses of beam search: not with "
                            f"greedy search or sample=True")
        ratio = search.get("max_len_ratio", self.config.search.max_len_ratio)
        max_output = opts.max_output_tokens
        least = search.get("min_output_tokens", self.config.search.min_output_tokens)
        if least >= max_output:  # max_output counts </s>
            raise UserError(f"option 'min_output_tokens' ({least}) must be below max_output_tokens ({max_output}), "
                            f"which counts the end of sentence")
        max_input = opts.max_input_tokens or default_input_limit(ratio, self.config.search.max_len_offset, max_output)
        if opts.mbr and opts.nbest < 2:
            raise UserError(f"mbr={opts.mbr!r} chooses among the nbest candidates of each line: nbest must be at least "
                            f"2, got {opts.nbest}")
        sampling = sampling_options(opts.sample, opts.topk, opts.topp, opts.temperature, opts.seed, opts.beam, greedy,
                                    epsilon=opts.epsilon)
        constraints = _constraint_list(opts.constraints, batch, single)
        if constraints is not None and sampling is not None:
            raise UserError("constraints need a search: they do not combine with sample=True")

        def warn_long(index: int, subwords: int, pieces: int) -> None:
            warnings.warn(LongLineWarning(index + 1, subwords, max_input, pieces), stacklevel=5)

        return dict(greedy=greedy, max_output=max_output, max_input=max_input, on_split=warn_long, sampling=sampling,
                    prefixes=_prefix_list(opts.prefix, batch, single), first_line=opts.line_offset,
                    constraints=constraints, mbr=opts.mbr, **search)

    def _pair_ids(self, src: Sequence[str], tgt: Sequence[str], batch_tokens: int,
                  numbers: Sequence[int]) -> Tuple[List[List[int]], List[List[int]]]:
        """The pairs' subword ids, after checking them, their lengths and the batch size
        (``numbers``: each pair's line number, for the errors)."""
        src, tgt = _check_pairs(src, tgt)
        _count("batch_tokens", batch_tokens, 1)
        v = self.loaded
        src_ids, tgt_ids = [v.src_vocab.encode(s) for s in src], [v.tgt_vocab.encode(t) for t in tgt]
        for number, s, t in zip(numbers, src_ids, tgt_ids):
            if max(len(s), len(t)) > MAX_FORCED_TOKENS:
                raise UserError(f"line {number}: {len(s):,} source and {len(t):,} target subwords; score and align "
                                f"take at most {MAX_FORCED_TOKENS:,} a side (one pass over the whole pair): split it")
        return src_ids, tgt_ids

    def _forced(self, src: Sequence[str], tgt: Sequence[str], batch_tokens: int, numbers: Sequence[int]) -> list:
        from rnmt.search.forced import forced_decode

        src_ids, tgt_ids = self._pair_ids(src, tgt, batch_tokens, numbers)
        return forced_decode(self.loaded.model, src_ids, tgt_ids, batch_tokens, self.device)

    def score(self, src: Sequence[str], tgt: Sequence[str], batch_tokens: int = 4000,
              first_line: int = 0) -> List[Score]:
        """Force-decode each (source, target) pair: log-probabilities per sentence and token
        (one teacher-forced pass per batch, `rnmt.search.forced.forced_log_probs`). A pair of
        more than `MAX_FORCED_TOKENS` subwords a side is a `UserError` naming its line
        (``first_line`` + its index + 1: a file scored in chunks names the file's line)."""
        from rnmt.search.forced import forced_log_probs

        src_ids, tgt_ids = self._pair_ids(src, tgt, batch_tokens, range(first_line + 1, first_line + len(src) + 1))
        log_probs = forced_log_probs(self.loaded.model, src_ids, tgt_ids, batch_tokens, self.device)
        tgt_vocab = self.loaded.tgt_vocab
        return [Score(float(lp.sum()), [tgt_vocab.id_to_piece(i) for i in ids] + ["</s>"], [float(x) for x in lp])
                for ids, lp in zip(tgt_ids, log_probs)]

    def align(self, src: Sequence[str], tgt: Sequence[str], source: str = "attention",
              threshold: Optional[float] = None, batch_tokens: int = 4000) -> List[List[Link]]:
        """Word alignments of each pair from forced decoding: ``(source word, target word)``
        links between whitespace words. ``source``: ``attention`` (summed over a word's
        pieces) or ``update-gate`` (a cyclic model's per-source update gates). Without
        ``threshold`` each target word links to its best source word; with it, to every
        source word scoring at least ``threshold``. A blank side gives no links."""
        from rnmt.analysis.align import check_threshold, word_alignment

        if source not in ("attention", "update-gate"):
            raise UserError(f"source must be attention or update-gate, got {source!r}")
        check_threshold(threshold)
        src, tgt = _check_pairs(src, tgt)
        _count("batch_tokens", batch_tokens, 1)
        v = self.loaded
        keep = [k for k, (s, t) in enumerate(zip(src, tgt)) if s.strip() and t.strip()]
        decoded = self._forced([src[k] for k in keep], [tgt[k] for k in keep], batch_tokens, [k + 1 for k in keep])
        links: List[List[Link]] = [[] for _ in src]
        for k, fd in zip(keep, decoded):
            src_pieces = [v.src_vocab.id_to_piece(i) for i in fd.src_ids]
            tgt_pieces = [v.tgt_vocab.id_to_piece(i) for i in fd.tgt_ids]
            links[k] = [tuple(link) for link in word_alignment(fd, src_pieces, tgt_pieces, source, threshold)]
        return links


def _search_options(options: Any, keywords: Dict[str, Any]) -> SearchOptions:
    """The options of a translate() call: the `SearchOptions` given, with the keywords over
    it, every value checked (`rnmt.search.options.check`)."""
    from rnmt.search.options import API, from_keywords, names

    if options is not None and not isinstance(options, SearchOptions):
        raise UserError(f"translate()'s second argument must be a SearchOptions (or give the options by name, "
                        f"beam=5), got {_kind(options)}")
    base = {} if options is None else {name: getattr(options, name) for name in names(API)}
    return from_keywords({**base, **keywords})


def _hypothesis(t: Any) -> Hypothesis:
    """The public form of a `rnmt.search.translator.Translation` with token scores."""
    scores = tuple(t.token_log_probs or ())
    pieces = tuple(t.tgt_pieces) + (("</s>",) if scores else ())
    return Hypothesis(t.text, float(t.score), pieces, scores)


def _prefix_list(prefix: Any, batch: List[str], single: bool) -> Optional[List[str]]:
    """``prefix`` as one string per line (a string for a single line), or None."""
    if prefix is None:
        return None
    given = [prefix] if single and isinstance(prefix, str) else prefix
    given = _strings(given, "prefix must be one string per line (a string when translating one line)")
    if len(given) != len(batch):
        raise UserError(f"{len(given)} prefixes for {len(batch)} lines")
    return given


def _constraint_list(constraints: Any, batch: List[str], single: bool) -> Optional[List[List[str]]]:
    """``constraints`` as one list of phrases per line (one list for a single line), or None."""
    if constraints is None:
        return None
    given = [constraints] if single and isinstance(constraints, (list, tuple)) and all(
        isinstance(p, str) for p in constraints) else constraints
    shape = ("constraints must be one list of phrases (strings) per line "
             "(a list of strings when translating one line)")
    if isinstance(given, str) or not isinstance(given, (list, tuple)):
        raise UserError(shape)
    out = []
    for phrases in given:
        if isinstance(phrases, str) or not isinstance(phrases, (list, tuple)) or not all(
                isinstance(p, str) for p in phrases):
            raise UserError(shape)
        out.append(list(phrases))
    if len(out) != len(batch):
        raise UserError(f"{len(out)} constraint lists for {len(batch)} lines")
    return out


def _check_pairs(src: Sequence[str], tgt: Sequence[str]) -> Tuple[List[str], List[str]]:
    src = _strings(src, "score() and align() take lists of sentences (strings)")
    tgt = _strings(tgt, "score() and align() take lists of sentences (strings)")
    if len(src) != len(tgt):
        raise UserError(f"{len(src)} source sentences but {len(tgt)} target sentences")
    return src, tgt


def _strings(value: Any, message: str) -> List[str]:
    """``value`` as a list of strings: a list or tuple of them, nothing else (a dict would
    give its keys, a set an arbitrary order, a string its characters)."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{message}, got {_kind(value)}")
    return list(value)


def _kind(value: Any) -> str:
    """What was given instead, for a message: its type, or the odd element's of a list."""
    if isinstance(value, (list, tuple)):
        odd = [v for v in value if not isinstance(v, str)]
        if odd:
            return f"a {type(value).__name__} holding {type(odd[0]).__name__}"
    return type(value).__name__


def _flag(name: str, value: Any) -> bool:
    """A yes/no option: True or False only (a string such as "false" would count as yes)."""
    if not isinstance(value, bool):
        raise UserError(f"option '{name}' must be True or False, got {value!r}")
    return value


def _count(name: str, value: Any, low: int) -> int:
    """An integer option of at least ``low`` (not a bool, a float or a string)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UserError(f"option '{name}' must be an integer of at least {low}, got {value!r}")
    return value


def load(path: Union[PathLike, Sequence[PathLike]], device: str = "auto", int8: bool = False,
         runtime: Optional[Dict[str, Any]] = None) -> Model:
    """Load a run directory (its best checkpoint) or a checkpoint file, in eval mode.

    ``device``: ``auto`` (CUDA when present), ``cpu``, ``cuda`` or ``cuda:N``. Several
    paths load an ensemble that averages the members' log-probabilities at every step.
    ``int8``: decode with int8 matrix products (CPU only; `rnmt.int8`). The model decodes
    under its run's recorded execution plan (``plan.json``; `rnmt.plan.decoding`), except
    the ``runtime`` keys given (``{"int8_kernels": "onednn"}``: the config's ``runtime:``
    keys); ``Model.plan`` is the plan applied.
    """
    from rnmt.device import pick_device
    from rnmt.int8 import decoding_device, quantize_for_decoding
    from rnmt.plan.apply import accelerate, apply_process
    from rnmt.plan.decoding import decoding_plan
    from rnmt.search.ensemble import load_ensemble

    _flag("int8", int8)
    paths = [path] if isinstance(path, (str, Path)) else path
    if not isinstance(paths, (list, tuple)) or not all(isinstance(p, (str, Path)) for p in paths):
        raise UserError(f"load() takes a path or a list of paths, got {_kind(path)}")
    if not paths:
        raise UserError("load() needs at least one model path")
    if runtime is not None and not isinstance(runtime, dict):
        raise UserError(f"runtime must be a dict of runtime: config keys, got {_kind(runtime)}")
    dev = decoding_device(device) if int8 else pick_device(device)
    plan = decoding_plan(paths[0], dev, runtime)
    apply_process(plan)  # before the kernels are built and int8 weights packed
    if dev.type == "cpu" and plan.kernels.value:  # build or load the C++ kernels now rather than in the first call
        from rnmt import kernels

        kernels.extension()
    loaded = load_ensemble(paths, dev)
    loaded.model = accelerate(loaded.model, plan)
    if int8:
        quantize_for_decoding(loaded.model)
    model = Model(loaded, dev)
    model.plan = plan
    return model


_DISTRIBUTED_TRAINERS: List[Any] = []  # see train()


def train(config: Union[PathLike, Dict[str, Any]], overrides: Sequence[str] = (), out: Optional[PathLike] = None,
          resume: bool = False, log: Optional[Callable[[str], None]] = None,
          corpus_changed_ok: bool = False, init_from: Optional[PathLike] = None) -> Dict[str, Any]:
    """Train a model and return the run's summary (steps, stop reason, best dev BLEU, ...).

    ``config``: a YAML file, a built-in config name (``quickstart``, ``atr/rnnsearch-atr``)
    or a dict with the file's sections. ``overrides`` are ``key.path=value`` strings as for
    ``--set``. ``out`` defaults to ``runs/<config name>``; ``resume`` continues the run in
    ``out`` with its saved config, the edits made to ``config`` since the run last read it
    and the overrides (a change to a key that may not change is a `UserError`). ``log``
    receives the progress lines (default: standard error). ``corpus_changed_ok`` lets a
    resumed run continue on a training corpus whose content changed. The summary's
    ``stop_signal`` names the signal (SIGTERM, SIGINT) that stopped the run with a
    checkpoint, or is None; either signal before the first update (vocabulary, corpus
    encoding) raises `rnmt.training.signals.Interrupted`, a `KeyboardInterrupt`, at once.
    ``init_from`` (a run directory or checkpoint) fine-tunes: the new run starts from its
    weights and vocabularies with a fresh optimiser and schedule;
    the config's ``model.*`` keys must describe the same architecture (`rnmt.training.init_from`).
    """
    from rnmt.training.distributed import shutdown
    from rnmt.training.resume import resumed_config
    from rnmt.training.signals import interrupt_preparation
    from rnmt.training.trainer import Trainer

    if not isinstance(config, (str, Path, dict)):
        raise UserError(f"train() takes a config path, a built-in config name or a dict, got {_kind(config)}")
    overrides = _strings(overrides, "overrides must be a list of 'key.path=value' strings")
    for flag, value in (("resume", resume), ("corpus_changed_ok", corpus_changed_ok)):
        _flag(flag, value)
    if isinstance(config, dict) and out is None:
        raise UserError("train() needs out= when the config is a dict")
    cfg, given, given_name = _train_config(config, overrides)
    out_dir = Path(out) if out is not None else Path("runs") / Path(str(config)).stem
    if not resume and not isinstance(config, dict):
        _config_outside(Path(given_name), out_dir)
    if log is None:
        log = _log_to_stderr
    if resume and (out_dir / "config.yaml").is_file():
        # The run's config, with the file's edits since the run last read it, then --set;
        # the trainer checks and logs what changed.
        cfg, note = resumed_config(out_dir, given, overrides, given_name)
        if note:
            log(note)
    with interrupt_preparation():  # SIGTERM/SIGINT before the first update: `Interrupted` at once
        trainer = Trainer(cfg, out_dir, resume=resume, log=log, corpus_changed_ok=corpus_changed_ok,
                          init_from=init_from)
    _record_source(trainer, out_dir, given)
    summary = trainer.run()
    shutdown(trainer.dist)  # only after success: a failed rank just exits and torchrun stops the rest
    if trainer.dist.enabled:
        # Kept alive: freeing the DDP model here would run gloo's destructor while holding the
        # GIL its work thread waits for (a hang seen under torch 2.13); `rnmt train` then
        # leaves the process without destructors (rnmt/commands/train.py).
        _DISTRIBUTED_TRAINERS.append(trainer)
    return {**summary, "out": str(out_dir), "stop_signal": trainer.stop_signal, "step": trainer.step}


def _train_config(config: Union[PathLike, Dict[str, Any]], overrides: List[str]) -> Tuple[Any, Dict[str, Any], str]:
    """(the config with ``overrides``, the tree as given, the name its errors go by): a
    file's errors are prefixed with its path."""
    from rnmt.config import config_from_dict, read_config_tree

    if isinstance(config, dict):
        return config_from_dict(config, overrides), config, "the config given"
    path, given = read_config_tree(config)
    try:
        return config_from_dict(given, overrides, source=str(path)), given, str(path)
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None


def _log_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _record_source(trainer: Any, out_dir: Path, given: Dict[str, Any]) -> None:
    """Write (rank 0) the record of the config as given, what the next --resume compares the
    file with, unless it holds that already."""
    from rnmt.training.checkpoint import atomic_write_text
    from rnmt.training.resume import SOURCE_FILE, source_record

    record = source_record(given)
    source = out_dir / SOURCE_FILE
    if trainer.is_main and (not source.is_file() or source.read_text(encoding="utf-8") != record):
        atomic_write_text(source, record)


def _config_outside(path: Path, out_dir: Path) -> None:
    """A new run writes its resolved config to ``config.yaml`` (and a record of the file to
    ``config.source.yaml``): given one of them as its config, it would replace the user's file,
    comments and all. A directory that already holds a run is refused by the trainer."""
    import os

    from rnmt.training.resume import SOURCE_FILE
    from rnmt.training.setup import STATE_FILE

    if (out_dir / STATE_FILE).exists() or not path.is_file():
        return
    for name in ("config.yaml", SOURCE_FILE):
        written = out_dir / name
        if written.is_file() and os.path.samefile(path, written):
            raise UserError(f"{path} is the {name} a new run writes into {out_dir}: keep the config outside the "
                            f"output directory or choose another --out (--resume continues a run from its own)")


def evaluate(hyps: Sequence[str], refs: Union[Sequence[str], Sequence[Sequence[str]]], tokenize: str = "13a",
             lowercase: bool = False, metrics: Sequence[str] = ("bleu", "chrf")) -> Dict[str, float]:
    """Corpus scores of ``hyps`` against one reference list or several: ``{"bleu": ..,
    "chrf": ..}`` (sacrebleu; ``metrics`` may add ``ter``)."""
    from rnmt.evaluation.metrics import METRICS, corpus_score

    hyps = _strings(hyps, "evaluate() takes a list of hypothesis strings")
    if not hyps:
        raise UserError("evaluate() needs at least one hypothesis")
    # One reference list (strings) or several (lists of strings).
    shape = "evaluate() takes one list of reference strings or a list of such lists"
    if isinstance(refs, (list, tuple)) and refs and all(isinstance(r, str) for r in refs):
        streams = [list(refs)]
    elif isinstance(refs, (list, tuple)) and refs and all(isinstance(r, (list, tuple)) for r in refs):
        streams = [_strings(r, shape) for r in refs]
    else:
        empty = isinstance(refs, (list, tuple)) and not refs
        raise UserError(f"{shape}, got {'no references' if empty else _kind(refs)}")
    _flag("lowercase", lowercase)
    metrics = _strings(metrics, "metrics must be a list of metric names")
    unknown = [m for m in metrics if m not in METRICS]
    if unknown or not metrics:
        raise UserError(f"metrics must name at least one of {', '.join(METRICS)}, got {metrics!r}")
    for k, stream in enumerate(streams):
        if len(stream) != len(hyps):
            raise UserError(f"{len(hyps)} hypotheses but {len(stream)} lines in reference {k + 1}")
    return {name: corpus_score(name, hyps, streams, tokenize, lowercase).score for name in metrics}


def distill(teachers: Union[PathLike, Sequence[PathLike]], students: Union[PathLike, Sequence[PathLike]],
            out: PathLike, log: Optional[Callable[[str], None]] = None, command: Optional[str] = None,
            **options: Any) -> Dict[str, Any]:
    """Distil the teacher run(s) into the student config(s) in ``out`` (resuming what is
    there) and return the report; ``options`` are `rnmt.distill.options.DistillOptions`'
    fields (``seeds=[1, 2]``, ``overrides=["train.max_steps=2000"]``). A student run stopped by
    SIGTERM or SIGINT raises `rnmt.distill.students.TrainingStopped` (its checkpoint saved; the
    same call resumes). docs/distill.md."""
    from dataclasses import fields

    from rnmt.distill import distill as run
    from rnmt.distill.options import DistillOptions

    known = {f.name for f in fields(DistillOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UserError(f"distill() has no option {unknown[0]!r}; options: {', '.join(sorted(known))}")
    as_list = [teachers] if isinstance(teachers, (str, Path)) else list(teachers)
    configs = [students] if isinstance(students, (str, Path)) else list(students)
    return run([str(t) for t in as_list], [str(s) for s in configs], str(out), DistillOptions(**options), log=log,
               command=command)
