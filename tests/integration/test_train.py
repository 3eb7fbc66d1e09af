"""Training end to end on a tiny corpus: logs, checkpoints, exact resume, translation."""

import json

import pytest
import torch

from rnmt.config import config_from_dict
from rnmt.errors import UserError
from rnmt.models import load_model
from rnmt.search.translator import Translator
from rnmt.training.trainer import Trainer
from tests.support import tiny_config_tree


def train_losses(out):
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in records if "loss" in r}


def test_log_has_the_contract_fields(tiny_run):
    records = [json.loads(line) for line in (tiny_run / "log.jsonl").read_text().splitlines()]
    train = [r for r in records if "loss" in r]
    assert [r["step"] for r in train] == [1, 2, 3, 4, 5, 6]
    assert all({"step", "loss", "lr", "tokens_per_s"} <= set(r) and r["tokens_per_s"] > 0 for r in train)
    valid = [r for r in records if "dev_bleu" in r]
    assert [r["step"] for r in valid] == [3, 6]
    assert all("dev_loss" in r and "dev_chrf" in r for r in valid)


def test_checkpoints_are_written_and_old_ones_pruned(tiny_run):
    names = {p.name for p in tiny_run.iterdir()}
    assert {"best.safetensors", "ckpt-6.safetensors", "ckpt-3.safetensors", "train_state.pt",
            "config.yaml", "spm.model"} <= names
    assert not any(n.endswith(".tmp") for n in names)


def test_only_the_last_checkpoints_are_kept_and_those_at_keep_steps(tmp_path, tiny_corpus):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(max_steps=8, save_every=2, validate_every=0, keep_last=2, keep_steps=[4])
    out = tmp_path / "run"
    Trainer(config_from_dict(tree), out, log=lambda *_: None).run()
    ckpts = lambda: sorted(p.name for p in out.glob("ckpt-*.safetensors"))  # noqa: E731
    assert ckpts() == ["ckpt-4.safetensors", "ckpt-6.safetensors", "ckpt-8.safetensors"]  # ckpt-2 rotated out
    # a resumed run may keep other updates; a kept checkpoint stays when it leaves the rotation
    resumed = Trainer(config_from_dict(tree, ["train.max_steps=14", "train.keep_steps=[10]"]), out, resume=True,
                      log=lambda *_: None)
    resumed.run()
    assert ckpts() == ["ckpt-10.safetensors", "ckpt-12.safetensors", "ckpt-14.safetensors", "ckpt-4.safetensors"]


@pytest.mark.on_device
def test_stop_and_resume_equals_an_uninterrupted_run(tmp_path, tiny_corpus, device):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"]["max_steps"] = 8
    tree["train"]["device"] = str(device)
    # CUDA's backward sums (embedding, index_add) are not run-to-run deterministic
    tol = {"rel": 1e-6, "atol": 1e-7} if device.type == "cpu" else {"rel": 1e-5, "atol": 1e-5}
    full = tmp_path / "full"
    Trainer(config_from_dict(tree), full, log=lambda *_: None).run()

    part = tmp_path / "part"
    Trainer(config_from_dict(tree, ["train.max_steps=4"]), part, log=lambda *_: None).run()
    resumed = Trainer(config_from_dict(tree), part, resume=True, log=lambda *_: None)
    assert resumed.step == 4
    resumed.run()
    a, b = train_losses(full), train_losses(part)
    assert sorted(a) == sorted(b) == list(range(1, 9))
    for step in range(1, 9):
        assert a[step] == pytest.approx(b[step], rel=tol["rel"]), step
    wa = load_model(full / "ckpt-8.safetensors").model.state_dict()
    wb = load_model(part / "ckpt-8.safetensors").model.state_dict()
    assert all(torch.allclose(wa[k], wb[k], atol=tol["atol"]) for k in wa)


@pytest.mark.on_device
def test_bf16_training_on_a_gpu_loads_and_translates_on_the_cpu(tmp_path, tiny_corpus, device):
    if device.type == "cpu":
        pytest.skip("trains on another device: run with --device cuda")
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(device=str(device), amp="bf16", max_steps=6)
    Trainer(config_from_dict(tree), tmp_path, log=lambda *_: None).run()
    losses = train_losses(tmp_path)
    assert sorted(losses) == list(range(1, 7)) and all(loss == loss and loss < 20 for loss in losses.values())
    loaded = load_model(tmp_path / "ckpt-6.safetensors")
    assert all(p.device.type == "cpu" and p.dtype == torch.float32 for p in loaded.model.parameters())
    translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search)
    assert len(translator.translate_best(["Y dijo Dios:", "sea la luz"])) == 2


def test_existing_run_is_not_overwritten_without_resume(tiny_run, tiny_corpus):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    with pytest.raises(UserError, match="already holds a training run"):
        Trainer(config_from_dict(tree), tiny_run, log=lambda *_: None)


