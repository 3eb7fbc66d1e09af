"""The command-line contract and its one-line errors (exit code 2, no traceback)."""

import json
import os
import subprocess
import sys

import torch
from safetensors.torch import save_file

from rnmt.cli import main
from tests.support import REPO, assert_one_line_error, run_rnmt


def test_translate_file_to_file_and_stdin_to_stdout(tiny_run, tmp_path):
    src = tmp_path / "in.es"
    src.write_text("Y dijo Dios:\n\nsea la luz\n", encoding="utf-8")
    out = tmp_path / "out.en"
    assert main(["translate", "--model", str(tiny_run), "--input", str(src), "--output", str(out), "--beam", "2"]) == 0
    assert len(out.read_text(encoding="utf-8").split("\n")) == 4  # 3 lines + final newline
    result = run_rnmt("translate", "--model", tiny_run, "--nbest", "2", "--beam", "2", stdin="Y dijo Dios:\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("0 ||| ") for line in lines)


def _params_total(capsys, *args):
    assert main(["params", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["total"]


def test_params_takes_vocab_sizes_from_a_sentencepiece_model(tiny_run, capsys):
    spm = tiny_run / "spm.model"
    assert _params_total(capsys, "configs/quickstart.yaml", "--set", f"data.vocab.model={spm}") == _params_total(
        capsys, "configs/quickstart.yaml", "--set", "model.src_vocab_size=300", "--set", "model.tgt_vocab_size=300")
    result = run_rnmt("params", "configs/quickstart.yaml", "--set", "data.vocab.model=missing.model")
    assert_one_line_error(result, "missing.model")


def test_builtin_configs_by_name_from_any_directory(tmp_path, capsys):
    by_path = _params_total(capsys, "configs/papers/atr/rnnsearch-atr.yaml")
    assert _params_total(capsys, "atr/rnnsearch-atr") == by_path
    elsewhere = subprocess.run([sys.executable, "-m", "rnmt", "params", "atr/rnnsearch-atr", "--json"],
                               capture_output=True, text=True, cwd=tmp_path, timeout=300,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    assert elsewhere.returncode == 0 and json.loads(elsewhere.stdout)["total"] == by_path
    assert_one_line_error(run_rnmt("params", "atr/rnnsearch-atrr"), "atr/rnnsearch-atrr",
                          "did you mean the built-in config 'atr/rnnsearch-atr'")


def test_unequal_line_counts_name_both_files(tmp_path):
    (tmp_path / "c.es").write_text("a\nb\n")
    (tmp_path / "c.en").write_text("a\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"data: {{train: {tmp_path / 'c'}, src: es, tgt: en, vocab: {{size: 30}}}}\n")
    assert_one_line_error(run_rnmt("train", cfg, "--out", tmp_path / "o"), "c.es", "c.en", "2", "1")


def test_invalid_utf8_names_file_and_line(tmp_path):
    (tmp_path / "c.es").write_bytes(b"hola\nbad \xff byte\n")
    (tmp_path / "c.en").write_text("hello\nbad byte\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"data: {{train: {tmp_path / 'c'}, src: es, tgt: en, vocab: {{size: 30}}}}\n")
    assert_one_line_error(run_rnmt("train", cfg, "--out", tmp_path / "o"), "c.es", "line 2")


def test_unknown_config_key_suggests_the_closest(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("train: {max_step: 3}\n")
    assert_one_line_error(run_rnmt("train", cfg), "train.max_step", "train.max_steps")


def test_missing_training_files(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"data: {{train: {tmp_path / 'none'}, src: es, tgt: en}}\n")
    assert_one_line_error(run_rnmt("train", cfg, "--out", tmp_path / "o"), "file not found", "none.es")


def test_missing_translation_input(tiny_run, tmp_path):
    assert_one_line_error(run_rnmt("translate", "--model", tiny_run, "--input", tmp_path / "nope.es"), "nope.es")


def test_truncated_checkpoint_is_a_clear_error(tiny_run, tmp_path):
    data = (tiny_run / "best.safetensors").read_bytes()
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(data[: len(data) // 2])
    assert_one_line_error(run_rnmt("translate", "--model", bad, stdin="hola\n"), "bad.safetensors",
                          "corrupt or truncated")


def test_garbage_checkpoint_is_a_clear_error(tmp_path):
    bad = tmp_path / "garbage.safetensors"
    bad.write_bytes(b"\x00" * 100)
    assert_one_line_error(run_rnmt("translate", "--model", bad, stdin="hola\n"), "garbage.safetensors")


def test_foreign_safetensors_file_is_rejected(tmp_path):
    foreign = tmp_path / "foreign.safetensors"
    save_file({"weight": torch.zeros(2, 2)}, str(foreign))
    assert_one_line_error(run_rnmt("translate", "--model", foreign, stdin="hola\n"), "not an rnmt checkpoint")


def test_pickled_checkpoint_is_never_unpickled(tmp_path):
    evil = tmp_path / "evil.pt"
    torch.save({"model": torch.zeros(1)}, evil)
    assert_one_line_error(run_rnmt("translate", "--model", evil, stdin="hola\n"), "evil.pt")


def test_checkpoint_from_another_model_is_rejected(tiny_run, tmp_path):
    from rnmt.config import config_from_dict
    from rnmt.io.checkpoint_files import read_model_file
    from rnmt.models import build_model
    from rnmt.training.checkpoint import save_model

    mf = read_model_file(tiny_run / "best.safetensors")
    other = config_from_dict(mf.config.to_dict(), ["model.hidden_size=8"])
    model = build_model(mf.config.model)  # weights of the original size ...
    path = tmp_path / "mismatch.safetensors"
    save_model(path, model, other, mf.vocabs)  # ... stored under a config that says 8
    assert_one_line_error(run_rnmt("translate", "--model", path, stdin="hola\n"), "do not match")


def test_corrupt_training_state_on_resume(tiny_corpus, tmp_path):

    from rnmt.config import config_from_dict
    from rnmt.training.trainer import Trainer
    from tests.support import tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"]["max_steps"] = 2
    out = tmp_path / "run"
    Trainer(config_from_dict(tree), out, log=lambda *_: None).run()
    before = (out / "best.safetensors").read_bytes()
    (out / "train_state.pt").write_bytes(b"not a state")
    cfg = tmp_path / "c.yaml"
    import yaml
    cfg.write_text(yaml.safe_dump(tree))
    assert_one_line_error(run_rnmt("train", cfg, "--out", out, "--resume"), "train_state.pt", "corrupt")
    assert (out / "best.safetensors").read_bytes() == before  # nothing lost


# -- bad values: refused when the config loads, before anything is written -----------------

def tiny_config_file(tiny_corpus, tmp_path, **train):
    import yaml

    from tests.support import tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(train)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


def test_a_bad_value_in_a_separate_process_is_one_line(tiny_corpus, tmp_path):
    cfg = tiny_config_file(tiny_corpus, tmp_path)
    cfg.write_text(cfg.read_text().replace("emb_size: 16", "emb_size: 16\n  readout: maxuot"))
    assert_one_line_error(run_rnmt("train", cfg, "--out", tmp_path / "run"), "model.readout", "did you mean 'maxout'")
