"""`rnmt lr-schedule`: the plotted and printed rates are the schedule's."""

import pytest

from rnmt.cli import main
from rnmt.config import config_from_dict
from rnmt.training.schedules import learning_rate


def test_lr_schedule_command_plots_and_prints(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("train: {schedule: rnmt_plus, lr: 1.0, warmup_steps: 10, decay_start: 40, decay_end: 80}\n")
    png = tmp_path / "lr.png"
    assert main(["lr-schedule", str(cfg), "--steps", "60", "--replicas", "2", "--out", str(png), "--csv"]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    rows = [line.split(",") for line in capsys.readouterr().out.split()[1:]]
    tc = config_from_dict({"train": {"schedule": "rnmt_plus", "lr": 1.0, "warmup_steps": 10, "decay_start": 40,
                                     "decay_end": 80, "replicas": 2}}).train
    assert [float(r[2]) for r in rows] == pytest.approx([learning_rate(tc, t) for t in range(60)], rel=1e-6)
    assert float(rows[20][2]) == pytest.approx(2.0)  # plateau n * lr0
    for schedule in ("epoch_halving", "inverse_sqrt"):
        assert main(["lr-schedule", str(cfg), "--steps", "30", "--set", f"train.schedule={schedule}",
                     "--steps-per-epoch", "10", "--out", str(tmp_path / f"{schedule}.png")]) == 0
