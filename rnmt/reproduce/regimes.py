"""Each claim's verdict in both regimes side by side: after equal updates (how fast each
system learns, ``results/<paper>/``) and at convergence (where it ends,
``results/<paper>-converged/``).

A converged README gets this section when the learning-speed table of the same paper sits
next to it, so that a reader sees, claim by claim, whether a verdict changed with training
length: "DTMT#4 beats DTMT#1" reversed at 2,000 updates says little about depth if the two
systems converge to the same place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional


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
