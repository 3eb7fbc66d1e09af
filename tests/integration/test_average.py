"""Checkpoint averaging: the mean of the weights, a loadable checkpoint, clear errors."""

import pytest
import torch

from rnmt.cli import main
from rnmt.config import config_from_dict
from rnmt.errors import UserError
from rnmt.io.checkpoint_files import read_model_file
from rnmt.models import build_model, load_model
from rnmt.training.average import average_checkpoints
from rnmt.training.checkpoint import save_model


def test_average_is_the_mean_of_the_weights(tiny_run, tmp_path):
    a, b = tiny_run / "ckpt-3.safetensors", tiny_run / "ckpt-6.safetensors"
    out = tmp_path / "avg.safetensors"
    meta = average_checkpoints([a, b], out)
    assert meta["steps"] == [3, 6]
    wa, wb, avg = (read_model_file(p).state for p in (a, b, out))
    assert avg.keys() == wa.keys()
    for k in wa:
        assert torch.allclose(avg[k], (wa[k] + wb[k]) / 2, atol=1e-7), k
    loaded = load_model(out)  # a self-contained checkpoint: vocabulary and config kept
    assert loaded.tgt_vocab.to_bytes() == load_model(a).tgt_vocab.to_bytes()
    assert loaded.config.to_dict() == read_model_file(a).config.to_dict()
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_averaging_one_checkpoint_with_itself_changes_nothing(tiny_run, tmp_path):
    a = tiny_run / "ckpt-6.safetensors"
    average_checkpoints([a, a, a], tmp_path / "same.safetensors")
    wa, w = read_model_file(a).state, read_model_file(tmp_path / "same.safetensors").state
    assert all(torch.allclose(wa[k], w[k], atol=1e-7) for k in wa)


def test_a_different_model_is_refused_by_name(tiny_run, tmp_path):
    ref = read_model_file(tiny_run / "ckpt-6.safetensors")
    tree = ref.config.to_dict()
    tree["model"]["hidden_size"] = 20
    cfg = config_from_dict(tree)
    model = build_model(cfg.model, cfg.model.src_vocab_size, cfg.model.tgt_vocab_size)
    other = tmp_path / "other.safetensors"
    save_model(other, model, cfg, ref.vocabs)
    with pytest.raises(UserError, match=r"other\.safetensors: config differs .*hidden_size"):
        average_checkpoints([ref.path, other], tmp_path / "avg.safetensors")
    assert not (tmp_path / "avg.safetensors").exists()


def test_average_command(tiny_run, tmp_path, capsys):
    out = tmp_path / "cli.safetensors"
    assert main(["average", str(tiny_run / "ckpt-3.safetensors"), str(tiny_run / "ckpt-6.safetensors"),
                 "--out", str(out)]) == 0
    assert out.is_file()
    assert main(["average", str(tmp_path / "missing.safetensors"), "--out", str(out)]) == 2
    assert "missing.safetensors" in capsys.readouterr().err


def test_last_n_averages_the_highest_steps_of_a_run(tiny_run, tmp_path, capsys):
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    for step in (3, 6, 12):  # 12 sorts before 3 and 6 as text: the steps must be read as numbers
        shutil.copy(tiny_run / ("ckpt-6.safetensors" if step == 12 else f"ckpt-{step}.safetensors"),
                    run / f"ckpt-{step}.safetensors")
    out = tmp_path / "last2.safetensors"
    assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 0
    assert "averaged 2 checkpoints (steps [6, 6])" in capsys.readouterr().err
    assert read_model_file(out).meta["averaged"] == [str(run / "ckpt-6.safetensors"), str(run / "ckpt-12.safetensors")]
    assert main(["average", str(run), "--last", "4", "--out", str(out)]) == 2
    assert "3 step checkpoint(s)" in capsys.readouterr().err
    assert main(["average", str(run / "ckpt-3.safetensors"), "--last", "1", "--out", str(out)]) == 2
    assert "give run directories" in capsys.readouterr().err


def test_averaging_into_one_of_the_inputs_is_refused_and_the_input_kept(tiny_run, tmp_path, capsys):
    # `--out` naming an input replaced that checkpoint with the average, without a word
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    for name in ("ckpt-3.safetensors", "ckpt-6.safetensors", "best.safetensors"):
        shutil.copy(tiny_run / "ckpt-6.safetensors" if name == "best.safetensors" else tiny_run / name, run / name)
    (tmp_path / "link.safetensors").symlink_to(run / "ckpt-3.safetensors")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    for argv in ([str(run / "ckpt-3.safetensors"), str(run / "ckpt-6.safetensors"), "--out",
                  str(run / "ckpt-6.safetensors")],
                 [str(run), "--last", "2", "--out", str(run / "ckpt-3.safetensors")],
                 [str(run), str(run / "ckpt-3.safetensors"), "--out", str(run / "best.safetensors")],  # a run dir
                 [str(run / "ckpt-6.safetensors"), str(tmp_path / "link.safetensors"), "--out",
                  str(run / "ckpt-3.safetensors")]):  # through a link
        assert main(["average", *argv]) == 2
        err = capsys.readouterr().err
        assert "is one of the checkpoints being averaged" in err and err.count("\n") == 1
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_averaging_over_a_runs_own_checkpoint_is_refused(tiny_run, tmp_path, capsys):
    # `--out RUN/best.safetensors` replaced the checkpoint the run's resume and best choice read
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    before = (run / "best.safetensors").read_bytes()
    argv = ["average", str(tiny_run / "ckpt-3.safetensors"), str(tiny_run / "ckpt-6.safetensors"), "--out"]
    assert main([*argv, str(run / "best.safetensors")]) == 2
    err = capsys.readouterr().err
    assert "is a checkpoint of the training run in" in err and err.count("\n") == 1
    assert (run / "best.safetensors").read_bytes() == before
    assert main([*argv, str(run / "averaged.safetensors")]) == 0  # a file of its own there: fine
    assert main([*argv, str(run / "averaged.safetensors")]) == 0  # and again


def test_text_written_over_a_checkpoint_is_refused(tiny_run, tmp_path, capsys):
    import shutil

    ckpt = tmp_path / "keep.safetensors"
    shutil.copy(tiny_run / "ckpt-3.safetensors", ckpt)
    before = ckpt.read_bytes()
    src = tmp_path / "in.es"
    src.write_text("Y dijo Dios\n", encoding="utf-8")
    for argv in (["translate", "--model", str(tiny_run), "--input", str(src), "--output", str(ckpt)],
                 ["evaluate", "--hyp", str(src), "--ref", str(src), "--sentences", str(ckpt)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "is a checkpoint" in err and err.count("\n") == 1
    assert ckpt.read_bytes() == before
