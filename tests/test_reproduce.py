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
    values = dict(updates=3, emb_size=8, hidden_size=16, vocab_size=120, dev_sentences=4,
                  validate_every=2, log_every=1, seeds=[1, 2], threads=1, device="cpu", bootstrap=20)
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
    assert (tiny_reproduction["out"] / ".gitignore").read_text(encoding="utf-8").split()[-1] == "*/runs/"


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
    log = Log()
    reproduce_paper("atr", _settings(), out, str(tiny_reproduction["corpus"]), systems=["rnnsearch-atr"], log=log)
    assert any("4 runs of 2 systems, 0 to do" in m for m in log)
    assert not any("training for" in m or ": decoding" in m for m in log)
    after = {p.name: p.stat().st_mtime_ns for p in (out / "atr").glob("*.json") if p.name != "results.json"}
    assert {k: v for k, v in after.items() if k != "settings.json"} == \
        {k: v for k, v in before.items() if k != "settings.json"}


def test_a_trained_system_is_decoded_without_training_and_a_stopped_one_resumes(tiny_reproduction):
    out = tiny_reproduction["out"] / "atr"
    run = out / "runs" / "rnnsearch-atr.seed2"
    (out / "rnnsearch-atr.seed2.json").unlink()
    log = Log()
    reproduce_paper("atr", _settings(), tiny_reproduction["out"], str(tiny_reproduction["corpus"]),
                    systems=["rnnsearch-atr"], log=log)
    assert any("already trained, decoding only" in m for m in log)
    assert (out / "rnnsearch-atr.seed2.json").is_file()

    steps = json.loads((run / "trained.json").read_text(encoding="utf-8"))["steps"]
    (out / "rnnsearch-atr.seed2.json").unlink()
    (run / "trained.json").unlink()  # as if the process had been killed during training
    log = Log()
    reproduce_paper("atr", _settings(), tiny_reproduction["out"], str(tiny_reproduction["corpus"]),
                    systems=["rnnsearch-atr"], log=log)
    assert any("resuming the stopped training run" in m for m in log)
    record = json.loads((out / "rnnsearch-atr.seed2.json").read_text(encoding="utf-8"))
    assert record["steps"] == steps


def test_changed_settings_are_refused(tiny_reproduction):
    with pytest.raises(UserError, match="updates"):
        reproduce_paper("atr", _settings(updates=5), tiny_reproduction["out"], str(tiny_reproduction["corpus"]),
                        systems=["rnnsearch-atr"], log=Log())


def test_command_line_runs_a_paper(tmp_path, capsys):
    corpus = _tiny_corpus(tmp_path)
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


def test_command_line_rejects_bad_dims(capsys):
    assert main(["reproduce", "atr", "--dims", "256"]) == 2
    assert "--dims" in capsys.readouterr().err


def test_every_paper_names_existing_configs_and_systems():
    for paper in (*PAPERS, "bf16"):
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


def _runs(**systems):
    """{name: [record per seed]} from {name: [(seed, bleu, params, extra...)]}."""
    return {name: [{"seed": seed, "test_bleu": bleu, "params": params, "length_ratio": 1.0, **extra}
                   for seed, bleu, params, extra in rows] for name, rows in systems.items()}


REFS = [f"sentence number {i} is here and there" for i in range(40)]
GOOD = list(REFS)
WORSE = [" ".join(r.split()[:5]) + " there" for r in REFS]  # shorter, fewer matching n-grams


