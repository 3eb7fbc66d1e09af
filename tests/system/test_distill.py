"""`rnmt distill` end to end on a tiny teacher and student: a kill (SIGKILL) in the middle of
the teacher's decoding and a resume that keeps every finished chunk, the report's keys,
and the bad inputs (one line, exit 2, nothing written)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support import REPO, assert_one_line, assert_one_line_error, run_rnmt, tiny_reproduction_corpus

CHUNK = 5  # lines per decoding chunk: 24 chunks of the 120 training pairs
# Every run of these tests decodes, filters and trains with the same settings.
COMMON = ["--chunk-lines", str(CHUNK), "--beam", "2", "--drop-worst", "10", "--speed-rounds", "1",
          "--bootstrap", "50", "--set", "train.max_steps=3", "--set", "train.validate_every=3"]


def _teacher_tree(corpus: Path) -> dict:
    return {"data": {"train": str(corpus / "train"), "dev": str(corpus / "dev"), "test": str(corpus / "test"),
                     "src": "es", "tgt": "en", "batch_tokens": 300, "max_len": 40, "vocab": {"size": 100}},
            "model": {"emb_size": 32, "hidden_size": 48, "dropout": 0.0},
            # a high constant rate: 80 updates give varied output (some of it looping) on 120 pairs
            "train": {"max_steps": 80, "log_every": 80, "validate_every": 80, "lr": 0.03, "schedule": "constant",
                      "warmup_steps": 0, "label_smoothing": 0.0, "threads": 1, "progress": False, "patience": None},
            "search": {"beam": 2, "max_len_ratio": 1.2, "max_len_offset": 3}}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(teacher run, student config file, corpus directory)."""
    import rnmt

    root = tmp_path_factory.mktemp("distill")
    corpus = tiny_reproduction_corpus(root)
    teacher = root / "teacher"
    rnmt.train(_teacher_tree(corpus), out=teacher, log=lambda *_: None)
    student = root / "student.yaml"
    tree = _teacher_tree(corpus)
    tree["data"].pop("vocab")  # the student gets the teacher's
    tree["model"] = {"arch": "atr-rnnsearch", "cell": "atr", "emb_size": 8, "hidden_size": 12, "dropout": 0.0}
    student.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return teacher, student, corpus


def _distill(teacher, student, out, *extra):
    return [sys.executable, "-m", "rnmt", "distill", "--teacher", str(teacher), "--student", str(student),
            "--out", str(out), *COMMON, *extra]


def _chunks(out: Path):
    return sorted((out / "decode").glob("chunk-*.jsonl"))  # none before the directory exists


def _files(directory: Path) -> dict:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def _api(teacher, student, out, log=lambda *_: None, **options):
    """`rnmt.api.distill` in this process, with the settings of `COMMON`."""
    from rnmt.api import distill

    settings = dict(chunk_lines=CHUNK, beam=2, drop_worst=10.0, speed_rounds=1, bootstrap=50,
                    overrides=["train.max_steps=3", "train.validate_every=3"])
    return distill(teacher, student, out, log=log, **{**settings, **options})


@pytest.fixture(scope="module")
def whole(setup, tmp_path_factory) -> Path:
    """An uninterrupted distillation (no baseline)."""
    out = tmp_path_factory.mktemp("whole") / "d"
    _api(setup[0], setup[1], out, baseline=False)
    return out


