"""`rnmt reproduce` without training: the specs, judging claims seed by seed, the sanity
checks, the bf16 protocol."""

from __future__ import annotations

import pytest
import torch

from rnmt.cli import main
from rnmt.errors import UserError
from rnmt.reproduce import PAPERS, load_paper
from rnmt.reproduce.report import judge_claim
from rnmt.reproduce.spec import Claim, repository_root


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


def test_every_system_trains_with_its_recipes_optimiser():
    """The family recipes' rate (2e-3 with warm-up) is Adam's; a paper config that names
    another optimiser (the Cseq2seq systems' Adadelta) must not slip through a protocol whose
    recipe forgets to name Adam: at that rate Adadelta left the bf16 protocol's RNNSearch
    near the uniform distribution after 2,000 updates (0.01 BLEU)."""
    from pathlib import Path

    from rnmt.reproduce.corpus import Corpus
    from rnmt.reproduce.system import Settings, miniature_config, plan_runs

    corpus = Corpus("c", "de", "en", Path("train"), Path("dev"), Path("test"), 1, 1, 1)
    for paper in (*PAPERS, "bf16"):
        spec = load_paper(paper)
        for run in plan_runs(spec, spec.systems + spec.optional_systems, [1]):
            cfg = miniature_config(run, spec, corpus, Path("spm.model"), Path("cache"), Settings())
            assert cfg.train.optimizer == "adam", (paper, run.name)
            assert cfg.train.lr == spec.recipe["train.lr"], (paper, run.name)


def test_at_convergence_every_system_gets_every_seed():
    """A converged claim rests on both of its systems: the Cseq2seq table's RNNSearch
    baseline, one seed after equal updates, gets both seeds under --converge."""
    from rnmt.reproduce.system import plan_runs

    spec = load_paper("cseq2seq")
    names = lambda s: [r.name for r in plan_runs(s, [s.system("rnnsearch"), s.system("cseq2seq1-ls")], [1, 2])]  # noqa: E731
    assert names(spec) == ["rnnsearch", "cseq2seq1-ls.seed1", "cseq2seq1-ls.seed2"]
    assert names(spec.for_protocol(True)) == ["rnnsearch.seed1", "rnnsearch.seed2", "cseq2seq1-ls.seed1",
                                              "cseq2seq1-ls.seed2"]
    assert spec.for_protocol(False) is spec


def test_the_converged_tables_train_the_systems_their_claims_need_by_default():
    names = lambda systems: [s.name for s in systems]  # noqa: E731
    dtmt = load_paper("dtmt")
    assert names(dtmt.select(None)) == ["shallow-rnmt", "shallow-rnmt-lgru", "dtmt1-gru", "dtmt1", "dtmt4"]
    assert names(dtmt.for_protocol(True).select(None)) == ["shallow-rnmt", "dtmt4", "dtmt1", "shallow-rnmt-lgru"]
    assert names(dtmt.for_protocol(True).select(["dtmt4-carry2"])) == ["shallow-rnmt", "dtmt4-carry2"]
    bf16 = dtmt.for_protocol(True).select(["shallow-rnmt-bf16"])  # the precision check: ShallowRNMT's config
    assert names(bf16) == ["shallow-rnmt", "shallow-rnmt-bf16"] and bf16[1].config == bf16[0].config
    assert bf16[1].recipe == {"train.amp": "bf16"}
    cseq = load_paper("cseq2seq").for_protocol(True)
    assert names(cseq.select(None)) == ["cseq2seq1-ls", "cseq2seq2", "rnnsearch"]  # the baseline is in it
    assert names(load_paper("atr").for_protocol(True).select(None)) == ["rnnsearch-gru", "rnnsearch-atr"]
    survey = load_paper("survey")  # no converged table planned: its main table
    assert not survey.converged and names(survey.for_protocol(True).select(None)) == names(survey.systems)


def test_a_converged_run_keeps_its_checkpoint_at_update_1000():
    """docs/results.md measures gradient flow at update 1,000 of the converged runs, long
    after keep_last would have rotated that checkpoint out."""
    from pathlib import Path

    from rnmt.reproduce.corpus import Corpus
    from rnmt.reproduce.system import Settings, miniature_config, plan_runs

    corpus = Corpus("c", "de", "en", Path("train"), Path("dev"), Path("test"), 1, 1, 1)
    spec = load_paper("dtmt")
    run = plan_runs(spec, [spec.system("dtmt4")], [1])[0]
    config = lambda **kw: miniature_config(run, spec, corpus, Path("spm.model"), Path("cache"), Settings(**kw))  # noqa: E731
    assert config(converge=True).train.keep_steps == [1000]
    assert config().train.keep_steps == []
