"""What a paper's reproduction contains: its systems, baseline, orderings and figures.

A paper is described by ``configs/reproduce/<paper>.yaml``; the systems point at the
paper configs under ``configs/papers/`` so that a reproduction trains exactly what
``rnmt train`` would, changed only by the overrides of the miniature.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from rnmt.errors import UserError
from rnmt.io.bounded_yaml import load_yaml
from rnmt.resources import configs_dir

PAPERS = ("atr", "cseq2seq", "dtmt", "survey")  # the order of `rnmt reproduce all`
CLAIM_KINDS = ("better", "about", "same", "faster")


def repository_root() -> Path:
    """The checkout this package lives in (configs/ and data/ sit next to rnmt/); for an
    installed package without them, the current directory."""
    checkout = Path(__file__).resolve().parents[2]
    return checkout if (checkout / "configs" / "reproduce").is_dir() else Path.cwd().resolve()


@dataclass(frozen=True)
class SystemSpec:
    name: str  # file-name-safe identifier, e.g. "rnnsearch-atr"
    label: str  # the row name of the paper's table
    config: str  # paper config, ``configs/papers/...`` (resolved by rnmt.resources)
    paper_params: str = ""
    paper_bleu: Optional[float] = None
    paper_speed: str = ""
    recipe: Dict[str, Any] = field(default_factory=dict)  # this system's own settings over the family recipe


@dataclass(frozen=True)
class Claim:
    """An ordering the paper reports between systems ``a`` and ``b``.

    ``better``: a has higher test BLEU than b. ``about``: a is not significantly worse than
    b (and has fewer parameters). ``same``: a and b are not significantly apart (a change of
    precision or implementation that must not change quality). ``faster``: a is higher on
    ``metric`` (a speed).
    """

    kind: str
    a: str
    b: str
    text: str
    source: str = ""
    metric: str = "test_bleu"


@dataclass(frozen=True)
class PaperSpec:
    paper: str
    title: str
    tables: str
    paper_metric: str
    baseline: str
    systems: List[SystemSpec]
    optional_systems: List[SystemSpec] = field(default_factory=list)
    claims: List[Claim] = field(default_factory=list)
    by_length: Optional[Dict[str, Any]] = None  # {"form": ..., "boundaries": [...]}
    gates: Optional[Dict[str, Any]] = None  # {"system": ..., "paper_r": ...}
    greedy_speed: bool = False
    # The family recipe: dotted config keys applied to every system over its paper config
    # (initialisation, schedule, dropout, ...), found by measurement (docs/reproduce.md).
    recipe: Dict[str, Any] = field(default_factory=dict)
    seeded: List[str] = field(default_factory=list)  # systems trained with every seed (claims rest on them)
    # The systems the converged table trains when none are named (`converged:` in the spec;
    # empty: the paper has no converged table planned, and the main table is the default).
    converged: List[str] = field(default_factory=list)
    default: List[str] = field(default_factory=list)  # what `select(None)` gives (set by for_protocol)

    def system(self, name: str) -> SystemSpec:
        for s in self.systems + self.optional_systems:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.systems + self.optional_systems)
        raise UserError(f"{self.paper}: no system '{name}'; systems: {known}")

    def for_protocol(self, converge: bool) -> PaperSpec:
        """The spec as a protocol trains it. The learning-speed tables give every seed only to
        the ``seeded`` systems; at convergence every system gets every seed, since each claim
        judged there rests on both of its systems (the Cseq2seq table's RNNSearch baseline
        has one seed after equal updates)."""
        if not converge:
            return self
        return replace(self, seeded=[s.name for s in self.systems + self.optional_systems],
                       default=list(self.converged))

    def select(self, names: Optional[Sequence[str]]) -> List[SystemSpec]:
        """The named systems (optional systems included) in the order given, else the
        protocol's default (the converged table's systems at convergence, else the main
        table); the baseline always comes first so every p-value has its reference."""
        names = names or self.default
        chosen = list(self.systems) if not names else [self.system(n) for n in names]
        if self.baseline not in [s.name for s in chosen]:
            chosen.insert(0, self.system(self.baseline))
        return chosen


def _systems(rows: Any, where: str) -> List[SystemSpec]:
    if not isinstance(rows, list):
        raise UserError(f"{where}: expected a list of systems")
    try:
        systems = [SystemSpec(**row) for row in rows]
    except TypeError as exc:
        raise UserError(f"{where}: bad system entry ({exc})") from None
    for s in systems:
        _recipe(s.recipe, f"{where}: system {s.name}")
    return systems


def _recipe(tree: Any, where: str) -> Dict[str, Any]:
    if tree is None:
        return {}
    if not isinstance(tree, dict) or not all(isinstance(k, str) and "." in k for k in tree):
        raise UserError(f"{where}: recipe must map dotted config keys (e.g. train.lr) to values")
    return dict(tree)


def load_paper(paper: str, root: Optional[Path] = None) -> PaperSpec:
    """Read ``configs/reproduce/<paper>.yaml`` from the built-in configs (or from ``root``,
    a directory holding ``configs/``)."""
    path = (root / "configs" if root else configs_dir()) / "reproduce" / f"{paper}.yaml"
    if not path.is_file():
        raise UserError(f"unknown paper '{paper}'; choose one of {', '.join(PAPERS)}, all, or a protocol "
                        f"of configs/reproduce/ (bf16)")
    tree = load_yaml(path.read_text(encoding="utf-8")) or {}
    where = f"configs/reproduce/{paper}.yaml"
    try:
        claims = [Claim(**c) for c in tree.get("claims") or []]
    except TypeError as exc:
        raise UserError(f"{where}: bad claim ({exc})") from None
    spec = PaperSpec(
        paper=tree.get("paper", paper), title=tree["title"], tables=tree["tables"],
        paper_metric=tree.get("paper_metric", "BLEU"), baseline=tree["baseline"],
        systems=_systems(tree["systems"], where),
        optional_systems=_systems(tree.get("optional_systems") or [], where),
        claims=claims, by_length=tree.get("by_length"), gates=tree.get("gates"),
        greedy_speed=bool(tree.get("greedy_speed", False)),
        recipe=_recipe(tree.get("recipe"), where), seeded=list(tree.get("seeded") or []),
        converged=list(tree.get("converged") or []))
    names = {s.name for s in spec.systems + spec.optional_systems}
    for key, listed in (("seeded", spec.seeded), ("converged", spec.converged)):
        for n in listed:
            if n not in names:
                raise UserError(f"{where}: {key} names unknown system '{n}'")
    for c in claims:
        if c.kind not in CLAIM_KINDS:
            raise UserError(f"{where}: claim kind '{c.kind}' is not one of {', '.join(CLAIM_KINDS)}")
        for n in (c.a, c.b):
            if n not in names:
                raise UserError(f"{where}: claim names unknown system '{n}'")
    spec.system(spec.baseline)
    return spec