def test_killed_decoding_resumes_without_redoing_a_chunk(setup, whole, tmp_path):
    teacher, student, _ = setup
    total = len(_chunks(whole))
    assert total == 120 // CHUNK

    # the same distillation as a command, killed once a few chunks are written
    out = tmp_path / "killed"
    proc = subprocess.Popen(_distill(teacher, student, out, "--no-baseline"), stderr=subprocess.DEVNULL, cwd=REPO)
    deadline = time.monotonic() + 300
    while len(_chunks(out)) < 3:
        assert proc.poll() is None, "the distillation ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in _chunks(out)}
    assert 3 <= len(before) < total, "the kill did not land in the middle of the decoding"
    assert not (out / "stages" / "decode.done").exists()
    from rnmt.distill.status import distill_status

    status = distill_status(out)  # where it stands, read from the directory
    assert f"decode: {len(before)} of {total} chunks of the 120 training sources" in status
    assert any(line.startswith("| student.student.seed1 | not started |") for line in status)

    log: list = []
    _api(teacher, student, out, log=log.append, baseline=False)
    assert f"decode: {len(before)} of {total} chunks already done, kept; decoding {total - len(before)}" in log
    decoded_again = [line for line in log if line.startswith("decode: chunk ")]
    assert len(decoded_again) == total - len(before)  # each missing chunk once, none of the kept ones
    for name, (inode, mtime, content) in before.items():
        path = out / "decode" / name
        assert (path.stat().st_ino, path.stat().st_mtime_ns, path.read_bytes()) == (inode, mtime, content), name
    assert not list((out / "decode").glob(".*"))
    for name in [p.name for p in _chunks(whole)]:
        assert (out / "decode" / name).read_bytes() == (whole / "decode" / name).read_bytes()
    for lang in ("es", "en"):
        distilled = (out / "data" / f"distilled.{lang}").read_text(encoding="utf-8")
        assert distilled == (whole / "data" / f"distilled.{lang}").read_text(encoding="utf-8")
    lines = sum(1 for p in _chunks(out) for _ in p.open(encoding="utf-8"))
    assert lines == 120  # no line twice