def test_claims_hold_or_reverse_only_when_every_seed_agrees():
    hyps = {"a": [GOOD, GOOD], "b": [WORSE, WORSE]}
    records = _runs(a=[(1, 90.0, 10, {"speed": 5.0}), (2, 90.0, 10, {"speed": 6.0})],
                    b=[(1, 40.0, 20, {"speed": 10.0}), (2, 40.0, 20, {"speed": 9.0})])
    better = judge_claim(Claim("better", "a", "b", "a > b"), records, hyps, REFS, 50)
    assert better["held"] and better["status"] == "held" and better["seeds"] == [1, 2]
    assert all(p < 0.05 for p in better["p_values"])
    assert better["runs"][0]["a"]["steps"] is None and "seconds_per_update" in better["runs"][0]["b"]
    reverse = judge_claim(Claim("better", "b", "a", "b > a"), records, hyps, REFS, 50)
    assert reverse["held"] is False and reverse["status"] == "reversed"
    about = judge_claim(Claim("about", "b", "a", "b about a"), records, hyps, REFS, 50)
    assert about["held"] is False and about["status"] == "reversed: not fewer parameters"
    smaller_b = {"a": records["a"], "b": [dict(r, params=5) for r in records["b"]]}
    about = judge_claim(Claim("about", "b", "a", "b about a"), smaller_b, hyps, REFS, 50)
    assert about["held"] is False and about["status"] == "reversed: more than 0.5 BLEU worse in every seed"
    assert all(high < -0.5 for _, high in about["ci"]) and len(about["ci"]) == 2
    about = judge_claim(Claim("about", "a", "b", "a about b"), {"a": [dict(r, params=5) for r in records["a"]],
                                                                "b": records["b"]}, hyps, REFS, 50)
    assert about["held"] and about["status"] == "held: at most 0.5 BLEU worse in every seed, and significantly " \
        "better in every seed"
    assert better["ci"] and all(low > 0 for low, _ in better["ci"])  # every claim carries its intervals
    faster = Claim("faster", "a", "b", "a faster", metric="speed")
    untimed = judge_claim(faster, records, hyps, REFS, 50)  # the records' own speeds decide nothing
    assert untimed["held"] is None and untimed["status"].startswith("undecided: not timed side by side")
    timed = {"a|b": {"tokens_per_s_a": [90.0, 95.0, 92.0], "tokens_per_s_b": [100.0, 99.0, 101.0],
                     "ratios": [0.9, 0.96, 0.91], "ratio": 0.91}}
    timed_verdict = judge_claim(faster, records, hyps, REFS, 50, timed)
    assert timed_verdict["status"].startswith("reversed (0.91x") and timed_verdict["ci"] == [[0.9, 0.96]]
    mixed = {"a|b": dict(timed["a|b"], ratios=[1.1, 0.96, 1.02], ratio=1.02)}
    assert judge_claim(faster, records, hyps, REFS, 50, mixed)["status"].startswith("undecided: the rounds disagree")
    missing = judge_claim(Claim("better", "a", "c", "a > c"), records, hyps, REFS, 50)
    assert missing["status"] == "not run"


def test_a_seed_that_disagrees_leaves_the_claim_undecided():
    hyps = {"a": [GOOD, GOOD], "b": [WORSE, GOOD]}  # seed 2 of b is as good as a
    records = _runs(a=[(1, 90.0, 10, {}), (2, 90.0, 10, {})], b=[(1, 40.0, 20, {}), (2, 90.0, 20, {})])
    verdict = judge_claim(Claim("better", "a", "b", "a > b"), records, hyps, REFS, 50)
    assert verdict["held"] is None and verdict["status"].startswith("undecided: not significant in every seed")
    # Only seeds both systems ran are compared: b with seed 1 only decides on seed 1 alone.
    one_seed = {"a": records["a"], "b": records["b"][:1]}
    verdict = judge_claim(Claim("better", "a", "b", "a > b"), one_seed, {"a": hyps["a"], "b": hyps["b"][:1]},
                          REFS, 50)
    assert verdict["status"] == "held" and verdict["seeds"] == [1]


def test_a_one_sided_near_zero_pair_is_undecided_not_held():
    """ATR 1.78 vs RAN 0.01 used to read "held": a system that does not translate decides nothing."""
    commas = ["," for _ in REFS]
    hyps = {"atr": [GOOD], "ran": [commas]}
    records = _runs(atr=[(1, 90.0, 10, {})], ran=[(1, 0.01, 20, {"length_ratio": 0.03})])
    verdict = judge_claim(Claim("better", "atr", "ran", "ATR > RAN"), records, hyps, REFS, 50)
    assert verdict["held"] is None
    assert verdict["status"].startswith("undecided: fails the sanity check") and "ran seed 1: BLEU 0.01" in \
        verdict["status"]
    low = _runs(a=[(1, 1.78, 10, {})], b=[(1, 0.01, 20, {})])
    assert judge_claim(Claim("better", "a", "b", "a > b"), low, {"a": [GOOD], "b": [commas]}, REFS, 50)["held"] is None


