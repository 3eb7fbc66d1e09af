"""Each claim's verdict in both regimes side by side: after equal updates (how fast each
system learns, ``results/<paper>/``) and at convergence (where it ends,
``results/<paper>-converged/``).

A converged README gets this section when the learning-speed table of the same paper sits
next to it, so that a reader sees, claim by claim, whether a verdict changed with training
length: "DTMT#4 beats DTMT#1" reversed at 2,000 updates says little about depth if the two
systems converge to the same place.

It also states a converged table's training regime (`regime_header`): the stopping rule,
precision and CPU class of its runs, and whether they are one for all runs, since a
converged comparison that crosses them measures the regime as well as the systems.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple


def _learning_speed_json(converged_dir: Path, file: str) -> Optional[dict]:
    """``results/<paper>/<file>`` beside ``results/<paper>-converged/``, parsed, or None when
    that table has not been run (or the file cannot be read)."""
    name = converged_dir.name
    if not name.endswith("-converged"):
        return None
    try:
        data = json.loads((converged_dir.parent / name[: -len("-converged")] / file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def learning_speed_claims(converged_dir: Path) -> Optional[List[dict]]:
    """The claims of the learning-speed table's ``results.json``, or None."""
    claims = (_learning_speed_json(converged_dir, "results.json") or {}).get("claims")
    return claims if isinstance(claims, list) else None


def learning_speed_timings(converged_dir: Path) -> Optional[Dict[str, dict]]:
    """The learning-speed table's side-by-side timings (its ``speed.json``), or None. A
    converged table judges its speed claims by them: the time of an update does not depend
    on how long a run trains (same models, batches and threads), and timing again at the end
    of a converged table would run beside whatever the pool trains next."""
    return _learning_speed_json(converged_dir, "speed.json")


def verdict(claim: dict) -> str:
    """The verdict without its long reasons (the per-paper READMEs give them in full)."""
    return str(claim.get("status", "-")).split(" (")[0]


def differences(claim: dict) -> str:
    """Per seed: the BLEU difference (first system minus second) and its 95% interval."""
    ci, diffs = claim.get("ci"), claim.get("differences")
    if not ci or not diffs or claim.get("kind") == "faster":
        return "-"
    return " / ".join(f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]" for d, (lo, hi) in zip(diffs, ci))


def updates(claim: dict) -> str:
    """The updates each system trained for, per seed (a / b)."""
    runs = claim.get("runs") or []
    if not runs:
        return "-"
    return ", ".join(f"{r['a'].get('steps', '-')} / {r['b'].get('steps', '-')}" for r in runs)


def _key(claim: dict) -> tuple:
    return claim.get("kind"), claim.get("a"), claim.get("b")


def regimes_section(paper: str, equal: List[dict], converged: List[dict]) -> List[str]:
    """Markdown lines: one row per claim of the converged table, with the learning-speed
    table's verdict for the same claim (matched by kind and systems)."""
    by_key: Dict[tuple, dict] = {_key(c): c for c in equal}
    lines = ["## Both regimes", "",
             f"Each claim judged after equal updates (the learning-speed table, `results/{paper}/`) and at "
             "convergence (this table), by the same rules; differences are BLEU, first system minus second, "
             "per seed, with the paired bootstrap's 95% interval.", "",
             "| paper says | equal updates: verdict | difference [95% interval] | converged: verdict | "
             "difference [95% interval] | updates (per seed) |",
             "|---|---|---|---|---|---|"]
    for c in converged:
        e = by_key.get(_key(c), {})
        lines.append(f"| {c.get('text', '-')} | {verdict(e) if e else 'not in that table'} | "
                     f"{differences(e) if e else '-'} | {verdict(c)} | {differences(c)} | {updates(c)} |")
    lines.append("")
    return lines


