"""`rnmt reproduce`: a tiny reproduction end to end, resuming, and the pieces it is built from."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rnmt.cli import main
from rnmt.errors import UserError
from rnmt.reproduce import load_paper, reproduce_paper
from rnmt.reproduce.corpus import resolve_corpus
from rnmt.reproduce.system import training_speed
from tests.support import MessageLog, tiny_reproduction_corpus, tiny_reproduction_settings


@pytest.fixture(scope="module")
def tiny_reproduction(tmp_path_factory):
    root = tmp_path_factory.mktemp("repro")
    corpus = tiny_reproduction_corpus(root)
    out = root / "results"
    log = MessageLog()
    summary = reproduce_paper("atr", tiny_reproduction_settings(), out, str(corpus), systems=["rnnsearch-atr"], log=log)
    return {"root": root, "corpus": corpus, "out": out, "log": log, "summary": summary}


def test_tiny_reproduction_writes_records_translations_and_readme(tiny_reproduction):
    out = tiny_reproduction["out"] / "atr"
    assert tiny_reproduction["summary"]["finished"] == ["rnnsearch-gru", "rnnsearch-atr"]  # baseline added
    # Both are `seeded` in configs/reproduce/atr.yaml: one record and translation per seed.
    for name in ("rnnsearch-gru", "rnnsearch-atr"):
        for seed in (1, 2):
            record = json.loads((out / f"{name}.seed{seed}.json").read_text(encoding="utf-8"))
            for key in ("params", "test_bleu", "test_chrf", "train_tokens_per_s", "decode_words_per_s",
                        "greedy_decode_words_per_s", "steps", "train_minutes", "seconds_per_update",
                        "best_dev_bleu", "dev_ppl", "length_ratio", "machine", "commit", "command"):
                assert record[key] is not None, key
            assert record["steps"] == 3 and record["seed"] == seed  # equal updates, not minutes
            assert record["command"].startswith("rnmt reproduce atr --updates 3")
            assert record["recipe"]["train.init_scale"] == 0.15  # the family recipe was applied
            assert record["machine"]["precision"] == "fp32"  # train.amp auto is fp32 on the CPU
            assert record["beam"] == 10 and record["normalize"] == "length"  # the ATR paper's search
            hyps = (out / "hyp" / f"{name}.seed{seed}.en").read_text(encoding="utf-8").splitlines()
            assert len(hyps) == 10
    config = (out / "runs" / "rnnsearch-atr.seed2" / "config.yaml").read_text(encoding="utf-8")
    assert "seed: 2" in config and "init_scale: 0.15" in config
    atr = json.loads((out / "rnnsearch-atr.seed1.json").read_text(encoding="utf-8"))
    gru = json.loads((out / "rnnsearch-gru.seed1.json").read_text(encoding="utf-8"))
    assert atr["params"] < gru["params"]
    assert (out / "gates.png").is_file()
    gates = json.loads((out / "gates.json").read_text(encoding="utf-8"))
    assert {"encoder.fwd", "encoder.bwd", "decoder.unit1", "decoder.unit2"} <= set(gates["units"])
    assert set(gates["untrained"]) == set(gates["units"])  # the same figure for the model as initialised
    assert gates["run"] == "rnnsearch-atr.seed1"
    ignored = (tiny_reproduction["out"] / ".gitignore").read_text(encoding="utf-8").split()
    assert "*/runs/" in ignored and ".train.lock" in ignored  # checkpoints and the table's lock


def test_readme_table_has_the_expected_columns(tiny_reproduction):
    readme = (tiny_reproduction["out"] / "atr" / "README.md").read_text(encoding="utf-8")
    header = next(line for line in readme.splitlines() if line.startswith("| system |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    for column in ("system", "params", "BLEU", "chrF", "p vs RNNSearch+GRU", "train tok/s", "decode words/s"):
        assert column in columns
    for column in ("updates", "s/update", "len ratio", "dev ppl"):
        assert column in columns
    assert "| RNNSearch+ATR | 67.8M |" in readme
    assert "| RNNSearch+LSTM | 93.3M | - | 22.39 | not run |" in readme
    assert "3 updates for every system" in readme and "**Machine**:" in readme and "**Seeds**" in readme
    assert "**Code**: commit" in readme and "**Family recipe**" in readme
    assert "ATR translates about as well as GRU" in readme and "Pearson's r" in readme
    assert "Pearson r (untrained)" in readme
    # Tiny models are far below the sanity threshold: no claim may be read from them.
    claims = [line for line in readme.splitlines() if "ATR translates about as well as GRU" in line]
    assert "undecided: fails the sanity check" in claims[0] and "seeds" in readme
    # The speed claims were timed side by side in the final report (ATR vs GRU ran; LSTM did not).
    speed = json.loads((tiny_reproduction["out"] / "atr" / "speed.json").read_text(encoding="utf-8"))
    assert list(speed) == ["rnnsearch-atr|rnnsearch-gru"]
    assert len(speed["rnnsearch-atr|rnnsearch-gru"]["ratios"]) == 3
    assert "ATR trains faster than GRU" in readme and "rounds " in readme
    assert not re.search(r"(^|[\s`(])/\w", readme)  # no absolute paths: relative to the repository


def test_a_second_call_skips_finished_systems(tiny_reproduction):
    out = tiny_reproduction["out"]
    before = {p.name: p.stat().st_mtime_ns for p in (out / "atr").glob("*.json") if p.name != "results.json"}
    log = MessageLog()
    reproduce_paper("atr", tiny_reproduction_settings(), out, str(tiny_reproduction["corpus"]),
                    systems=["rnnsearch-atr"], log=log)
    assert any("4 runs of 2 systems, 0 to do" in m for m in log)
    assert not any("training for" in m or ": decoding" in m for m in log)
    after = {p.name: p.stat().st_mtime_ns for p in (out / "atr").glob("*.json") if p.name != "results.json"}
    assert {k: v for k, v in after.items() if k != "settings.json"} == \
        {k: v for k, v in before.items() if k != "settings.json"}


def test_a_trained_system_is_decoded_without_training_and_a_stopped_one_resumes(tiny_reproduction):
    out = tiny_reproduction["out"] / "atr"
    run = out / "runs" / "rnnsearch-atr.seed2"
    (out / "rnnsearch-atr.seed2.json").unlink()
    log = MessageLog()
    reproduce_paper("atr", tiny_reproduction_settings(), tiny_reproduction["out"], str(tiny_reproduction["corpus"]),
                    systems=["rnnsearch-atr"], log=log)
    assert any("already trained, decoding only" in m for m in log)
    assert (out / "rnnsearch-atr.seed2.json").is_file()

    steps = json.loads((run / "trained.json").read_text(encoding="utf-8"))["steps"]
    (out / "rnnsearch-atr.seed2.json").unlink()
    (run / "trained.json").unlink()  # as if the process had been killed during training
    log = MessageLog()
    reproduce_paper("atr", tiny_reproduction_settings(), tiny_reproduction["out"], str(tiny_reproduction["corpus"]),
                    systems=["rnnsearch-atr"], log=log)
    assert any("resuming the stopped training run" in m for m in log)
    record = json.loads((out / "rnnsearch-atr.seed2.json").read_text(encoding="utf-8"))
    assert record["steps"] == steps


def test_changed_settings_are_refused(tiny_reproduction):
    with pytest.raises(UserError, match="updates"):
        reproduce_paper("atr", tiny_reproduction_settings(updates=5), tiny_reproduction["out"],
                        str(tiny_reproduction["corpus"]),
                        systems=["rnnsearch-atr"], log=MessageLog())


def test_command_line_runs_a_paper(tmp_path, capsys):
    corpus = tiny_reproduction_corpus(tmp_path)
    code = main(["reproduce", "cseq2seq", "--systems", "seq2seq", "--updates", "2", "--seeds", "3", "--dims", "8,16",
                 "--vocab-size", "120", "--data", str(corpus), "--out", str(tmp_path / "results"),
                 "--dev-sentences", "4", "--validate-every", "2", "--threads", "1", "--device", "cpu",
                 "--bootstrap", "20", "--set", "search.beam=2"])
    assert code == 0
    out = tmp_path / "results" / "cseq2seq"
    records = [json.loads((out / f"{n}.json").read_text()) for n in ("seq2seq", "rnnsearch")]
    assert {r["beam"] for r in records} == {2} and {r["seed"] for r in records} == {3}
    assert (out / "by_length.png").is_file()
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "BLEU by source length (Cseq2seq Fig. 2)" in readme and "--set search.beam=2" in readme


def test_a_corpus_without_test_split_uses_half_of_dev(tmp_path):
    corpus = resolve_corpus(str(tiny_reproduction_corpus(tmp_path, "small-es-en", test=False)), None, None,
                            tmp_path / "work",
                            log=MessageLog())
    assert (corpus.src, corpus.tgt) == ("es", "en")
    assert (corpus.dev_pairs, corpus.test_pairs) == (4, 4)
    assert "second half of dev" in corpus.note
    plain = _rename_languages(tiny_reproduction_corpus(tmp_path, "plain"))
    with pytest.raises(UserError, match="--src and --tgt"):
        resolve_corpus(str(plain), None, None, tmp_path / "work2", log=MessageLog())
    assert resolve_corpus(str(plain), "xx", "yy", tmp_path / "work3", log=MessageLog()).test_pairs == 10


def test_a_test_split_that_cannot_be_read_is_refused_before_any_training(tmp_path):
    # it was read only to decode, after every system had trained
    corpus = tiny_reproduction_corpus(tmp_path, "bad-es-en")
    with open(corpus / "test.es", "ab") as f:
        f.write(b"ab\xffcd\n")
    with open(corpus / "test.en", "a", encoding="utf-8") as f:
        f.write("abcd\n")
    with pytest.raises(UserError, match=r"test\.es.*line 11"):
        resolve_corpus(str(corpus), None, None, tmp_path / "work", log=MessageLog())


def _rename_languages(directory: Path) -> Path:
    for path in directory.iterdir():
        path.rename(path.with_suffix(".xx" if path.suffix == ".es" else ".yy"))
    return directory


def test_training_speed_counts_every_step_once_after_a_resume(tmp_path):
    log = tmp_path / "log.jsonl"
    records = [{"step": 10, "loss": 3.0, "tokens_per_s": 100.0, "train_seconds": 10.0},
               {"step": 20, "loss": 3.0, "tokens_per_s": 100.0, "train_seconds": 20.0},  # lost: resumed from step 10
               {"step": 10, "dev_bleu": 1.0},
               {"step": 20, "loss": 3.0, "tokens_per_s": 300.0, "train_seconds": 20.0}]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert training_speed(log)["train_tokens_per_s"] == pytest.approx(200.0)


def test_the_convergence_protocol_writes_its_own_directory_and_stops_on_a_plateau(tmp_path):
    corpus = tiny_reproduction_corpus(tmp_path)
    out = tmp_path / "results"
    settings = tiny_reproduction_settings(updates=40, converge=True, patience=1, plateau_patience=1, seeds=[1],
                                          dev_sentences=0)
    # a learning-speed table beside it: the converged README shows both verdicts per claim
    first = load_paper("atr").claims[0]
    (out / "atr").mkdir(parents=True)
    (out / "atr" / "results.json").write_text(json.dumps({"claims": [
        {"kind": first.kind, "a": first.a, "b": first.b, "text": first.text, "status": "reversed (measured)",
         "differences": [-1.5], "ci": [[-2.0, -1.0]]}]}))
    # and its side-by-side timing, which the converged table judges its speed claims by
    (out / "atr" / "speed.json").write_text(json.dumps({"rnnsearch-atr|rnnsearch-gru": {
        "tokens_per_s_a": [120.0, 121.0, 119.0], "tokens_per_s_b": [100.0] * 3, "ratios": [1.2, 1.21, 1.19],
        "ratio": 1.2, "rounds": 3}}))
    summary = reproduce_paper("atr", settings, out, str(corpus), systems=["rnnsearch-atr"], log=MessageLog())
    results = out / "atr-converged"
    assert sorted(p.name for p in (out / "atr").iterdir()) == ["results.json", "speed.json"]
    assert (results / "README.md").is_file()
    assert not (results / "speed.json").exists()  # nothing timed beside the pool's other runs
    faster = next(c for c in summary["claims"] if c["kind"] == "faster" and c["b"] == "rnnsearch-gru")
    assert faster["status"].startswith("held (1.20x") and faster["ci"] == [[1.19, 1.21]]
    record = json.loads((results / "rnnsearch-gru.json").read_text())
    assert record["recipe"]["train.schedule"] == "plateau" and record["recipe"]["train.patience"] == 1
    # patience 1: the first validation without a new best ends the run, long before the cap
    assert record["stop_reason"] == "early_stopping" and record["steps"] < 40
    assert record["updates_to_best"] == record["checkpoint_step"] < record["steps"]
    assert record["wall_minutes"] >= record["train_minutes"] and record["plateau_decays"] >= 1
    assert record["command"].startswith("rnmt reproduce atr --converge --updates 40")
    curve = record["validations"]  # the committed learning curve
    assert [v["step"] for v in curve] == list(range(2, record["steps"] + 1, 2))
    assert max(v["dev_bleu"] for v in curve) == pytest.approx(record["best_dev_bleu"], abs=0.01)
    readme = (results / "README.md").read_text()
    assert "(converged: every system trained until dev BLEU stopped improving)" in readme
    assert "updates to best" in readme and "early_stopping" in readme
    assert "updates after lowest dev loss" in readme
    assert "- **Seeds**: 1 for every system (the convergence protocol)" in readme
    assert "Not finished yet" not in readme  # the converged list (GRU, ATR) is done; ATR+CA is in no converged plan
    assert "here the learning-speed table's timing, `../atr/speed.json`" in readme
    row = next(line for line in readme.splitlines() if line.startswith(f"| {first.text} | reversed |"))
    assert "-1.50 [-2.00, -1.00]" in row
    assert summary["systems"]["rnnsearch-gru"][0]["stop_reason"] == "early_stopping"
    assert "reference_repetition" in summary


def test_a_run_stopped_by_a_signal_is_not_taken_for_trained(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM ends Trainer.run normally, with stop_reason 'signal': the run must be
    resumed by the next call, not decoded at the step it stopped."""
    from rnmt.reproduce import system
    from rnmt.training.trainer import Trainer

    corpus = tiny_reproduction_corpus(tmp_path)
    out = tmp_path / "results"
    real_run = Trainer.run

    def interrupted(self):
        self.cfg.train.max_steps = 2  # train a little, then act as if SIGTERM arrived
        summary = real_run(self)
        self.stop_signal = "SIGTERM"
        return {**summary, "stop_reason": "signal"}

    monkeypatch.setattr(Trainer, "run", interrupted)
    with pytest.raises(UserError, match="stopped by SIGTERM at update 2; run the same command again"):
        reproduce_paper("atr", tiny_reproduction_settings(seeds=[1]), out, str(corpus), systems=["rnnsearch-gru"],
                        log=MessageLog())
    run_dir = out / "atr" / "runs" / "rnnsearch-gru"
    assert not (run_dir / system.TRAINED).exists() and not (out / "atr" / "rnnsearch-gru.json").exists()
    monkeypatch.setattr(Trainer, "run", real_run)
    log = MessageLog()
    reproduce_paper("atr", tiny_reproduction_settings(seeds=[1]), out, str(corpus), systems=["rnnsearch-gru"], log=log)
    assert any("resuming the stopped training run" in m for m in log)
    assert json.loads((out / "atr" / "rnnsearch-gru.json").read_text())["steps"] == 3


