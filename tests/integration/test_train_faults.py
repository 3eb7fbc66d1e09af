"""Training under faults: signals, non-finite losses, a full disk, bad checkpoints, resume safety."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from rnmt.cli import main
from rnmt.config import config_from_dict
from rnmt.errors import UserError
from rnmt.models import load_model
from rnmt.models.loading import read_checked
from rnmt.training import checkpoint
from rnmt.training.checkpoint import load_train_state
from rnmt.training.trainer import Trainer
from tests.support import tiny_config_tree, write_corpus

quiet = dict(log=lambda *_: None)


def losses(out):
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in records if "loss" in r}


def no_dev_tree(tiny_corpus, steps=6, **train):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    del tree["data"]["dev"]
    tree["train"].update(max_steps=steps, **train)
    return tree


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tiny_corpus):
    """An uninterrupted 8-update run without a dev set."""
    out = tmp_path_factory.mktemp("reference")
    Trainer(config_from_dict(no_dev_tree(tiny_corpus, 8, save_every=4)), out, **quiet).run()
    return out


def finite(model):
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


# -- signals -----------------------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_between_optimiser_step_and_counter_saves_an_exact_checkpoint(tmp_path, tiny_corpus, reference,
                                                                             sig):
    tree = no_dev_tree(tiny_corpus, 8, save_every=4)
    trainer = Trainer(config_from_dict(tree), tmp_path, **quiet)
    real_step = trainer.optimizer.step

    def step_then_signal(*args, **kwargs):
        out = real_step(*args, **kwargs)
        if trainer.step == 2:  # the weights are updated, the counter is not yet
            os.kill(os.getpid(), sig)
        return out

    trainer.optimizer.step = step_then_signal
    handler_before = signal.getsignal(sig)
    summary = trainer.run()
    assert summary["stop_reason"] == "signal" and trainer.stop_signal == signal.Signals(sig).name
    state = load_train_state(tmp_path / "train_state.pt")
    assert state["step"] == 3 and state["checkpoint"] == "ckpt-3.safetensors"
    saved = load_model(tmp_path).model.state_dict()
    assert all(torch.equal(saved[k], v.cpu()) for k, v in trainer.model.state_dict().items())
    assert signal.getsignal(sig) is handler_before  # the previous handler is back

    Trainer(config_from_dict(tree), tmp_path, resume=True, **quiet).run()
    a, b = losses(reference), losses(tmp_path)
    assert sorted(b) == list(range(1, 9))
    assert all(a[s] == pytest.approx(b[s], rel=1e-6) for s in a)


# -- save_every and best.safetensors without a dev set ----------------------------------

def test_save_every_without_dev_set_and_best_follows_the_newest(tmp_path, tiny_corpus):
    tree = no_dev_tree(tiny_corpus, 6, save_every=2)
    Trainer(config_from_dict(tree), tmp_path, **quiet).run()
    assert {p.name for p in tmp_path.glob("ckpt-*")} == {"ckpt-2.safetensors", "ckpt-4.safetensors",
                                                         "ckpt-6.safetensors"}
    assert load_model(tmp_path).meta["step"] == 6
    Trainer(config_from_dict(tree, ["train.max_steps=8"]), tmp_path, resume=True, **quiet).run()
    assert load_model(tmp_path).meta["step"] == 8


# -- non-finite losses -------------------------------------------------------------------

def poison_loss(monkeypatch, trainer, step, times):
    """Make the loss NaN for ``times`` update attempts from ``trainer.step == step`` on (a
    skipped update leaves the counter where it is)."""
    import rnmt.training.trainer as module

    real = module.label_smoothed_nll
    left = [times]

    def poisoned(*args, **kwargs):
        loss, nll = real(*args, **kwargs)
        if trainer.step >= step and left[0] > 0:
            left[0] -= 1
            loss = loss * float("nan")
        return loss, nll

    monkeypatch.setattr(module, "label_smoothed_nll", poisoned)


def test_a_nan_loss_at_step_k_skips_that_update_and_is_counted(tmp_path, tiny_corpus, monkeypatch):
    trainer = Trainer(config_from_dict(no_dev_tree(tiny_corpus, 6)), tmp_path, **quiet)
    poison_loss(monkeypatch, trainer, 3, times=1)
    summary = trainer.run()
    assert summary["steps"] == 6 and summary["skipped_nonfinite"] == 1
    assert finite(trainer.model)
    records = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert any(r.get("nonfinite_in_a_row") == 1 for r in records)
    assert [r["step"] for r in records if "loss" in r] == [1, 2, 3, 4, 5, 6]  # no step lost or repeated
    assert load_train_state(tmp_path / "train_state.pt")["nonfinite_total"] == 1


def test_nan_losses_in_a_row_stop_the_run_with_finite_checkpoints(tmp_path, tiny_corpus, monkeypatch):
    trainer = Trainer(config_from_dict(no_dev_tree(tiny_corpus, 20, save_every=2, max_nonfinite=3)),
                      tmp_path, **quiet)
    poison_loss(monkeypatch, trainer, 5, times=1000)
    with pytest.raises(UserError, match="3 non-finite losses in a row at step 5"):
        trainer.run()
    assert load_train_state(tmp_path / "train_state.pt")["step"] == 5
    for path in tmp_path.glob("*.safetensors"):
        assert finite(load_model(path).model), path


def _exploding_config(tiny_corpus, tmp_path, **train):
    """issue 66 #12's recipe, small: a rate of 1e9 without clipping, a one-update warm-up."""
    import yaml

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(lr=1e9, clip_norm=0, warmup_steps=1, validate_every=0, log_every=5, **train)
    path = tmp_path / "explode.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


