"""The students' and baselines' runs a distillation plans (rnmt.distill.students): their data,
vocabulary, seed, fine-tuning and order."""

from __future__ import annotations

from pathlib import Path

import pytest

from rnmt.distill.options import DistillOptions
from rnmt.distill.setup import Student
from rnmt.distill.students import final_student, planned_runs
from rnmt.errors import UserError

OUT = Path("runs/d")
STUDENT = Student(name="gru", path=Path("gru.yaml"),
                  tree={"data": {"train": "corpus/train", "dev": "corpus/dev", "test": "corpus/test",
                                 "vocab": {"size": 500}},
                        "model": {"hidden_size": 64}, "train": {"max_steps": 100}})


def test_student_and_baseline_per_seed_on_their_corpora():
    runs = planned_runs(STUDENT, OUT, DistillOptions(seeds=[1, 2]), joint_vocab=True)
    assert [r["key"] for r in runs] == ["gru.student.seed1", "gru.baseline.seed1", "gru.student.seed2",
                                        "gru.baseline.seed2"]
    student, baseline = runs[0], runs[1]
    assert student["tree"]["data"]["train"] == str(OUT / "data" / "distilled")
    assert baseline["tree"]["data"]["train"] == str(OUT / "data" / "original")
    for run in runs:
        data = run["tree"]["data"]
        assert data["vocab"]["model"] == str(OUT / "data" / "spm.model") and data["vocab"]["size"] == 500
        assert data["dev"] == str(Path("corpus/dev").resolve())  # the user's relative path, made absolute
        assert run["tree"]["train"]["seed"] == run["seed"] and run["init_from"] is None
    assert STUDENT.tree["data"]["train"] == "corpus/train"  # the config read is not changed
    assert final_student(runs, 2) is runs[2]


def test_mixing_and_fine_tuning():
    options = DistillOptions(seeds=[3], mix_original=0.5, finetune_steps=40, baseline=False)
    runs = planned_runs(STUDENT, OUT, options, joint_vocab=False)
    assert [r["role"] for r in runs] == ["student", "finetuned"]
    assert runs[0]["tree"]["data"]["train"] == [{"prefix": str(OUT / "data" / "distilled"), "weight": 1},
                                                {"prefix": str(OUT / "data" / "original"), "weight": 0.5}]
    tuned = runs[1]
    assert tuned["init_from"] == runs[0]["dir"] and tuned["overrides"] == ["train.max_steps=40"]
    assert tuned["tree"]["data"]["train"] == str(OUT / "data" / "original")
    assert tuned["tree"]["data"]["vocab"]["src_model"] == str(OUT / "data" / "spm.src.model")
    assert final_student(runs, 3) is tuned  # the report measures the fine-tuned student


def test_the_fine_tuning_may_have_its_own_learning_rate():
    options = DistillOptions(seeds=[1], finetune_steps=40, finetune_lr=2e-4, baseline=False)
    runs = planned_runs(STUDENT, OUT, options, joint_vocab=True)
    assert runs[1]["overrides"] == ["train.max_steps=40", "train.lr=0.0002"]
    assert runs[0]["overrides"] == []  # the student trains at its config's rate
    assert options.identity()["finetune_lr"] == 2e-4
    assert "finetune_lr" not in DistillOptions(finetune_steps=40).identity()  # as recorded before the option


@pytest.mark.parametrize("options, needle", [
    (dict(finetune_lr=1e-4), "needs --finetune-steps"),
    (dict(finetune_steps=10, finetune_lr=0.0), "positive learning rate"),
    (dict(finetune_steps=10, finetune_lr=float("nan")), "positive learning rate"),
    (dict(finetune_steps=10, finetune_lr=float("inf")), "positive learning rate"),
    (dict(finetune_steps=10, finetune_lr="0.1"), "positive learning rate"),
])
def test_a_bad_fine_tuning_rate_is_refused(options, needle):
    with pytest.raises(UserError, match=needle):
        DistillOptions(**options).check()


@pytest.mark.parametrize("options, message", [
    (dict(chunk_lines=0), "--chunk-lines must be an integer of at least 1, got 0"),
    (dict(speed_rounds=True), "--speed-rounds must be an integer of at least 1, got True"),
    (dict(finetune_steps=-1), "--finetune-steps must be an integer of at least 0, got -1"),
])
def test_every_refusal_names_the_option_as_the_command_spells_it(options, message):
    with pytest.raises(UserError) as caught:
        DistillOptions(**options).check()
    assert str(caught.value) == message