def test_a_converged_list_naming_an_unknown_system_is_refused(tmp_path):
    from tests.support import REPO

    spec_dir = tmp_path / "configs" / "reproduce"
    spec_dir.mkdir(parents=True)
    text = (REPO / "configs" / "reproduce" / "dtmt.yaml").read_text(encoding="utf-8")
    (spec_dir / "dtmt.yaml").write_text(text.replace("converged: [shallow-rnmt,", "converged: [shalow-rnmt,"),
                                        encoding="utf-8")
    with pytest.raises(UserError, match="configs/reproduce/dtmt.yaml: converged names unknown system 'shalow-rnmt'"):
        load_paper("dtmt", tmp_path)


def test_raising_a_converged_tables_patience_continues_the_runs_it_ended_sooner(tmp_path):
    """Both + L-GRU runs of the DTMT table stopped with their dev loss still falling: a
    table's patience may be raised, and the runs early stopping ended sooner continue from
    their last checkpoint (exactly as if trained with it), their records replaced."""
    corpus = tiny_reproduction_corpus(tmp_path)
    out = tmp_path / "results"

    def settings(patience):
        return tiny_reproduction_settings(updates=40, converge=True, patience=patience, plateau_patience=1,
                                          seeds=[1], dev_sentences=0)

    reproduce_paper("atr", settings(1), out, str(corpus), log=MessageLog())
    results = out / "atr-converged"
    before = {name: json.loads((results / f"{name}.json").read_text()) for name in ("rnnsearch-gru", "rnnsearch-atr")}
    assert all(r["stop_reason"] == "early_stopping" and r["recipe"]["train.patience"] == 1 for r in before.values())
    with pytest.raises(UserError, match="other settings"):  # any other change is still refused
        reproduce_paper("atr", tiny_reproduction_settings(updates=40, converge=True, patience=3, plateau_patience=2,
                                                          seeds=[1], dev_sentences=0), out, str(corpus),
                        log=MessageLog())
    log = MessageLog()
    reproduce_paper("atr", settings(3), out, str(corpus), log=log)
    assert any("early stopping ended it sooner than patience 3: continuing it" in m for m in log)
    for name, old in before.items():
        new = json.loads((results / f"{name}.json").read_text())
        assert new["recipe"]["train.patience"] == 3 and new["steps"] > old["steps"]
        # the continued curve starts with the stopped run's own validations
        assert new["validations"][:len(old["validations"])] == old["validations"]
    saved = json.loads((results / "settings.json").read_text())
    assert saved["patience"] == 3 and saved["patience_raised_from"] == [1]
    with pytest.raises(UserError, match="other settings"):  # and lowering it again is refused
        reproduce_paper("atr", settings(2), out, str(corpus), log=MessageLog())