def test_degenerate_output_fails_the_sanity_check_even_with_bleu():
    from rnmt.reproduce.report import length_ratio, sanity_problem

    rambling = [r + " " + " ".join(["the"] * 30) for r in REFS]  # every n-gram of the reference, then noise
    ratio = length_ratio(rambling, REFS)
    assert ratio > 2.0
    problem = sanity_problem({"test_bleu": 25.0, "length_ratio": ratio}, rambling, REFS)
    assert problem and "length" in problem
    assert sanity_problem({"test_bleu": 25.0, "length_ratio": None}, GOOD, REFS) is None  # computed when missing
    hyps = {"a": [GOOD], "b": [rambling]}
    records = _runs(a=[(1, 90.0, 10, {})], b=[(1, 25.0, 20, {"length_ratio": ratio})])
    verdict = judge_claim(Claim("better", "a", "b", "a > b"), records, hyps, REFS, 50)
    assert verdict["held"] is None and "length" in verdict["status"]


def test_side_by_side_jobs_give_the_records_of_one_process(tmp_path):
    """--jobs 2: each run in its own process, same records (and losses) as one after the other."""
    corpus = _tiny_corpus(tmp_path)
    one = reproduce_paper("cseq2seq", _settings(seeds=[1]), tmp_path / "one", str(corpus),
                          systems=["seq2seq"], log=Log())
    log = Log()
    two = reproduce_paper("cseq2seq", _settings(seeds=[1], jobs=2), tmp_path / "two", str(corpus),
                          systems=["seq2seq"], log=log)
    assert sum("started in its own process" in m for m in log) == 2
    assert (tmp_path / "two" / "cseq2seq" / "runs" / "seq2seq.log").is_file()
    for name in ("seq2seq", "rnnsearch"):
        a, b = one["systems"][name][0], two["systems"][name][0]
        assert (a["test_bleu"], a["steps"]) == (b["test_bleu"], b["steps"])
        one_losses, two_losses = ([json.loads(line).get("loss") for line in
                                   (tmp_path / d / "cseq2seq" / "runs" / name / "log.jsonl").read_text().splitlines()]
                                  for d in ("one", "two"))
        assert one_losses == two_losses and any(loss is not None for loss in one_losses)
    record = json.loads((tmp_path / "two" / "cseq2seq" / "rnnsearch.json").read_text())
    assert record["machine"]["jobs"] == 2


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


def test_same_claims_hold_only_when_the_interval_lies_within_the_margin():
    """Equivalence, not absence of evidence: a difference that is not significant but may be
    large leaves "same" undecided."""
    close = [r.replace("there", "theer") if i % 9 == 0 else r for i, r in enumerate(REFS)]  # a few words off
    records = _runs(a=[(1, 96.0, 10, {}), (2, 96.0, 10, {})], b=[(1, 97.0, 10, {}), (2, 95.0, 10, {})])
    same = judge_claim(Claim("same", "a", "b", "a same as b"), records, {"a": [close, close], "b": [GOOD, close]},
                       REFS, 200)
    assert same["held"] is None and same["status"].startswith("undecided: not shown within ±0.5 BLEU")
    assert same["ci"][0][0] < -0.5 and same["ci"][1] == [0.0, 0.0]  # seed 1 may be far apart, seed 2 identical
    same = judge_claim(Claim("same", "a", "b", "a same as b"), records, {"a": [close, GOOD], "b": [close, GOOD]},
                       REFS, 200)
    assert same["held"] and same["spread_b"] == pytest.approx(2.0)
    assert same["status"] == "held: within ±0.5 BLEU in every seed (b's seed-to-seed spread 2.00)"
    worse = judge_claim(Claim("same", "a", "b", "a same as b"),
                        _runs(a=[(1, 40.0, 10, {}), (2, 40.0, 10, {})], b=[(1, 90.0, 10, {}), (2, 90.0, 10, {})]),
                        {"a": [WORSE, WORSE], "b": [GOOD, GOOD]}, REFS, 200)
    assert worse["held"] is False and worse["status"].startswith("reversed: apart by more than 0.5 BLEU")


