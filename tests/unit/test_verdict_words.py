"""The verdict words of docs/results.md and README.md agree with the committed results.json.

Every ``results/*/results.json`` (and a rerun's ``results/*/*/results.json``) holds each
claim's verdict under the rules of `rnmt.reproduce.report`. A line of the documents that
names a claim (its text without the paper's figures, "beats" also read as "over") may
use a verdict word only where those rules give it:

- held / reversed / undecided: the claim's verdict in that regime (a table column headed
  "converged" or "2,000 updates"), or in some regime where the line does not say which;
- level / same (as a verdict, not "the same ..."): only where equivalence was shown,
  every seed's 95% interval within the margin;
- ahead / behind: only where some seed's interval excludes 0.

So a document can drop such lines, but cannot state a verdict its records do not give.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List

import pytest

from rnmt.reproduce.report import MARGIN

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("docs/results.md", "README.md")
VERDICTS = ("held", "reversed", "undecided")


def _phrases(text: str) -> List[str]:
    """How the documents name a claim: its text without parentheses holding figures, and
    with "beats" read as "over"; also cut before "with fewer parameters"."""
    base = re.sub(r"\s*\((?=[^)]*\d)[^)]*\)", "", text).strip()
    found = {base, base.replace(" beats ", " over "), base.split(" with fewer parameters")[0].strip()}
    return sorted(p for p in found if len(p) > 8)


def _regime(table_dir: Path) -> str:
    return "converged" if table_dir.name.endswith("-converged") else "learning"


def _word(status: str) -> str:
    return "not run" if status.startswith("not run") else re.split(r"[:( ]", status, maxsplit=1)[0]


def _claims() -> Dict[str, Dict[str, List[dict]]]:
    """{phrase: {regime: [claim, ...]}} over every committed results.json."""
    out: Dict[str, Dict[str, List[dict]]] = {}
    for path in sorted(ROOT.glob("results/*/results.json")) + sorted(ROOT.glob("results/*/*/results.json")):
        for claim in json.loads(path.read_text(encoding="utf-8")).get("claims") or []:
            claim = {**claim, "word": _word(str(claim.get("status", ""))), "table": path.parent.name}
            for phrase in _phrases(claim["text"]):
                out.setdefault(phrase, {}).setdefault(_regime(path.parent), []).append(claim)
    return out


def _equivalent(claim: dict) -> bool:
    ci = claim.get("ci") or []
    return bool(ci) and claim["kind"] != "faster" and all(-MARGIN <= lo and hi <= MARGIN for lo, hi in ci)


def _some_seed_apart(claim: dict) -> bool:
    ci = claim.get("ci") or []
    return claim["kind"] != "faster" and any(lo > 0 or hi < 0 for lo, hi in ci)


def _problems(text: str, claims: List[dict], where: str) -> List[str]:
    """What ``text`` (a line or a table cell about these claims) says that they do not give."""
    lowered = text.lower()
    problems = []
    words = {w for w in VERDICTS if re.search(rf"\b{w}\b", lowered)}
    allowed = {c["word"] for c in claims}
    if words and not words & allowed:
        problems.append(f"{where}: says {sorted(words)}, results.json says {sorted(allowed)}")
    if re.search(r"(?<!the )\b(level|same)\b", lowered) and not any(_equivalent(c) for c in claims):
        problems.append(f"{where}: says level/same, but no interval lies within ±{MARGIN:g} in every seed")
    if re.search(r"\b(ahead|behind)\b", lowered) and not any(_some_seed_apart(c) for c in claims):
        problems.append(f"{where}: says ahead/behind, but no seed's interval excludes 0")
    return problems


def _cells(line: str) -> List[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def check_document(text: str, claims: Dict[str, Dict[str, List[dict]]], name: str) -> List[str]:
    """Every problem of one document: table rows cell by cell under their headers, other
    lines as a whole."""
    problems: List[str] = []
    lines = text.splitlines()
    header: List[str] = []
    for n, line in enumerate(lines, 1):
        if line.startswith("|") and n < len(lines) and re.match(r"^\|[\s:|-]+\|$", lines[n].strip()):
            header = [h.lower() for h in _cells(line)]
            continue
        named = [p for p in claims if p.lower() in line.lower()]
        if not named:
            continue
        rest = line
        for phrase in named:  # the claim's own words ("the same decoder") are no verdict
            rest = re.sub(re.escape(phrase), " ", rest, flags=re.IGNORECASE)
        if line.startswith("|") and header:
            for i, cell in enumerate(_cells(rest)):
                head = header[i] if i < len(header) else ""
                if "verdict" not in head:
                    continue
                regime = ("converged" if "converged" in head else
                          "learning" if any(k in head for k in ("2,000", "equal updates", "learning")) else None)
                about = [c for p in named for r, cs in claims[p].items() if regime in (None, r) for c in cs]
                if about:
                    problems += _problems(cell, about, f"{name}:{n} ({head})")
        else:
            about = [c for p in named for cs in claims[p].values() for c in cs]
            problems += _problems(rest, about, f"{name}:{n}")
    return problems


def test_documents_state_only_the_verdicts_of_the_records():
    claims = _claims()
    assert claims, "no results/*/results.json with claims"
    problems = []
    for doc in DOCUMENTS:
        path = ROOT / doc
        if path.is_file():
            problems += check_document(path.read_text(encoding="utf-8"), claims, doc)
    assert not problems, "\n".join(problems)


# -- the checker itself, on made-up records ---------------------------------------------------
def _made_up() -> Dict[str, Dict[str, List[dict]]]:
    wide = {"kind": "better", "text": "Xsys beats Ysys (1 vs 2)", "status": "undecided: not significant",
            "word": "undecided", "ci": [[-0.9, 0.9], [-0.8, 1.0]]}
    apart = {**wide, "status": "reversed", "word": "reversed", "ci": [[-2.0, -1.0], [-1.5, -0.2]]}
    return {p: {"converged": [wide], "learning": [apart]} for p in _phrases(wide["text"])}


@pytest.mark.parametrize("text, bad", [
    ("Xsys over Ysys: undecided, no significant difference; equivalence not shown.", False),
    ("Xsys over Ysys: level in both seeds.", True),  # intervals of ±0.9 show no equivalence
    ("Xsys beats Ysys: held at convergence.", True),  # held in neither regime
    ("| paper says | verdict, 2,000 updates | verdict, converged |\n|---|---|---|\n"
     "| Xsys beats Ysys | reversed | undecided |", False),
    ("| paper says | verdict, 2,000 updates | verdict, converged |\n|---|---|---|\n"
     "| Xsys beats Ysys | undecided | reversed |", True),  # the regimes swapped
])
def test_the_checker_finds_a_word_the_records_do_not_give(text: str, bad: bool):
    assert bool(check_document(text, _made_up(), "doc")) is bad


def test_phrases_keep_labels_and_drop_figures():
    assert "Cseq2seq-I (LS) over RNNSearch" in _phrases("Cseq2seq-I (LS) beats RNNSearch (36.00 vs 34.06, p < 0.01)")
    assert "ATR translates about as well as GRU" in _phrases(
        "ATR translates about as well as GRU (21.99 vs 22.06) with fewer parameters (67.8M vs 83.5M)")

