"""Search options, defined once: `SearchOptions` is the one list of what a search may be told.

Each field carries its type, default, bounds, help text and the interfaces that take it
(`Spec`): `rnmt translate`'s flags (`add_arguments`, `from_arguments`), the Python API's
keywords (`rnmt.api.Model.translate` takes a `SearchOptions` or the same names as keywords,
`TranslateKeywords`), the server's request fields with the same bounds (`server_fields`) and
the description ``GET /model`` gives the page to build its controls from (`describe`).
A test holds the four views and the config's ``search:`` section to the same names,
defaults and bounds (tests/unit/test_search_options.py).

A default of None means "the model's config" for an option that is also a key of the
config's ``search:`` section (``beam``, ``alpha``, ...; its bound is then read from
`rnmt.config.SearchConfig` rather than written twice), and "off" for the others.

To add an option: a field here (with `option`), the code that uses it in
`rnmt.search.translator` (and the server's `rnmt.serve.app.TranslationService` if it
applies there), a line in `TranslateKeywords`; docs/translation.md lists the flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

from typing_extensions import TypedDict

from rnmt.config import SEED, Range, SearchConfig
from rnmt.errors import UserError
from rnmt.search.limits import MAX_OUTPUT_TOKENS
from rnmt.search.mbr import UTILITIES

CLI, API, SERVER = "cli", "api", "server"
EVERYWHERE = frozenset({CLI, API, SERVER})
LOCAL = frozenset({CLI, API})  # the command and the Python API, not the server
# Longest output a caller may ask for (--max-output-tokens): 256 times the default cap; the
# search's memory grows with it (attention of every step, the n-gram history).
MOST_OUTPUT_TOKENS = 65536
TOPK = Range(1, 1048576)  # at most the largest vocabulary a config may ask for (rnmt.config.VOCAB)
TOPP = Range(0, 1, low_open=True)
TEMPERATURE = Range(0, low_open=True)  # inf included: a uniform draw among the allowed words
EPSILON = Range(0, 1, high_open=True)
COUNT = Range(0, 2 ** 63 - 1)


@dataclass(frozen=True)
class Spec:
    """What one option is: its help text, the interfaces that take it, its bound (None:
    the config's `SearchConfig` field's), the values of a choice, and how it is spelled
    where that differs from its name."""

    help: str
    where: FrozenSet[str] = EVERYWHERE
    bound: Optional[Range] = None
    choices: Tuple[str, ...] = ()
    flag: Optional[str] = None  # the command's spelling, when not --NAME
    metavar: Optional[str] = None
    allow_inf: bool = False  # a float bound above only by infinity (temperature)
    per_line: bool = False  # one value per input line (prefix, constraints): its shape is each view's own
    server_limit: Optional[str] = None  # a `ServeSettings` field narrowing the upper bound on the server


def option(help: str, default: Any = None, **spec: Any) -> Any:
    return field(default=default, metadata={"spec": Spec(help, **spec)})


@dataclass(frozen=True)
class SearchOptions:
    """How to search (or sample) for translations; None: the model's config (or off)."""

    beam: Optional[int] = option("beam size (1 = greedy; default from the model's config)", server_limit="max_beam")
    greedy: bool = option("greedy search", False, where=LOCAL)
    alpha: Optional[float] = option("GNMT length penalty exponent (default from the model's config)")
    normalize: Optional[str] = option("length normalisation of scores (default from the model's config)",
                                      where=LOCAL, choices=("gnmt", "length", "none"))
    coverage: Optional[float] = option(
        "GNMT coverage penalty on beam search's finished hypotheses (default from the model's config; 0: off): "
        "beta * sum over source words of log(min(their total attention, 1))", metavar="BETA")
    nbest: int = option("the N best translations (samples with --sample) of each line; the command prints them "
                        "as 'i ||| text ||| score'", 1, metavar="N", server_limit="max_beam")
    max_len_ratio: Optional[float] = option("output length limit as a multiple of the input length (default from "
                                            "the model's config)", where=LOCAL)
    batch_tokens: Optional[int] = option("source tokens per decoding batch (default from the model's config)",
                                         where=LOCAL)
    max_output_tokens: int = option("longest output in subwords, whatever the source length (as rnmt serve's "
                                    "--max-output-tokens)", MAX_OUTPUT_TOKENS, where=LOCAL,
                                    bound=Range(1, MOST_OUTPUT_TOKENS), metavar="N")
    max_input_tokens: Optional[int] = option(
        "translate a line of more subwords in pieces joined into one output line, with a warning (default: the "
        "longest source whose output --max-output-tokens does not cut)", where=LOCAL, bound=Range(2, 2 ** 31 - 1),
        metavar="N")
    no_repeat_ngram: Optional[int] = option("no output contains the same N subwords twice (default from the "
                                            "model's config; 0: off)", metavar="N")
    min_output_tokens: Optional[int] = option("no output ends before N subwords, so none is empty (default from "
                                              "the model's config; 0: off)", metavar="N",
                                              server_limit="max_output_tokens")
    sample: bool = option("draw each word from the model's distribution instead of searching (--nbest N: N "
                          "samples)", False, where=LOCAL)
    topk: Optional[int] = option("with --sample: draw among the K most probable words", where=LOCAL, bound=TOPK,
                                 metavar="K")
    topp: Optional[float] = option("with --sample: draw among the most probable words of mass P", where=LOCAL,
                                   bound=TOPP, metavar="P")
    temperature: Optional[float] = option("with --sample: divide log-probabilities by T first (inf: a uniform "
                                          "draw)", where=LOCAL, bound=TEMPERATURE, allow_inf=True, metavar="T")
    epsilon: Optional[float] = option("with --sample: never draw a word of probability below EPS (epsilon "
                                      "sampling; 0: off)", where=LOCAL, bound=EPSILON, metavar="EPS")
    seed: Optional[int] = option(f"with --sample: seed of the draws, {SEED.low:.0f} to {SEED.high:.0f} (default 1; "
                                 f"same seed, same output)", where=LOCAL, bound=SEED)
    mbr: Optional[str] = option("choose each line's output among its --nbest N candidates (beam search's N best, or N "
                                "samples with --sample) by minimum Bayes risk: the one with the highest expected "
                                "METRIC against the others as references; one output per line", where=LOCAL,
                                choices=UTILITIES, metavar="METRIC")
    line_offset: int = option("with sample: the first line's key for the draws (a text translated in pieces "
                              "samples as in one call)", 0, where=frozenset({API}), bound=COUNT)
    prefix: Any = option("target prefixes, one per input line (empty: none); each output starts with its prefix",
                         where=LOCAL, per_line=True, metavar="FILE")
    constraints: Any = option("target phrases each output must contain, one line per input line, phrases separated "
                              "by tabs (empty line: none); beam search with dynamic beam allocation (greedy: a beam "
                              "of one)", per_line=True, metavar="FILE")
    token_scores: bool = option("add each output subword's log-probability: TEXT<TAB>LOGPROBS<TAB>PIECES", False,
                                where=LOCAL, flag="--scores")
    return_alignment: bool = option("return the attention matrix of the best hypothesis", False,
                                    where=frozenset({SERVER}))

    def given(self) -> Dict[str, Any]:
        """The options set to something other than their default."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != f.default}


class TranslateKeywords(TypedDict, total=False):
    """`SearchOptions`'s fields as the keywords of `rnmt.api.Model.translate`, for mypy (a
    TypedDict cannot be generated where a type checker sees it; a test holds the two equal)."""

    beam: Optional[int]
    greedy: bool
    alpha: Optional[float]
    normalize: Optional[str]
    coverage: Optional[float]
    nbest: int
    max_len_ratio: Optional[float]
    batch_tokens: Optional[int]
    max_output_tokens: int
    max_input_tokens: Optional[int]
    no_repeat_ngram: Optional[int]
    min_output_tokens: Optional[int]
    sample: bool
    topk: Optional[int]
    topp: Optional[float]
    temperature: Optional[float]
    epsilon: Optional[float]
    seed: Optional[int]
    mbr: Optional[str]
    line_offset: int
    prefix: Union[str, Sequence[str], None]
    constraints: Union[Sequence[str], Sequence[Sequence[str]], None]
    token_scores: bool


# -- the definition, read --------------------------------------------------------------
def spec(name: str) -> Spec:
    return _FIELDS[name].metadata["spec"]


def names(where: str) -> List[str]:
    """The options one interface takes, in definition order."""
    return [f.name for f in dataclasses.fields(SearchOptions) if where in f.metadata["spec"].where]


def kind(name: str) -> type:
    """``int``, ``float``, ``bool`` or ``str`` (a choice); ``object`` for a per-line option."""
    hint = _HINTS[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return args[0] if args[0] in (int, float, bool, str) else object


def bound(name: str) -> Optional[Range]:
    """The option's bound: its own, else its `SearchConfig` field's; None for none."""
    own = spec(name).bound
    if own is not None or name not in _CONFIG_HINTS:
        return own
    ranges = [b for b in typing.get_args(_CONFIG_HINTS[name])[1:] if isinstance(b, Range)]
    return ranges[0] if ranges else None


def default(name: str) -> Any:
    return _FIELDS[name].default


def in_config(name: str) -> bool:
    """Whether the config's ``search:`` section has the option (its default then comes from there)."""
    return name in _CONFIG_HINTS


