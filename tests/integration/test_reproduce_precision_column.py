"""A converged table filled in on several machines may mix precisions: the README says which."""

import copy
import json
from pathlib import Path

from rnmt.reproduce.corpus import Corpus
from rnmt.reproduce.report import render_readme
from rnmt.reproduce.spec import load_paper
from tests.support import REPO

RESULTS = REPO / "results" / "dtmt-converged"


def _readme(records):
    spec = load_paper("dtmt").for_protocol(True)
    settings = json.loads((RESULTS / "settings.json").read_text(encoding="utf-8"))
    settings.update(bootstrap=1000)
    corpus = Corpus("corpus", "es", "en", Path("t"), Path("d"), Path("s"), 3, 2, 1)
    order = spec.select(["shallow-rnmt", "dtmt4"])
    return render_readme(spec, order, records, {}, [], corpus, settings, "rnmt reproduce dtmt --converge", None,
                         None, [])


def _rows(readme):
    lines = readme.splitlines()
    header = next(line for line in lines if line.startswith("| system |"))
    return [c.strip() for c in header.strip("|").split("|")], [line for line in lines if line.startswith("| ")]


def test_one_precision_has_no_column_and_a_mix_names_each_rows_runs():
    shallow = [json.loads((RESULTS / f"shallow-rnmt.seed{s}.json").read_text(encoding="utf-8")) for s in (1, 2)]
    columns, _ = _rows(_readme({"shallow-rnmt": shallow}))
    assert "precision" not in columns and shallow[0]["machine"]["precision"] == "fp32"
    deep = copy.deepcopy(shallow)  # stands in for runs trained where auto picked bf16
    for r in deep:
        r["machine"]["precision"] = "bf16"
    columns, rows = _rows(_readme({"shallow-rnmt": shallow, "dtmt4": deep}))
    assert columns[-1] == "precision"
    assert next(r for r in rows if r.startswith("| ShallowRNMT (GRU) |")).endswith("| fp32 / fp32 |")
    assert next(r for r in rows if r.startswith("| DTMT#4 (L-GRU + T-GRUs) |")).endswith("| bf16 / bf16 |")


def test_a_pair_with_two_claims_is_listed_once_under_what_the_verdicts_rest_on():
    results = REPO / "results" / "atr-converged"
    summary = json.loads((results / "results.json").read_text(encoding="utf-8"))
    pairs = [(c["a"], c["b"]) for c in summary["claims"] if c.get("runs")]
    assert pairs.count(("rnnsearch-atr", "rnnsearch-gru")) == 2  # ATR about as good as GRU, and faster
    spec = load_paper("atr").for_protocol(True)
    settings = json.loads((results / "settings.json").read_text(encoding="utf-8"))
    settings.update(bootstrap=1000)
    records = {name: [json.loads((results / f"{name}.seed{s}.json").read_text(encoding="utf-8")) for s in (1, 2)]
               for name in ("rnnsearch-gru", "rnnsearch-atr")}
    corpus = Corpus("corpus", "es", "en", Path("t"), Path("d"), Path("s"), 3, 2, 1)
    readme = render_readme(spec, spec.select(["rnnsearch-gru", "rnnsearch-atr"]), records, {}, summary["claims"],
                           corpus, settings, "rnmt reproduce atr --converge", None, None, [])
    rests_on = [line for line in readme.splitlines() if line.startswith("- RNNSearch+ATR vs RNNSearch+GRU: ")]
    assert len(rests_on) == 1
