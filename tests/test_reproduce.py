"""`rnmt reproduce`: a tiny reproduction end to end, resuming, and the pieces it is built from."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from rnmt.cli import main
from rnmt.errors import UserError
from rnmt.reproduce import PAPERS, Settings, load_paper, reproduce_paper
from rnmt.reproduce.corpus import resolve_corpus
from rnmt.reproduce.report import judge_claim
from rnmt.reproduce.spec import Claim, repository_root
from rnmt.reproduce.system import training_speed

SAMPLE = repository_root() / "data" / "sample"


def _tiny_corpus(root: Path, name: str = "tiny-es-en", test: bool = True) -> Path:
    """The shortest verses of the sample: fast to train on and to decode."""
    directory = root / name
    directory.mkdir(parents=True)
    splits = {"train": 120, "dev": 8}
    if test:
        splits["test"] = 10
    for split, n in splits.items():
        src = (SAMPLE / f"{split}.es").read_text(encoding="utf-8").splitlines()
        tgt = (SAMPLE / f"{split}.en").read_text(encoding="utf-8").splitlines()
        pairs = sorted(zip(src, tgt), key=lambda p: len(p[0].split()))[:n]
        for lang, lines in (("es", [p[0] for p in pairs]), ("en", [p[1] for p in pairs])):
            (directory / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def _settings(**changes) -> Settings:
    values = dict(budget=0.003, emb_size=8, hidden_size=16, vocab_size=120, dev_sentences=4,
                  validate_every=2, log_every=1, threads=1, device="cpu", bootstrap=20)
    values.update(changes)
    return Settings(**values)


class Log(list):
    def __call__(self, msg: str) -> None:
        self.append(msg)


@pytest.fixture(scope="module")
def tiny_reproduction(tmp_path_factory):
    root = tmp_path_factory.mktemp("repro")
    corpus = _tiny_corpus(root)
    out = root / "results"
    log = Log()
    summary = reproduce_paper("atr", _settings(), out, str(corpus), systems=["rnnsearch-atr"], log=log)
    return {"root": root, "corpus": corpus, "out": out, "log": log, "summary": summary}


def test_tiny_reproduction_writes_records_translations_and_readme(tiny_reproduction):
    out = tiny_reproduction["out"] / "atr"
    assert tiny_reproduction["summary"]["finished"] == ["rnnsearch-gru", "rnnsearch-atr"]  # baseline added
    for name in ("rnnsearch-gru", "rnnsearch-atr"):
        record = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        for key in ("params", "test_bleu", "test_chrf", "train_tokens_per_s", "decode_words_per_s",
                    "greedy_decode_words_per_s", "steps", "train_minutes", "best_dev_bleu", "machine"):
            assert record[key] is not None, key
        assert record["budget_minutes"] == 0.003 and record["seed"] == 1
        assert record["beam"] == 10 and record["normalize"] == "length"  # the ATR paper's search
        hyps = (out / "hyp" / f"{name}.en").read_text(encoding="utf-8").splitlines()
        assert len(hyps) == 10
    atr = json.loads((out / "rnnsearch-atr.json").read_text(encoding="utf-8"))
    gru = json.loads((out / "rnnsearch-gru.json").read_text(encoding="utf-8"))
    assert atr["params"] < gru["params"]
    assert (out / "gates.png").is_file()
    gates = json.loads((out / "gates.json").read_text(encoding="utf-8"))
    assert {"encoder.fwd", "encoder.bwd", "decoder.unit1", "decoder.unit2"} <= set(gates["units"])
    assert (tiny_reproduction["out"] / ".gitignore").read_text(encoding="utf-8").split()[-1] == "*/runs/"


def test_readme_table_has_the_expected_columns(tiny_reproduction):
    readme = (tiny_reproduction["out"] / "atr" / "README.md").read_text(encoding="utf-8")
    header = next(line for line in readme.splitlines() if line.startswith("| system |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    for column in ("system", "params", "BLEU", "chrF", "p vs RNNSearch+GRU", "train tok/s", "decode words/s"):
        assert column in columns
    assert "| RNNSearch+ATR | 67.8M |" in readme
    assert "| RNNSearch+LSTM | 93.3M | - | 22.39 | not run |" in readme
    assert "**Budget**: 0.003 minutes" in readme and "**Machine**:" in readme and "**Seeds**" in readme
    assert "ATR translates about as well as GRU" in readme and "Pearson's r" in readme
    assert not re.search(r"(^|[\s`(])/\w", readme)  # no absolute paths: relative to the repository


def test_a_second_call_skips_finished_systems(tiny_reproduction):
    out = tiny_reproduction["out"]
    before = {p.name: p.stat().st_mtime_ns for p in (out / "atr").glob("*.json") if p.name != "results.json"}
    log = Log()
    reproduce_paper("atr", _settings(), out, str(tiny_reproduction["corpus"]), systems=["rnnsearch-atr"], log=log)
    assert sum("finished earlier, skipped" in m for m in log) == 2
    assert not any("training for" in m or ": decoding" in m for m in log)
    after = {p.name: p.stat().st_mtime_ns for p in (out / "atr").glob("*.json") if p.name != "results.json"}
    assert {k: v for k, v in after.items() if k != "settings.json"} == \
        {k: v for k, v in before.items() if k != "settings.json"}


def test_a_trained_system_is_decoded_without_training_and_a_stopped_one_resumes(tiny_reproduction):
    out = tiny_reproduction["out"] / "atr"
    run = out / "runs" / "rnnsearch-atr"
    (out / "rnnsearch-atr.json").unlink()
    log = Log()
    reproduce_paper("atr", _settings(), tiny_reproduction["out"], str(tiny_reproduction["corpus"]),
                    systems=["rnnsearch-atr"], log=log)
    assert any("already trained, decoding only" in m for m in log)
    assert (out / "rnnsearch-atr.json").is_file()

    steps = json.loads((run / "trained.json").read_text(encoding="utf-8"))["steps"]
    (out / "rnnsearch-atr.json").unlink()
    (run / "trained.json").unlink()  # as if the process had been killed during training
    log = Log()
    reproduce_paper("atr", _settings(), tiny_reproduction["out"], str(tiny_reproduction["corpus"]),
                    systems=["rnnsearch-atr"], log=log)
    assert any("resuming the stopped training run" in m for m in log)
    record = json.loads((out / "rnnsearch-atr.json").read_text(encoding="utf-8"))
    assert record["steps"] >= steps


def test_changed_settings_are_refused(tiny_reproduction):
    with pytest.raises(UserError, match="budget"):
        reproduce_paper("atr", _settings(budget=0.5), tiny_reproduction["out"], str(tiny_reproduction["corpus"]),
                        systems=["rnnsearch-atr"], log=Log())


def test_command_line_runs_a_paper(tmp_path, capsys):
    corpus = _tiny_corpus(tmp_path)
    code = main(["reproduce", "cseq2seq", "--systems", "seq2seq", "--budget", "0.002", "--dims", "8,16",
                 "--vocab-size", "120", "--data", str(corpus), "--out", str(tmp_path / "results"),
                 "--dev-sentences", "4", "--validate-every", "2", "--threads", "1", "--device", "cpu",
                 "--bootstrap", "20", "--set", "search.beam=2"])
    assert code == 0
    out = tmp_path / "results" / "cseq2seq"
    assert {json.loads((out / f"{n}.json").read_text())["beam"] for n in ("seq2seq", "rnnsearch")} == {2}
    assert (out / "by_length.png").is_file()
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "BLEU by source length (Cseq2seq Fig. 2)" in readme and "--set search.beam=2" in readme


def test_command_line_rejects_bad_dims(capsys):
    assert main(["reproduce", "atr", "--dims", "256"]) == 2
    assert "--dims" in capsys.readouterr().err


def test_every_paper_names_existing_configs_and_systems():
    for paper in PAPERS:
        spec = load_paper(paper)
        assert spec.baseline in [s.name for s in spec.systems]
        for s in spec.systems + spec.optional_systems:
            assert (repository_root() / s.config).is_file(), s.config
        assert spec.claims
    assert [s.name for s in load_paper("dtmt").systems] == ["shallow-rnmt", "shallow-rnmt-lgru", "dtmt1-gru",
                                                             "dtmt1", "dtmt4"]
    with pytest.raises(UserError, match="no system"):
        load_paper("atr").select(["rnnsearch-gruu"])


def test_a_corpus_without_test_split_uses_half_of_dev(tmp_path):
    corpus = resolve_corpus(str(_tiny_corpus(tmp_path, "small-es-en", test=False)), None, None, tmp_path / "work",
                            log=Log())
    assert (corpus.src, corpus.tgt) == ("es", "en")
    assert (corpus.dev_pairs, corpus.test_pairs) == (4, 4)
    assert "second half of dev" in corpus.note
    plain = _rename_languages(_tiny_corpus(tmp_path, "plain"))
    with pytest.raises(UserError, match="--src and --tgt"):
        resolve_corpus(str(plain), None, None, tmp_path / "work2", log=Log())
    assert resolve_corpus(str(plain), "xx", "yy", tmp_path / "work3", log=Log()).test_pairs == 10


def _rename_languages(directory: Path) -> Path:
    for path in directory.iterdir():
        path.rename(path.with_suffix(".xx" if path.suffix == ".es" else ".yy"))
    return directory


def test_training_speed_counts_every_step_once_after_a_resume(tmp_path):
    log = tmp_path / "log.jsonl"
    records = [{"step": 10, "tokens_per_s": 100.0, "train_seconds": 10.0},
               {"step": 20, "tokens_per_s": 100.0, "train_seconds": 20.0},  # lost: resumed from step 10
               {"step": 10, "dev_bleu": 1.0},
               {"step": 20, "tokens_per_s": 300.0, "train_seconds": 20.0}]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert training_speed(log)["train_tokens_per_s"] == pytest.approx(200.0)


def test_claims_are_judged_with_scores_parameters_and_p_values():
    refs = [f"sentence number {i} is here" for i in range(30)]
    good = list(refs)
    bad = [r.split()[0] for r in refs]
    hyps = {"a": good, "b": bad}
    records = {"a": {"test_bleu": 90.0, "params": 10, "speed": 5.0},
               "b": {"test_bleu": 10.0, "params": 20, "speed": 10.0}}
    better = judge_claim(Claim("better", "a", "b", "a > b"), records, hyps, refs, 50)
    assert better["held"] and better["status"] == "held" and better["p_value"] < 0.05
    reverse = judge_claim(Claim("better", "b", "a", "b > a"), records, hyps, refs, 50)
    assert not reverse["held"] and reverse["status"] == "reversed"
    about = judge_claim(Claim("about", "b", "a", "b about a"), records, hyps, refs, 50)
    assert not about["held"]  # fewer parameters is not enough when significantly worse
    faster = judge_claim(Claim("faster", "a", "b", "a faster", metric="speed"), records, hyps, refs, 50)
    assert not faster["held"] and "0.50x" in faster["status"]
    missing = judge_claim(Claim("better", "a", "c", "a > c"), records, hyps, refs, 50)
    assert missing["status"] == "not run"
    untrained = {"a": {"test_bleu": 0.04, "params": 10}, "b": {"test_bleu": 0.01, "params": 20}}
    undecided = judge_claim(Claim("better", "a", "b", "a > b"), untrained, hyps, refs, 50)
    assert undecided["held"] is None and undecided["status"].startswith("undecided")


def test_recorded_atr_gates_match_the_models_own_trace():
    """The step recorder sees the same gates as the dl4mt RNNSearch's analysis hooks."""
    from rnmt.config import ModelConfig
    from rnmt.models import build_model
    from rnmt.models.base import uniform_init_
    from rnmt.reproduce.gates import recording

    torch.manual_seed(0)
    model = build_model(ModelConfig(arch="rnnsearch", cell="atr", emb_size=6, hidden_size=8), 20, 20)
    uniform_init_(model, 0.5)
    model.eval()
    src = torch.tensor([[4, 5, 6, 2], [7, 8, 2, 0]])
    mask = src != 0
    tgt_in = torch.tensor([[1, 9, 10, 11], [1, 12, 13, 0]])
    with torch.no_grad(), recording(model) as calls:
        model(src, mask, tgt_in)
    with torch.no_grad():
        enc = model.encoder_gates(src, mask)
        trace = model.decoder_trace(src, mask, tgt_in)
    fwd_i = torch.stack([c[0] for c in calls["encoder.fwd"]], 1)
    bwd_f = torch.stack([c[1] for c in calls["encoder.bwd"]][::-1], 1)
    unit1_i = torch.stack([c[0] for c in calls["unit1"]], 1)
    assert torch.allclose(fwd_i[0], enc["fwd.i"].mean(-1)[0], atol=1e-6)
    assert torch.allclose(bwd_f[0], enc["bwd.f"].mean(-1)[0], atol=1e-6)
    assert torch.allclose(unit1_i, trace["unit1.i"].mean(-1), atol=1e-6)
    assert "step" not in vars(model.unit1)  # the wrapper is gone after the block
