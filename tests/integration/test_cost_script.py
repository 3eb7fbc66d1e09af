"""results/cost.py: a table's hours from its records' clocks and from the logs of runs without one."""

from __future__ import annotations

import json

from tests.support import load_results_script


def test_records_and_logs_add_up(tmp_path):
    cost = load_results_script("cost")
    table = tmp_path / "t-converged"
    table.mkdir()
    (table / "a.seed1.json").write_text(json.dumps({"wall_minutes": 90, "train_minutes": 60}))
    (table / "a.seed2.json").write_text(json.dumps({"wall_minutes": 30, "train_minutes": 30}))
    (table / "results.json").write_text(json.dumps({"wall_minutes": 9999}))  # not a run
    log = tmp_path / "continued.log.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in [{"step": 0, "plan": {}}, {"step": 100, "train_seconds": 3600},
                                                      {"step": 200, "train_seconds": 5400}, ]) + "\n")
    c = cost.cost(table, [str(log)])
    assert (c["runs"], c["wall_h"], c["train_h"], c["unrecorded_h"], c["total_h"]) == (2, 2.0, 1.5, 1.5, 3.5)
    assert cost.cost(table, [f"{log}@100"])["unrecorded_h"] == 0.5  # only what the continuation added
