"""The command-line contract called in-process (rnmt.cli.main) on files and a tiny corpus:
reports, and one-line errors before anything is written."""

import json

import pytest

from rnmt.cli import main
from tests.support import assert_one_line


def test_evaluate_json_has_bleu_and_chrf(tmp_path, capsys):
    hyp, ref = tmp_path / "hyp", tmp_path / "ref"
    hyp.write_text("the cat sat on the mat\n")
    ref.write_text("the cat sat on the mat\n")
    assert main(["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["bleu"] == pytest.approx(100.0) and data["chrf"] == pytest.approx(100.0)


def test_params_json_has_an_integer_total(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: {src_vocab_size: 30000, tgt_vocab_size: 30000}\n")
    assert main(["params", str(cfg), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == 89_673_261 and isinstance(data["total"], int)


def test_bench_reports_training_and_decoding_throughput(tiny_corpus, tmp_path, capsys):
    import yaml

    from tests.support import tiny_config_tree

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])))
    assert main(["bench", str(cfg), "--steps", "2", "--warmup", "1", "--decode-sentences", "3",
                 "--threads", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["model"]
    assert report["train_tokens_per_s"] > 0 and report["decode_sentences"] == 3
    assert report["params"] > 0 and report["peak_rss_mb"] > 0


def test_bench_refuses_an_unreadable_test_set_before_it_trains(tiny_corpus, tmp_path, capsys, monkeypatch):
    import yaml

    from rnmt.training import trainer
    from tests.support import tiny_config_tree

    (tmp_path / "bad.es").write_bytes(b"Y dijo\nab\xffcd\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])))
    monkeypatch.setattr(trainer.Trainer, "__init__", lambda *a, **k: pytest.fail("trained first"))
    for test, needle in ((tmp_path / "bad", "bad.es: line 2"), (tmp_path / "missing", "missing.es")):
        assert main(["bench", str(cfg), "--set", f"data.test={test}", "--steps", "1", "--warmup", "0",
                     "--decode-sentences", "2", "--threads", "1"]) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and "\n" not in err


@pytest.mark.parametrize("amp, dtype", [("bf16", "torch.bfloat16"), ("none", "torch.float32")])
def test_bench_trains_in_the_precision_the_run_would(amp, dtype, tiny_corpus, tmp_path, capsys, monkeypatch):
    import yaml

    from rnmt.training import trainer
    from tests.support import tiny_config_tree

    seen = []
    real = trainer.label_smoothed_nll
    monkeypatch.setattr(trainer, "label_smoothed_nll", lambda logits, *a: seen.append(str(logits.dtype))
                        or real(logits, *a))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])))
    assert main(["bench", str(cfg), "--set", f"train.amp={amp}", "--steps", "1", "--warmup", "0",
                 "--decode-sentences", "1", "--threads", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["amp"] == ("bf16" if amp == "bf16" else "fp32")
    assert seen == [dtype]


# -- bad values: refused when the config loads, before anything is written -----------------

def tiny_config_file(tiny_corpus, tmp_path, **train):
    import yaml

    from tests.support import tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(train)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


@pytest.mark.parametrize("override, needles", [
    ("train.max_steps=-3", ["train.max_steps", "-3"]),
    ("train.lr=-0.01", ["train.lr", "-0.01"]),
    ("train.schedule=bogus", ["train.schedule", "bogus", "warmup_decay"]),
    ("search.normalize=bogus", ["search.normalize", "bogus"]),
    ("train.validation_search=bogus", ["train.validation_search", "bogus"]),
    ("model.readout=bogus", ["model.readout", "bogus", "maxout"]),
    ("model.arch=luong", ["model.options.attention", "luong"]),  # the model's shapes, built on the meta device
    ("model.cell=grru", ["model.cell", "did you mean 'gru'"]),
])
def test_a_bad_value_stops_train_before_anything_is_written(tiny_corpus, tmp_path, capsys, override, needles):
    cfg, out = tiny_config_file(tiny_corpus, tmp_path), tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(out), "--set", override]) == 2
    assert_one_line(capsys.readouterr().err, *needles)
    assert not out.exists()  # no vocabulary trained, no directory made


@pytest.mark.parametrize("text", ["", "\n  \n\n"])
def test_an_empty_corpus_is_one_line_naming_the_file(tmp_path, capsys, text):
    (tmp_path / "c.es").write_text(text)
    (tmp_path / "c.en").write_text(text)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"data: {{train: {tmp_path / 'c'}, src: es, tgt: en, vocab: {{size: 30}}}}\n")
    assert main(["train", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"error: {tmp_path / 'c.es'}: no text to train the vocabulary on (the file is empty or " \
                      f"has only blank lines)", err
    assert not any(line.startswith("error: ") for line in err[:-1])


def test_an_empty_dev_set_is_one_line_before_anything_is_written(tiny_corpus, tmp_path, capsys):
    for lang in ("es", "en"):
        (tmp_path / f"dev.{lang}").write_text("\n")
    cfg, out = tiny_config_file(tiny_corpus, tmp_path), tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(out), "--set", f"data.dev={tmp_path / 'dev'}"]) == 2
    assert_one_line(capsys.readouterr().err, f"data.dev: {tmp_path / 'dev.es'} has no text")
    assert not out.exists()