def test_status_of_a_finished_distillation(whole):
    done = subprocess.run([sys.executable, "-m", "rnmt", "distill", "--out", str(whole), "--status"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "decode: done (120 training sources" in out and "filter: " in out and " pairs kept" in out
    assert "| student.student.seed1 | finished (" in out and "baseline" not in out.split("report:")[0]
    assert f"report: {whole / 'report.md'}" in out and "the teacher's sentences/s at beam 5 (target >= 3x: " in out


def test_status_and_missing_arguments_are_one_line_errors(tmp_path):
    for argv in (["--out", str(tmp_path), "--status"], ["--out", str(tmp_path / "d"), "--student", "s.yaml"]):
        done = subprocess.run([sys.executable, "-m", "rnmt", "distill", *argv], capture_output=True, text=True,
                              cwd=REPO, timeout=120)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "holds no distillation" in subprocess.run(
        [sys.executable, "-m", "rnmt", "distill", "--out", str(tmp_path), "--status"], capture_output=True,
        text=True, cwd=REPO, timeout=120).stderr


def test_report_has_teacher_student_baseline_and_one_p_per_seed(setup, tmp_path):
    teacher, student, _ = setup
    out = tmp_path / "d"
    mixed = dict(seeds=[1, 2], chunk_lines=30, mix_original=0.5, finetune_steps=2)
    report = _api(teacher, student, out, **mixed)
    saved = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert saved == json.loads(json.dumps(report))
    for key in ("teacher", "student", "baseline"):
        for figure in ("bleu", "chrf", "sentences_per_s", "greedy_sentences_per_s", "parameters", "file_bytes"):
            assert saved[key][figure] >= 0, (key, figure)
    assert len(saved["p_student_vs_baseline"]) == 2
    assert saved["student"]["parameters"] < saved["teacher"]["parameters"]
    # what limits a student: cross-entropies of the teacher's outputs on the distilled pairs, output-layer shares
    for key in ("teacher", "student", "baseline"):
        assert saved[key]["distilled_nll"] > 0 and 0 < saved[key]["output_layer_share"] < 1, key
    # each run's precision as its plan recorded it (tiny models train in fp32)
    assert saved["teacher"]["training_precision"] == "fp32"
    assert {e["training_precision"] for e in saved["students"][student.stem]["baseline"]["seeds"].values()} == {"fp32"}
    counts = saved["filter"]
    assert counts["pairs"] == 120 and counts["kept"] + sum(counts["dropped"].values()) == 120
    kept = (out / "data" / "distilled.en").read_text(encoding="utf-8").splitlines()
    assert len(kept) == counts["kept"]
    if importlib.util.find_spec("onnxruntime") is None:
        assert any("export" in note for note in saved["notes"])
    else:  # each final student exported, nothing failed
        assert not [note for note in saved["notes"] if "failed" in note], saved["notes"]
        for seed in (1, 2):
            assert (out / "export" / f"student.finetuned.seed{seed}" / "manifest.json").is_file()
    assert "| teacher |" in (out / "report.md").read_text(encoding="utf-8")
    for seed in (1, 2):
        for role in ("student", "finetuned", "baseline"):
            assert (out / "runs" / "student" / f"{role}.seed{seed}" / "best.safetensors").is_file()
        # the student measured is the fine-tuned one, which started from the student trained on both corpora
        assert saved["student"]["seeds"][str(seed)]["run"].endswith(f"finetuned.seed{seed}")
        assert "weight: 0.5" in (out / "runs" / "student" / f"student.seed{seed}" / "config.yaml").read_text()
    # a finished distillation started again changes nothing
    files = _files(out)
    assert _api(teacher, student, out, **mixed) == report
    assert _files(out) == files

    # the same directory given another distillation: refused, nothing overwritten
    other = run_rnmt("distill", "--teacher", teacher, "--student", student, "--out", out, "--seeds", "1", "2",
                     COMMON[0], "30", COMMON[2], "3", *COMMON[4:], "--mix-original", "0.5", "--finetune-steps", "2")
    assert_one_line_error(other, "holds another distillation", "beam")
    assert _files(out) == files


def _decoded(out: Path) -> list:
    return [json.loads(line) for p in _chunks(out) for line in p.open(encoding="utf-8")]


def test_an_ensemble_keeps_the_nbest_hypothesis_nearest_the_reference(setup, whole, tmp_path):
    from sacrebleu.metrics import CHRF

    teacher, student, corpus = setup
    log: list = []
    # an ensemble of one model twice searches as the model does: its 1-best is the plain run's
    _api([teacher, teacher], student, tmp_path / "nbest", log=log.append, baseline=False, nbest=2)
    assert any("(2 model(s), beam 2, best of 2 by chrF)" in line for line in log)
    refs = (corpus / "train.en").read_text(encoding="utf-8").splitlines()
    chrf = CHRF()
    chosen, first = _decoded(tmp_path / "nbest"), _decoded(whole)
    scores = [(chrf.sentence_score(c["hyp"], [r]).score, chrf.sentence_score(f["hyp"], [r]).score)
              for c, f, r in zip(chosen, first, refs)]
    assert len(scores) == 120 and all(c >= f for c, f in scores)
    assert any(c > f for c, f in scores)  # the second hypothesis was nearer the reference somewhere


def _config(setup, tmp_path, change) -> Path:
    _, student, _ = setup
    tree = yaml.safe_load(student.read_text(encoding="utf-8"))
    change(tree)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return path


def _swap_pair(tree):
    tree["data"]["src"], tree["data"]["tgt"] = "en", "es"


def _other_vocab(tmp_path):
    def change(tree):
        from rnmt.data.vocab import train_vocabs

        corpus = Path(tree["data"]["train"])
        train_vocabs(f"{corpus}.es", f"{corpus}.en", tmp_path / "v", joint=True, model_type="bpe", src_size=90,
                     tgt_size=90, character_coverage=1.0, seed=1)
        tree["data"]["vocab"] = {"model": str(tmp_path / "v" / "spm.model")}
    return change


def _cannot_train(tree):
    tree["model"]["hidden_size"] = 0


@pytest.mark.parametrize("case, needles", [
    ("pair", ("translates es->en", "bad.yaml has data en->es")),
    ("vocab", ("different vocabularies", "bad.yaml")),
    ("model", ("student config", "bad.yaml", "cannot train")),
])
def test_bad_student_configs_are_one_line_and_write_nothing(setup, tmp_path, capsys, case, needles):
    from rnmt.cli import main

    teacher = setup[0]
    (tmp_path / "v").mkdir()
    change = {"pair": _swap_pair, "vocab": _other_vocab(tmp_path), "model": _cannot_train}[case]
    config = _config(setup, tmp_path, change)
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["distill", "--teacher", str(teacher), "--student", str(config), "--out", str(out)]) == 2
    assert_one_line(capsys.readouterr().err, *needles)
    assert not out.exists()


def test_side_by_side_runs_train_the_same_models_as_one_after_the_other(setup, tmp_path):
    """`--jobs 2`: each student (with its fine-tuning after it) and each baseline in its own
    process, two at a time; every run's weights are those of the runs trained one after the
    other, and each run's output is in its own log."""
    import torch
    from safetensors.torch import load_file

    teacher, student, _ = setup
    options = dict(seeds=[1, 2], chunk_lines=30, finetune_steps=2)
    one = _api(teacher, student, tmp_path / "one", **options)
    log: list = []
    two = _api(teacher, student, tmp_path / "two", log=log.append, jobs=2, **options)
    for seed in (1, 2):
        for role in ("student", "finetuned", "baseline"):
            run = Path("runs") / "student" / f"{role}.seed{seed}" / "best.safetensors"
            a, b = load_file(tmp_path / "one" / run), load_file(tmp_path / "two" / run)
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), run
    for key in ("student", "baseline"):
        assert two[key]["bleu"] == one[key]["bleu"]
    assert two["p_student_vs_baseline"] == one["p_student_vs_baseline"]
    started = [line for line in log if "started in its own process" in line]
    assert len(started) == 4  # two students (each with its fine-tuning) and two baselines
    for seed in (1, 2):
        text = (tmp_path / "two" / "runs" / "student" / f"student.student.seed{seed}.log").read_text(encoding="utf-8")
        assert f"train: student.finetuned.seed{seed}" in text  # the fine-tuning followed in the same process