def test_a_finite_but_exploding_loss_stops_the_run_with_one_line(tmp_path, tiny_corpus, capsys):
    """A loss that explodes and stays finite is a one-line error naming the step and the
    likely causes, exit 2, before train.max_steps; no checkpoint of the diverged weights."""
    config = _exploding_config(tiny_corpus, tmp_path, max_steps=30)
    out = tmp_path / "run"
    assert main(["train", str(config), "--out", str(out)]) == 2  # rnmt before the check: 0, at loss ~1e12
    from rnmt.training.divergence import WINDOW

    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    line = err[-1]
    assert line.startswith("error: step ") and "diverged" in line
    for cause in ("train.lr 1e+09", "train.clip_norm 0", "train.warmup_steps 1", "no checkpoint was written yet"):
        assert cause in line, line
    step = int(line.split()[2].rstrip(":"))
    assert WINDOW < step < 30  # stopped by the window after the warm-up, not at max_steps
    assert not list(out.glob("*.safetensors")) and not (out / "train_state.pt").exists()


def test_a_run_that_diverges_on_resume_keeps_its_last_good_checkpoint(tmp_path, tiny_corpus, capsys):
    """A healthy run, resumed with a rate that makes it diverge: the error names the last
    checkpoint, which is left as it was (as is the training state)."""
    config = _exploding_config(tiny_corpus, tmp_path, max_steps=4, save_every=4)
    out = tmp_path / "run"
    assert main(["train", str(config), "--out", str(out), "--set", "train.lr=0.003"]) == 0
    kept = {name: (out / name).read_bytes() for name in ("ckpt-4.safetensors", "best.safetensors", "train_state.pt")}
    capsys.readouterr()
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=40",
                 "--set", "train.lr=1e9"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "diverged" in line and f"ckpt-4.safetensors in {out}" in line, line
    assert {name: (out / name).read_bytes() for name in kept} == kept
    assert sorted(p.name for p in out.glob("ckpt-*")) == ["ckpt-4.safetensors"]


def test_the_divergence_threshold_is_ten_times_a_uniform_models_loss():
    import math

    from rnmt.training.divergence import threshold

    assert threshold(4000) == pytest.approx(10 * math.log(4000))
    assert 80 < threshold(4000) < 85