def test_looping_output_fails_the_sanity_check_at_any_bleu_and_length():
    from rnmt.reproduce.report import sanity_problem

    # Every reference kept, one line in ten ending in a loop: BLEU and length stay plausible.
    looping = [r + " his own own own own own own" if i % 10 == 0 else r for i, r in enumerate(REFS)]
    problem = sanity_problem({"test_bleu": 80.0, "length_ratio": 1.1}, looping, REFS)
    assert problem and problem.startswith("loops:") and "4 looping lines" in problem
    hyps = {"a": [GOOD], "b": [looping]}
    records = _runs(a=[(1, 90.0, 10, {})], b=[(1, 80.0, 20, {"length_ratio": 1.1})])
    verdict = judge_claim(Claim("better", "a", "b", "a > b"), records, hyps, REFS, 50)
    assert verdict["held"] is None and "loops:" in verdict["status"]


def test_the_bf16_protocol_pairs_each_system_with_itself_in_fp32():
    spec = load_paper("bf16")
    assert [c.kind for c in spec.claims] == ["same", "same"]
    for claim in spec.claims:
        a, b = spec.system(claim.a), spec.system(claim.b)
        assert a.config == b.config and a.recipe["train.amp"] == "bf16" and b.recipe["train.amp"] == "none"
        assert {k: v for k, v in a.recipe.items() if k != "train.amp"} == \
            {k: v for k, v in b.recipe.items() if k != "train.amp"}
    assert set(spec.seeded) == {s.name for s in spec.systems}


def test_the_convergence_protocol_writes_its_own_directory_and_stops_on_a_plateau(tmp_path):
    corpus = _tiny_corpus(tmp_path)
    out = tmp_path / "results"
    settings = _settings(updates=40, converge=True, patience=1, plateau_patience=1, seeds=[1], dev_sentences=0)
    summary = reproduce_paper("atr", settings, out, str(corpus), systems=["rnnsearch-atr"], log=Log())
    results = out / "atr-converged"
    assert not (out / "atr").exists() and (results / "README.md").is_file()
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
    assert summary["systems"]["rnnsearch-gru"][0]["stop_reason"] == "early_stopping"
    assert "reference_repetition" in summary


def test_a_run_stopped_by_a_signal_is_not_taken_for_trained(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM ends Trainer.run normally, with stop_reason 'signal': the run must be
    resumed by the next call, not decoded at the step it stopped."""
    from rnmt.reproduce import system
    from rnmt.training.trainer import Trainer

    corpus = _tiny_corpus(tmp_path)
    out = tmp_path / "results"
    real_run = Trainer.run

    def interrupted(self):
        self.cfg.train.max_steps = 2  # train a little, then act as if SIGTERM arrived
        summary = real_run(self)
        self.stop_signal = "SIGTERM"
        return {**summary, "stop_reason": "signal"}

    monkeypatch.setattr(Trainer, "run", interrupted)
    with pytest.raises(UserError, match="stopped by SIGTERM at update 2; run the same command again"):
        reproduce_paper("atr", _settings(seeds=[1]), out, str(corpus), systems=["rnnsearch-gru"], log=Log())
    run_dir = out / "atr" / "runs" / "rnnsearch-gru"
    assert not (run_dir / system.TRAINED).exists() and not (out / "atr" / "rnnsearch-gru.json").exists()
    monkeypatch.setattr(Trainer, "run", real_run)
    log = Log()
    reproduce_paper("atr", _settings(seeds=[1]), out, str(corpus), systems=["rnnsearch-gru"], log=log)
    assert any("resuming the stopped training run" in m for m in log)
    assert json.loads((out / "atr" / "rnnsearch-gru.json").read_text())["steps"] == 3