def test_checkpoints_without_their_training_state_are_not_overwritten(tiny_run, tiny_corpus, tmp_path):
    # A run whose train_state.pt went (deleted, or copied without it) still has weights a
    # new run in the same directory would replace.
    import shutil

    out = tmp_path / "kept"
    shutil.copytree(tiny_run, out)
    (out / "train_state.pt").unlink()
    before = {p.name: p.read_bytes() for p in out.glob("*.safetensors")}
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    with pytest.raises(UserError, match=r"already holds checkpoints \(.*safetensors.*\) but no train_state.pt"):
        Trainer(config_from_dict(tree), out, log=lambda *_: None)
    assert {p.name: p.read_bytes() for p in out.glob("*.safetensors")} == before


def test_a_config_inside_the_output_directory_is_not_replaced(tmp_path, tiny_corpus):
    # `rnmt train exp/config.yaml --out exp` replaced the user's file (comments and all) with
    # the run's resolved config
    import yaml

    import rnmt

    exp = tmp_path / "exp"
    exp.mkdir()
    text = "# my notes\n" + yaml.safe_dump(tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"]))
    for name in ("config.yaml", "config.source.yaml"):
        (exp / name).write_text(text, encoding="utf-8")
        with pytest.raises(UserError, match=rf"{name} is the {name} a new run writes into .*exp: keep the config"):
            rnmt.train(exp / name, out=exp, log=lambda *_: None)
        assert (exp / name).read_text(encoding="utf-8") == text
        (exp / name).unlink()
    assert sorted(p.name for p in exp.iterdir()) == []  # nothing written


def test_translator_keeps_empty_lines_aligned(tiny_run):
    loaded = load_model(tiny_run)
    translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search)
    lines = ["Y dijo Dios:", "", "   ", "sea la luz"]
    out = translator.translate_best(lines)
    assert len(out) == 4 and out[1] == "" and out[2] == ""
    nbest = translator.translate(lines, beam=3, nbest=3)
    assert len(nbest[0]) == 3 and len(nbest[1]) == 1


def test_translations_do_not_depend_on_batching(tiny_run):
    loaded = load_model(tiny_run)
    translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search)
    lines = ["Y dijo Dios:", "sea la luz", "En el principio crió Dios los cielos y la tierra."]
    together = translator.translate_best(lines)
    alone = [translator.translate_best([line])[0] for line in lines]
    one_by_one = translator.translate_best(lines, batch_tokens=1)
    assert together == alone == one_by_one


def _scripted_validation(trainer, bleus):
    """Make ``trainer.validate`` return the dev BLEU values ``bleus`` in turn."""
    values = iter(bleus)

    def validate():
        return {"dev_loss": 1.0, "dev_ppl": 2.7, "dev_bleu": next(values), "dev_chrf": 0.0}

    trainer.validate = validate


def test_plateau_schedule_decays_on_plateaus_and_early_stopping_ends_the_run(tmp_path, tiny_corpus):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(max_steps=40, validate_every=2, schedule="plateau", warmup_steps=0, lr=0.004,
                         plateau_patience=2, patience=4)
    out = tmp_path / "plateau"
    trainer = Trainer(config_from_dict(tree), out, log=lambda *_: None)
    # new bests at steps 2, 4 and 8 (the single bad validation at 6 decays nothing); then four
    # bad ones: 10 and 12 decay the rate once, 14 and 16 a second time, and the 4th ends the run
    _scripted_validation(trainer, [1.0, 2.0, 1.5, 2.5, 2.0, 2.4, 2.1, 2.2, 9.9])
    summary = trainer.run()
    assert summary["stop_reason"] == "early_stopping" and summary["steps"] == 16
    assert summary["best_step"] == 8 and trainer.progress.plateau_decays == 2
    assert summary["wall_seconds"] >= summary["train_seconds"]
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "dev_bleu" in r] == [2, 4, 6, 8, 10, 12, 14, 16]  # none twice
    rates = {r["step"]: r["lr"] for r in records if "lr" in r}  # the rate of update k, logged at step k
    assert rates[12] == pytest.approx(0.004) and rates[13] == pytest.approx(0.002)
    assert rates[16] == pytest.approx(0.002)


def test_a_resumed_plateau_run_keeps_its_decays(tmp_path, tiny_corpus):
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["train"].update(max_steps=8, validate_every=2, schedule="plateau", warmup_steps=0, lr=0.004,
                         plateau_patience=1, patience=None)
    out = tmp_path / "run"
    first = Trainer(config_from_dict(tree), out, log=lambda *_: None)
    _scripted_validation(first, [3.0, 2.0, 1.0, 0.5])
    first.run()
    assert first.progress.plateau_decays == 3
    resumed = Trainer(config_from_dict(tree, ["train.max_steps=10"]), out, resume=True, log=lambda *_: None)
    assert resumed.progress.plateau_decays == 3 and resumed.progress.best_step == 2
    _scripted_validation(resumed, [0.1])
    resumed.run()
    rates = {r["step"]: r["lr"] for r in (json.loads(x) for x in (out / "log.jsonl").read_text().splitlines())
             if "lr" in r}
    assert rates[9] == pytest.approx(0.004 / 8)