def test_non_finite_weights_are_never_written(tmp_path, tiny_corpus):
    trainer = Trainer(config_from_dict(no_dev_tree(tiny_corpus, 2)), tmp_path, **quiet)
    trainer.run()
    before = (tmp_path / "ckpt-2.safetensors").read_bytes()
    with torch.no_grad():
        next(trainer.model.parameters()).fill_(float("inf"))
    with pytest.raises(UserError, match="not finite"):
        trainer.save()
    assert (tmp_path / "ckpt-2.safetensors").read_bytes() == before


# -- files: permissions, full disk -------------------------------------------------------

@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_written_files_follow_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        checkpoint.atomic_write_text(tmp_path / "config.yaml", "a: 1\n")
        checkpoint.save_train_state(tmp_path / "state.pt", {"step": 1})
    finally:
        os.umask(old)
    for name in ("config.yaml", "state.pt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask


def test_a_link_keeps_its_target_and_a_pipe_stays_a_pipe(tmp_path):
    # Written files are replaced by a rename, which must not swap a symbolic link or a
    # device node (say --sentences /dev/stdout) for a plain file.
    real = tmp_path / "real.txt"
    real.write_text("old\n")
    (tmp_path / "link.txt").symlink_to(real)
    checkpoint.atomic_write_text(tmp_path / "link.txt", "new\n")
    assert (tmp_path / "link.txt").is_symlink() and real.read_text() == "new\n"

    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    checkpoint.atomic_write_text(fifo, "through\n")
    reader.join(timeout=10)
    assert got == ["through\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    with pytest.raises(UserError, match="is a directory"):
        checkpoint.atomic_write_text(tmp_path, "x")


class FullDisk:
    """A file that takes ``room`` bytes, then fails as a full disk does (or with ``code``)."""

    def __init__(self, path, room, code=errno.ENOSPC):
        self.fh, self.room, self.code = open(path, "wb"), room, code

    def write(self, data):
        data = bytes(data)
        if len(data) > self.room:
            self.fh.write(data[:self.room])
            raise OSError(self.code, os.strerror(self.code))
        self.room -= len(data)
        return self.fh.write(data)

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


def test_enospc_during_a_save_is_one_line_and_loses_nothing(tmp_path, tiny_corpus, monkeypatch, capsys):
    import yaml

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(no_dev_tree(tiny_corpus, 2, save_every=1)))
    out = tmp_path / "run"
    assert main(["train", str(config), "--out", str(out)]) == 0
    files = {p.name: p.read_bytes() for p in out.iterdir() if p.suffix in (".safetensors", ".pt")}
    monkeypatch.setattr(checkpoint, "_open_for_write", lambda path: FullDisk(path, 5000))
    capsys.readouterr()
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "no space left on device" in err[-1]
    assert "Traceback" not in "\n".join(err)
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    for name, data in files.items():
        assert (out / name).read_bytes() == data, name
    monkeypatch.undo()
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=4"]) == 0
    assert load_train_state(out / "train_state.pt")["step"] == 4


@pytest.mark.parametrize("code, needle", [(errno.EFBIG, "file too large"), (errno.EROFS, "read-only file system"),
                                           (errno.EACCES, "permission denied"), (errno.EIO, "input/output error")])
def test_every_refused_write_is_one_line_naming_the_file(tmp_path, tiny_corpus, monkeypatch, capsys, code, needle):
    import yaml

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(no_dev_tree(tiny_corpus, 2, save_every=1)))
    out = tmp_path / "run"
    assert main(["train", str(config), "--out", str(out)]) == 0
    files = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    monkeypatch.setattr(checkpoint, "_open_for_write", lambda path: FullDisk(path, 5000, code))
    capsys.readouterr()
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and needle in err[-1] and str(out / "ckpt-3.safetensors") in err[-1]
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    for name in ("ckpt-2.safetensors", "best.safetensors", "train_state.pt", "spm.model"):
        assert (out / name).read_bytes() == files[name], name  # the last good checkpoint is untouched


