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


def test_lr_schedule_and_plot_name_the_image_they_write_and_refuse_unknown_formats(tmp_path, capsys, tiny_run):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("train: {lr: 0.1}\n")
    assert main(["lr-schedule", str(cfg), "--steps", "5", "--out", str(tmp_path / "lr")]) == 0
    assert (tmp_path / "lr.png").read_bytes()[:4] == b"\x89PNG"  # matplotlib's default, said as written
    assert f"wrote {tmp_path / 'lr.png'}" in capsys.readouterr().err
    assert main(["plot", str(tiny_run), "--out", str(tmp_path / "curves.svg")]) == 0
    assert (tmp_path / "curves.svg").read_text().lstrip().startswith("<?xml")
    for command in (["lr-schedule", str(cfg), "--steps", "5"], ["plot", str(tiny_run)]):
        for out, needle in ((tmp_path / "p.xyz", "no image format for '.xyz'"), (tmp_path, "a directory or nothing"),
                            ("", "a directory or nothing")):
            assert main([*command, "--out", str(out)]) == 2
            err = capsys.readouterr().err.strip()
            assert needle in err and "\n" not in err
    assert not (tmp_path / "p.xyz").exists()