def test_a_signal_stops_side_by_side_runs_and_says_how_to_resume(setup, tmp_path, monkeypatch):
    """SIGTERM to a distillation training runs side by side: every worker gets it, no further
    run starts, and the distillation stops as a run stopped by the signal does (the command
    then exits 143; stand-in workers that sleep, in place of training)."""
    import os
    import threading

    from rnmt.distill import students
    from rnmt.distill.students import TrainingStopped

    teacher, student, _ = setup
    monkeypatch.setattr(students, "_worker_command", lambda chain, out: [
        sys.executable, "-c", "import time; time.sleep(60)"])
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    log: list = []
    start = time.monotonic()
    try:
        with pytest.raises(TrainingStopped, match="stopped by SIGTERM"):
            _api(teacher, student, tmp_path / "d", log=log.append, jobs=2, seeds=[1, 2], chunk_lines=30)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 50
    assert sum("started in its own process" in line for line in log) == 2  # the other two never started
    assert sum("stopped (exit" in line for line in log) == 2
    assert not list((tmp_path / "d" / "stages").glob("*.seed*.done"))


def test_a_shortlist_is_built_and_the_students_exported_for_it(setup, tmp_path):
    """--shortlist: DIR/shortlist.json from the distilled pairs, and students exported with
    the readout step, which the runtime translates with that shortlist."""
    import rnmt_runtime
    from rnmt.distill.setup import check_teachers
    from rnmt.search.shortlist import load_shortlist

    teacher, student, corpus = setup
    out = tmp_path / "d"
    log: list = []
    _api(teacher, student, out, log=log.append, baseline=False, shortlist=True)
    assert any(line.startswith("shortlist: ") for line in log)
    vocab = check_teachers([str(teacher)])
    shortlist = load_shortlist(out / "shortlist.json", vocab.src_vocab, vocab.tgt_vocab)
    assert sum(1 for b in shortlist.best if len(b)) > 10
    export = out / "export" / "student.student.seed1"
    assert (export / "step_readout.onnx").is_file()
    runtime = rnmt_runtime.load(export)
    runtime.use_shortlist(out / "shortlist.json")
    lines = (corpus / "test.es").read_text(encoding="utf-8").splitlines()[:5]
    assert len(runtime.translate(lines, rnmt_runtime.Options(beam=2))) == 5
    assert json.loads((out / "distill.json").read_text(encoding="utf-8"))["options"]["shortlist"] is True
