"""Each claim's verdict before and after: two converged tables' results.json side by side
(the mixed-regime DTMT table and its one-regime rerun), one Markdown row per claim with the
verdict and the per-seed differences [95% interval] of each.

    python results/bf16-p8/compare_verdicts.py BEFORE/results.json AFTER/results.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Dict, List


def verdict(claim: dict) -> str:
    """The verdict's word(s): the status up to its first colon ("undecided", "held", ...)."""
    return str(claim.get("status", "")).split(":")[0].strip() or "-"


def differences(claim: dict) -> str:
    diffs, cis = claim.get("differences") or [], claim.get("ci") or []
    return " / ".join(f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]" for d, (lo, hi) in zip(diffs, cis)) or "-"


def claims(path: Path) -> Dict[str, dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {f"{c['a']} over {c['b']} ({c['kind']})": c for c in data.get("claims", [])}


def compare(before: Path, after: Path) -> List[str]:
    old, new = claims(before), claims(after)
    lines = ["| claim | before: verdict | before: differences | after: verdict | after: differences | changed |",
             "|---|---|---|---|---|---|"]
    for key in list(old) + [k for k in new if k not in old]:
        a, b = old.get(key), new.get(key)
        text = (a or b or {}).get("text", key)
        va, vb = (verdict(a) if a else "-"), (verdict(b) if b else "-")
        lines.append(f"| {text} | {va} | {differences(a) if a else '-'} | {vb} | {differences(b) if b else '-'} | "
                     f"{'yes' if va != vb else 'no'} |")
    return lines


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print("\n".join(compare(Path(sys.argv[1]), Path(sys.argv[2]))))