# -- the regime a converged table's runs were trained under --------------------------------
def _patience(record: dict, default: Optional[int]) -> Optional[int]:
    value = (record.get("recipe") or {}).get("train.patience")
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def cpu_class(machine: dict) -> str:
    """The processor as a record names it, with its bf16 instructions: what decides the
    precision `train.amp: auto` picks and the arithmetic a run did."""
    bf16 = machine.get("cpu_bf16")
    return f"{machine.get('cpu') or 'unknown CPU'} ({bf16})" if bf16 else str(machine.get("cpu") or "unknown CPU")


def regime_of(records: Sequence[dict], patience: Optional[int]) -> Dict[str, Dict[str, List[str]]]:
    """{aspect: {value: [runs]}} for the three aspects a converged comparison must not cross:
    the stopping rule (patience), the precision and the CPU class."""
    aspects: Dict[str, Dict[str, List[str]]] = {"patience": {}, "precision": {}, "CPU class": {}}
    for r in records:
        machine = r.get("machine") or {}
        values = {"patience": str(_patience(r, patience)), "precision": str(machine.get("precision") or "-"),
                  "CPU class": cpu_class(machine)}
        for aspect, value in values.items():
            aspects[aspect].setdefault(value, []).append(str(r.get("run", r.get("system", "?"))))
    return aspects


def reruns(results_dir: Path) -> List[str]:
    """Other tables of the same name one folder down the results root (``<root>/*/<name>/``,
    e.g. a rerun in one regime under ``--out results/<regime>``), each as "path (state)"."""
    found = []
    for other in sorted(results_dir.parent.glob(f"*/{results_dir.name}/settings.json")):
        table = other.parent
        summary: dict = {}
        try:
            summary = json.loads((table / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        done = len([p for p in table.glob("*.json") if p.name not in ("settings.json", "results.json", "speed.json",
                                                                       "gates.json")])
        state = "finished" if summary and not summary.get("missing") else f"in progress, {done} runs finished"
        found.append(f"`../{table.parent.name}/{table.name}/` ({state})")
    return found


def _runs(names: Sequence[str]) -> str:
    """Run names grouped by system: "dtmt1 (seeds 1, 2), dtmt4 (seed 1)"."""
    seeds: Dict[str, List[str]] = {}
    for name in sorted(names):
        system, _, seed = name.partition(".seed")
        seeds.setdefault(system, []).append(seed)
    return ", ".join(f"{system} (seed{'s' if len(ss) > 1 else ''} {', '.join(ss)})" if all(ss) else system
                     for system, ss in seeds.items())


def regime_header(records: Sequence[dict], settings: dict, results_dir: Optional[Path]) -> Tuple[bool, List[str]]:
    """(mixed, Markdown lines) for the top of a converged README: the patience, precision and
    CPU class of its runs, and, when they differ, which runs had which and where a rerun in
    one regime is."""
    aspects = regime_of(records, settings.get("patience"))
    mixed = [a for a, values in aspects.items() if len(values) > 1]
    if not mixed:
        one = {a: next(iter(v), "-") for a, v in aspects.items()}
        return False, [f"**Regime**: one for every run: patience {one['patience']}, {one['precision']}, "
                       f"{one['CPU class']}.", ""]
    parts = []
    for aspect, values in aspects.items():
        if len(values) > 1:
            parts.append(f"{aspect} " + "; ".join(f"{v} for {_runs(runs)}" for v, runs in values.items()))
        else:
            parts.append(f"{aspect} {next(iter(values))} for every run")
    named = ", ".join(mixed[:-1]) + " and " + mixed[-1] if len(mixed) > 1 else mixed[0]
    lines = ["**Mixed regime**: the runs of this table differ in " + named + " (" + "; ".join(parts)
             + "), so a comparison between runs of different regimes measures the regime as well as the systems."]
    elsewhere = reruns(results_dir) if results_dir is not None else []
    if elsewhere:
        lines[0] += " The same table in one regime: " + ", ".join(elsewhere) + "."
    return True, lines + [""]