def test_a_file_size_limit_is_one_line_and_loses_nothing(tmp_path, tiny_corpus, capsys):
    """A real EFBIG: the process's file size limit (ulimit -f) below a checkpoint's size."""
    import resource

    import yaml

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(no_dev_tree(tiny_corpus, 2, save_every=1)))
    out = tmp_path / "run"
    assert main(["train", str(config), "--out", str(out)]) == 0
    files = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    limit = len(files["best.safetensors"]) // 2  # over the config and the log, under a checkpoint
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    capsys.readouterr()
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        code = main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=4"])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("error: ") and "file too large" in err[-1], err
    assert "ckpt-3.safetensors" in err[-1] and "ulimit -f" in err[-1]
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    for name in ("ckpt-2.safetensors", "best.safetensors", "train_state.pt"):
        assert (out / name).read_bytes() == files[name], name


def test_an_unwritable_output_or_cache_directory_is_one_line(tmp_path, tiny_corpus, capsys):
    import yaml

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(no_dev_tree(tiny_corpus, 2)))
    assert main(["train", str(config), "--out", str(blocker / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: {blocker / 'run'}: cannot create the output directory (a part of"), err
    assert main(["train", str(config), "--out", str(tmp_path / "run"), "--set", f"data.cache_dir={blocker}/cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: {blocker}") and "corpus cache" in err[-1] and "data.cache_dir" in err[-1], err


# -- damaged and hostile checkpoints -----------------------------------------------------

def test_truncated_checkpoint_is_a_one_line_error(tmp_path, tiny_run):
    data = (tiny_run / "best.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:len(data) // 2])
    with pytest.raises(UserError, match="corrupt or truncated"):
        read_checked(tmp_path / "cut.safetensors")


def test_foreign_checkpoint_is_rejected(tmp_path):
    save_file({"weight": torch.zeros(3)}, str(tmp_path / "other.safetensors"), metadata={"format": "pt"})
    with pytest.raises(UserError, match="not an rnmt checkpoint"):
        load_model(tmp_path / "other.safetensors")


def test_metadata_asking_for_a_huge_model_is_rejected_before_building(tmp_path, tiny_run):
    from safetensors import safe_open

    with safe_open(str(tiny_run / "best.safetensors"), framework="pt") as fh:
        meta = fh.metadata()
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}
    config = json.loads(meta["config"])
    config["model"]["hidden_size"] = 10 ** 6  # a trillion-parameter model if it were built
    config["model"]["emb_size"] = 10 ** 6
    save_file(tensors, str(tmp_path / "huge.safetensors"), metadata={**meta, "config": json.dumps(config)})
    with pytest.raises(UserError, match="do not match the model"):
        load_model(tmp_path / "huge.safetensors")
    config["model"]["hidden_size"] = 10 ** 9  # beyond what a config may ask for at all
    save_file(tensors, str(tmp_path / "huger.safetensors"), metadata={**meta, "config": json.dumps(config)})
    with pytest.raises(UserError, match=r"huger.safetensors: config key 'model.hidden_size' must be in \[1, 1048576\]"):
        load_model(tmp_path / "huger.safetensors")


# -- resume safety -----------------------------------------------------------------------

def test_a_rejected_resume_set_leaves_config_yaml_alone(tmp_path, tiny_corpus):
    tree = no_dev_tree(tiny_corpus, 2)
    Trainer(config_from_dict(tree), tmp_path, **quiet).run()
    before = (tmp_path / "config.yaml").read_bytes()
    for change in ("train.label_smoothing=0.2", "model.dropout=0.3", "model.hidden_size=32"):
        with pytest.raises(UserError, match=change.split("=")[0].replace(".", r"\.") + " changed"):
            Trainer(config_from_dict(tree, [change]), tmp_path, resume=True, **quiet)
        assert (tmp_path / "config.yaml").read_bytes() == before
    Trainer(config_from_dict(tree, ["train.max_steps=3"]), tmp_path, resume=True, **quiet).run()
    assert "max_steps: 3" in (tmp_path / "config.yaml").read_text()


def start_from_file(tmp_path, tiny_corpus, *overrides):
    import yaml

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(no_dev_tree(tiny_corpus, 2)))
    out = tmp_path / "run"
    assert main(["train", str(config), "--out", str(out), *overrides]) == 0
    return config, out


def test_resume_refuses_an_edit_to_the_file_that_would_change_the_run(tmp_path, tiny_corpus, capsys):
    config, out = start_from_file(tmp_path, tiny_corpus)
    before = {name: (out / name).read_bytes() for name in ("config.yaml", "train_state.pt", "best.safetensors")}
    config.write_text(config.read_text().replace("hidden_size: 24", "hidden_size: 64"))
    capsys.readouterr()
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot resume with model.hidden_size changed"), err
    assert str(config) in err[0] and "24" in err[0] and "64" in err[0]
    for name, data in before.items():
        assert (out / name).read_bytes() == data, name


def test_resume_applies_and_logs_an_edit_that_may_change(tmp_path, tiny_corpus, capsys):
    config, out = start_from_file(tmp_path, tiny_corpus)
    config.write_text(config.read_text().replace("max_steps: 2", "max_steps: 4").replace("lr: 0.003", "lr: 0.001"))
    capsys.readouterr()
    assert main(["train", str(config), "--out", str(out), "--resume"]) == 0
    err = capsys.readouterr().err
    assert "config changed on resume" in err and "train.max_steps: 2 -> 4" in err and "train.lr: 0.003 -> 0.001" in err
    assert load_train_state(out / "train_state.pt")["step"] == 4
    saved = (out / "config.yaml").read_text()
    assert "max_steps: 4" in saved and "lr: 0.001" in saved
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["lr"] for r in records if r.get("step") == 4] == [pytest.approx(0.001)]  # the new peak, after warm-up


def test_resume_without_repeating_the_runs_set_values(tmp_path, tiny_corpus, capsys):
    """The --set values a run started with stay; only edits to the file are changes."""
    config, out = start_from_file(tmp_path, tiny_corpus, "--set", "model.hidden_size=32", "--set", "train.lr=0.002")
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=3"]) == 0
    saved = (out / "config.yaml").read_text()
    assert "hidden_size: 32" in saved and "lr: 0.002" in saved and "max_steps: 3" in saved


def test_resume_of_a_run_without_a_source_record_keeps_its_config(tmp_path, tiny_corpus, capsys):
    config, out = start_from_file(tmp_path, tiny_corpus)
    (out / "config.source.yaml").unlink()  # as a run saved before the file was compared
    config.write_text(config.read_text().replace("hidden_size: 24", "hidden_size: 64"))
    capsys.readouterr()
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=3"]) == 0
    assert "is not compared" in capsys.readouterr().err
    assert "hidden_size: 24" in (out / "config.yaml").read_text()
    assert "hidden_size: 64" in (out / "config.source.yaml").read_text()  # compared from the next resume on


def test_a_corpus_changed_between_runs_is_reported_on_resume(tmp_path):
    corpus = write_corpus(tmp_path / "data", "train", 240)
    tree = tiny_config_tree(corpus, None)
    del tree["data"]["dev"]
    tree["train"]["max_steps"] = 2
    out = tmp_path / "run"
    Trainer(config_from_dict(tree), out, **quiet).run()
    path = Path(corpus + ".en")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[10] = lines[10] + " changed"  # edited in place: same size order, new content
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match="training corpus .* changed since this run started"):
        Trainer(config_from_dict(tree, ["train.max_steps=3"]), out, resume=True, **quiet)
    messages = []
    resumed = Trainer(config_from_dict(tree, ["train.max_steps=3"]), out, resume=True, log=messages.append,
                      corpus_changed_ok=True)
    assert resumed.sampler.epoch == 1 and resumed.sampler.position == 0
    assert any("corpus changed" in m for m in messages)


def test_train_threads_over_the_bound_are_refused_before_the_run(tmp_path):
    from rnmt.config import load_config
    from rnmt.device import max_threads
    from rnmt.training.setup import set_up_run

    cfg = load_config("quickstart", [f"train.threads={max_threads() + 1}"])
    with pytest.raises(UserError, match=r"train.threads must be at most \d+"):
        set_up_run(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()