def flag(name: str) -> str:
    return spec(name).flag or "--" + name.replace("_", "-")


# -- checking one value ------------------------------------------------------------------
def problem(name: str, value: Any) -> Optional[str]:
    """What is wrong with ``value`` for the option ``name`` (the end of a sentence that
    begins with its name: "must be ..., got ..."), or None. None as a value is "not given"."""
    if value is None or spec(name).per_line:
        return None
    tp = kind(name)
    if tp is bool:
        return None if isinstance(value, bool) else f"must be True or False, got {_show(value)}"
    if tp is str:
        choices = spec(name).choices
        return None if value in choices else f"must be one of {', '.join(choices)}, got {_show(value)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or tp is int and not isinstance(value, int):
        return f"must be {'an integer' if tp is int else 'a number'}, got {_show(value)}"
    if isinstance(value, float) and not (math.isfinite(value) or spec(name).allow_inf and value == math.inf):
        return f"must be a {'number' if spec(name).allow_inf else 'finite number'}, got {_show(value)}"
    limits = bound(name)
    if limits is not None and not limits.holds(value):
        return f"must be {describe_bound(limits)}, got {_show(value)}"
    return None


def describe_bound(limits: Range) -> str:
    """Range.describe with whole numbers shown without '.0'."""
    shown = dataclasses.replace(limits, low=_whole(limits.low), high=_whole(limits.high))
    return shown.describe()


