"""The execution plan in real runs: written to the log, the training state and plan.json,
reused by --resume on a changed machine and by decoding, and resolved only after the inputs
are checked."""

from __future__ import annotations

import json
import shutil

import rnmt
from rnmt import hardware
from rnmt.cli import main
from rnmt.plan import PLAN_FILE, Choice, ExecutionPlan, read_plan
from rnmt.training.checkpoint import load_train_state
from tests.support import tiny_config_tree

ZEN4 = hardware.CpuFeatures("AuthenticAMD", frozenset({"avx2", "avx512f", "avx512_bf16", "avx512_vnni"}))
AVX2 = hardware.CpuFeatures("AuthenticAMD", frozenset({"avx2", "fma"}))


def test_the_plan_is_in_the_log_the_state_and_plan_json(tiny_run):
    first = json.loads((tiny_run / "log.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["step"] == 0 and set(first["plan"]["choices"]) >= {"precision", "fp32_products", "kernels"}
    state = load_train_state(tiny_run / "train_state.pt")
    assert ExecutionPlan.from_dict(state["plan"]) == ExecutionPlan.from_dict(first["plan"]) == read_plan(
        tiny_run / PLAN_FILE)
    assert rnmt.load(tiny_run, device="cpu").plan is not None  # the log reader skips the record: loads fine


def test_resume_keeps_the_plan_on_a_changed_machine_unless_a_key_is_set(tmp_path, tiny_corpus, monkeypatch):
    tree = tiny_config_tree(tiny_corpus["train"], None)
    tree["model"]["hidden_size"] = 128  # wide enough for bf16 on a CPU with fast bf16 products
    monkeypatch.setattr(hardware, "this_cpu", lambda: ZEN4)
    lines = []
    rnmt.train(tree, ["train.max_steps=2"], out=tmp_path / "run", log=lines.append)
    assert any(line.startswith("execution plan (cpu; CPU AuthenticAMD") for line in lines)
    started = read_plan(tmp_path / "run" / PLAN_FILE)
    assert (started.precision.value, started.fp32_products.value) == ("bf16", "onednn")
    assert not any("warning" in line for line in lines)  # bf16 where its products are fast
    monkeypatch.setattr(hardware, "this_cpu", lambda: AVX2)  # the same run, a machine without AVX-512
    lines.clear()
    rnmt.train(tree, ["train.max_steps=3"], out=tmp_path / "run", resume=True, log=lines.append)
    warned = [line for line in lines if line.startswith("warning: training in bf16 (recorded when the run started")]
    assert len(warned) == 1 and "no avx512_bf16 or amx_bf16" in warned[0] and "train.amp=none" in warned[0]
    resumed = ExecutionPlan.from_dict(load_train_state(tmp_path / "run" / "train_state.pt")["plan"])
    assert resumed.choices().keys() == started.choices().keys()
    assert all(c.value == started.choices()[n].value for n, c in resumed.choices().items())
    assert resumed.precision.reason.startswith("recorded when the run started")
    rnmt.train(tree, ["train.max_steps=4", "runtime.fp32_products=pytorch"], out=tmp_path / "run", resume=True,
               log=lambda *_: None)
    changed = read_plan(tmp_path / "run" / PLAN_FILE)
    assert changed.fp32_products.value == "pytorch" and changed.fp32_products.reason.startswith("changed on resume")
    assert changed.precision.value == "bf16"
    plans = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines() if '"plan"' in x]
    assert [p["step"] for p in plans] == [0, 2, 3]  # one record per sitting, at the step it started from


def test_translate_decodes_under_the_runs_recorded_plan(tiny_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    raw = json.loads((run / PLAN_FILE).read_text())
    other = "pytorch" if raw["choices"]["fp32_products"]["value"] == "onednn" else "onednn"
    raw["choices"]["fp32_products"] = {"value": other, "reason": "edited for this test"}
    (run / PLAN_FILE).write_text(json.dumps(raw))
    model = rnmt.load(run, device="cpu")
    assert model.plan.fp32_products.value == other and "edited for this test" in model.plan.fp32_products.reason
    assert model.plan.compile_step.value is False  # not training
    mine = rnmt.load(run, device="cpu", runtime={"fp32_products": "pytorch"})
    assert mine.plan.fp32_products.value == "pytorch"
    src = tmp_path / "in.es"
    src.write_text("hola mundo\n", encoding="utf-8")
    assert main(["translate", "--model", str(run), "--input", str(src), "--output", str(tmp_path / "out.en"),
                 "--device", "cpu", "--set", "runtime.fp32_products=pytorch"]) == 0
    assert main(["translate", "--model", str(run), "--input", str(src), "--device", "cpu",
                 "--set", "train.amp=none"]) == 2
    assert "decoding takes runtime.* keys only" in capsys.readouterr().err


def test_input_errors_come_before_any_plan_line(tmp_path, tiny_corpus, capsys):
    train = tmp_path / "bad"
    shutil.copy(tiny_corpus["train"] + ".es", str(train) + ".es")
    lines = open(tiny_corpus["train"] + ".en", encoding="utf-8").read().splitlines()
    (tmp_path / "bad.en").write_text("\n".join(lines[:-3]) + "\n", encoding="utf-8")
    config = tmp_path / "c.yaml"
    tree = tiny_config_tree(str(train), None)
    config.write_text(json.dumps(tree), encoding="utf-8")  # JSON is YAML
    code = main(["train", str(config), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "execution plan" not in err and not (tmp_path / "out" / PLAN_FILE).exists()
    assert err.strip().splitlines()[-1].startswith("error: ") and "lines" in err


def test_an_invalid_runtime_key_is_a_one_line_error(tmp_path, tiny_corpus, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(tiny_config_tree(tiny_corpus["train"], None)), encoding="utf-8")
    for setting, says in [("runtime.fp32_products=mkl", "'runtime.fp32_products' must be one of auto, onednn, "
                                                         "pytorch, got 'mkl'"),
                          ("runtime.turbo=1", "unknown config key 'runtime.turbo'")]:
        code = main(["train", str(config), "--out", str(tmp_path / "out"), "--set", setting])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and says in err[0]


def test_the_applied_plan_drives_the_switches(tiny_run):
    from rnmt import int8, memory, products

    plan = read_plan(tiny_run / PLAN_FILE)
    changed = plan.replace(fp32_products=Choice("pytorch", "test"), int8_kernels=Choice("onednn", "test"),
                           trim_every=Choice(4, "test"))
    try:
        changed.apply()
        assert not products.active() and int8._chosen == "onednn" and memory.trim_every() == 4
    finally:
        plan.apply()
    assert memory.trim_every() == plan.trim_every.value
