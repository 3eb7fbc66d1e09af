"""The README's table of the papers' claims, written from the committed results.json files.

Each paper's claims in two regimes: after the same 2,000 updates (``results/<paper>/``) and
trained to convergence (``results/<paper>-converged/``): the verdict of `rnmt reproduce`'s
rules with a short reason, and per seed the BLEU difference (first system minus second) with
its 95% interval. `tests/unit/test_claims_table.py` checks that README.md holds exactly
these rows, so a verdict in the README cannot drift from its records.

    python results/claims_table.py          # print the table
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
# (table, its name in the README, a note after the name); rnmt's own claims last
PAPERS = (("atr", "ATR", ""), ("dtmt", "DTMT", ""), ("cseq2seq", "Cseq2seq", ""), ("bf16", "bf16", " (rnmt's own)"))
HEADER = ["| paper | claim | verdict, 2,000 updates | difference | verdict, converged | difference |",
          "|---|---|---|---|---|---|"]


def claim_text(text: str) -> str:
    """The claim without the paper's figures: parentheses holding digits dropped, and the
    parameter clause of an "about as good" claim ("with fewer parameters ...")."""
    return re.sub(r"\s*\((?=[^)]*\d)[^)]*\)", "", text).split(" with fewer parameters")[0].strip()


def _labels(table: dict) -> Dict[str, str]:
    """Each system's short name: its paper's row name without the details after it
    ("DTMT#4 (L-GRU + T-GRUs)" and "DTMT#4, fp32" are both DTMT#4)."""
    return {name: str(runs[0].get("label", name)).split(" (")[0].split(",")[0]
            for name, runs in (table.get("systems") or {}).items() if runs}


def _sanity_reason(status: str, labels: Dict[str, str]) -> str:
    """"DTMT#4 loops", "Seq2seq below 10 BLEU": the systems the sanity check failed and why."""
    found: Dict[str, str] = {}
    for system, why in re.findall(r"([\w-]+) seed \d+: (loops|BLEU)", status):
        found.setdefault(labels.get(system, system), "loops" if why == "loops" else "below 10 BLEU")
    return ", ".join(f"{label} {why}" for label, why in found.items())


def verdict(claim: dict, labels: Dict[str, str], mixed: bool) -> str:
    """The verdict's word with the reason a reader needs beside it; "" when not run."""
    status = str(claim.get("status", ""))
    word = re.split(r"[:( ]", status, maxsplit=1)[0]
    if word == "not":
        return ""
    notes: List[str] = []
    if claim.get("kind") == "faster":
        speed = re.search(r"\((\d+(?:\.\d+)?x)", status)
        notes += [speed.group(1)] if speed else []
    elif len(claim.get("ci") or []) == 1:
        notes.append("one seed")
    if "fails the sanity check" in status:
        notes.append(_sanity_reason(status, labels))
    if mixed:
        notes.append("mixed regime")
    return word + (f" ({', '.join(notes)})" if notes else "")


def difference(claim: dict) -> str:
    ci, diffs = claim.get("ci") or [], claim.get("differences") or []
    if claim.get("kind") == "faster" or not ci or not diffs:
        return ""
    return " / ".join(f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]" for d, (lo, hi) in zip(diffs, ci))


def _table(name: str) -> Optional[dict]:
    path = ROOT / "results" / name / "results.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _mixed(name: str) -> bool:
    readme = ROOT / "results" / name / "README.md"
    return readme.is_file() and "MIXED REGIME" in readme.read_text(encoding="utf-8").splitlines()[0]


def rows() -> List[str]:
    lines = list(HEADER)
    for paper, shown, note in PAPERS:
        learning, converged = _table(paper), _table(f"{paper}-converged")
        if learning is None:
            continue
        mixed = converged is not None and _mixed(f"{paper}-converged")
        at_end = {c["text"]: c for c in (converged or {}).get("claims", [])}
        labels = {**_labels(learning), **_labels(converged or {})}
        first = f"[{shown}](results/{paper}/README.md){note}"
        for claim in learning.get("claims", []):
            end = at_end.get(claim["text"], {"status": "not run"})
            cells = [first, claim_text(claim["text"]), verdict(claim, labels, False), difference(claim),
                     verdict(end, labels, mixed), difference(end)]
            lines.append("| " + " | ".join(cells) + " |")
            first = ""
    return lines


if __name__ == "__main__":
    print("\n".join(rows()))