def check(options: SearchOptions, dash: bool = False) -> SearchOptions:
    """``options`` with every value checked against its type and bound; the first wrong one
    is a `UserError` naming it as the command (``dash``) or the API spells it."""
    for f in dataclasses.fields(options):
        wrong = problem(f.name, getattr(options, f.name))
        if wrong is not None:
            raise UserError(f"{flag(f.name) if dash else f'option {f.name!r}'} {wrong}")
    return options


def from_keywords(keywords: Dict[str, Any]) -> SearchOptions:
    """The API's keywords as checked `SearchOptions`; an unknown name is a `UserError`."""
    known = names(API)
    unknown = sorted(set(keywords) - set(known))
    if unknown:
        raise UserError(f"unknown translate option(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return check(SearchOptions(**keywords))


# -- the command line -------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`rnmt translate`'s flags, one per option the command takes."""
    for name in names(CLI):
        s, tp = spec(name), kind(name)
        if tp is bool:
            parser.add_argument(flag(name), dest=name, action="store_true", help=s.help)
            continue
        extra: Dict[str, Any] = {"metavar": s.metavar} if s.metavar else {}
        if s.choices:
            extra["choices"] = s.choices
        elif tp in (int, float):
            extra["type"] = tp
        limits = bound(name)
        shown = f"{s.help} [{describe_bound(limits)}]" if limits is not None and not s.per_line else s.help
        parser.add_argument(flag(name), dest=name, default=default(name), help=shown, **extra)


def from_arguments(args: argparse.Namespace) -> SearchOptions:
    """The parsed flags as checked `SearchOptions` (per-line files stay out: the command
    reads them chunk by chunk)."""
    given = {name: getattr(args, name) for name in names(CLI) if not spec(name).per_line}
    return check(SearchOptions(**given), dash=True)


# -- the server ------------------------------------------------------------------------
def server_bound(name: str, settings: Any) -> Optional[Range]:
    """The option's bound on a server with ``settings``: narrowed by its `Spec.server_limit`."""
    limits = bound(name)
    setting = spec(name).server_limit
    if setting is None:
        return limits
    high = getattr(settings, setting)
    low = limits.low if limits is not None else None
    return Range(low, high if limits is None or limits.high is None else min(high, limits.high))


def server_fields(settings: Any) -> Dict[str, Tuple[Any, Any]]:
    """``{name: (annotation, pydantic Field)}`` of the request's search options, for
    `pydantic.create_model`; per-line options are left to the request's own shape."""
    from pydantic import Field

    out: Dict[str, Tuple[Any, Any]] = {}
    for name in names(SERVER):
        s, tp = spec(name), kind(name)
        if s.per_line:
            continue
        limits = server_bound(name, settings)
        constraints: Dict[str, Any] = {}
        if limits is not None:
            if limits.low is not None:
                constraints["gt" if limits.low_open else "ge"] = _typed(limits.low, tp)
            if limits.high is not None:
                constraints["lt" if limits.high_open else "le"] = _typed(limits.high, tp)
        if tp is float:
            constraints["allow_inf_nan"] = False
        annotation = tp if default(name) is not None else Optional[tp]
        out[name] = (annotation, Field(default(name), description=s.help, **constraints))
    return out


def describe(settings: Any, config: SearchConfig) -> List[Dict[str, Any]]:
    """The server's options for ``GET /model``: name, type, the default this model uses,
    bounds, choices and help, in definition order; the page builds its controls from it."""
    out = []
    for name in names(SERVER):
        s, tp = spec(name), kind(name)
        if s.per_line:
            continue
        value = default(name)
        if value is None and in_config(name):
            value = getattr(config, name)
        limits = server_bound(name, settings)
        entry: Dict[str, Any] = {"name": name, "type": {int: "integer", float: "number", bool: "boolean",
                                                       str: "choice"}[tp], "default": value, "help": s.help,
                                 "minimum": None, "maximum": None, "exclusive_minimum": False,
                                 "exclusive_maximum": False, "choices": list(s.choices) or None}
        if limits is not None:
            entry.update(minimum=_typed(limits.low, tp), maximum=_typed(limits.high, tp),
                         exclusive_minimum=limits.low_open, exclusive_maximum=limits.high_open)
        out.append(entry)
    return out


def _typed(x: Optional[float], tp: type) -> Any:
    if x is None:
        return None
    return int(x) if tp is int else float(x)


def _whole(x: Optional[float]) -> Optional[float]:
    return int(x) if x is not None and float(x).is_integer() else x


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_FIELDS = {f.name: f for f in dataclasses.fields(SearchOptions)}
_HINTS = typing.get_type_hints(SearchOptions)
_CONFIG_HINTS = {k: v for k, v in typing.get_type_hints(SearchConfig, include_extras=True).items()
                 if k in _FIELDS}
