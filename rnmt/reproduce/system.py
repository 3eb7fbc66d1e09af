"""Train, decode and score one run (a system and a seed) of a reproduction.

A run's training lives in ``RUNS/<run>/`` (checkpoints, log.jsonl; not committed). Once
training has ended, ``RUNS/<run>/trained.json`` records its summary, so a later call goes
straight to decoding; a run that stopped midway (interrupted, killed) is resumed from its
last checkpoint with the trainer's exact resume. The finished run is ``RESULTS/<run>.json``
plus its test translations ``RESULTS/hyp/<run>.<tgt>``; a run with both is never touched
again. ``<run>`` is the system's name, or ``<system>.seed<N>`` for a system trained with
several seeds.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from rnmt.config import Config, config_from_dict, load_config, read_config_tree, upgrade_override_key
from rnmt.errors import UserError
from rnmt.reproduce.corpus import Corpus, display_path
from rnmt.reproduce.spec import PaperSpec, SystemSpec
from rnmt.resources import configs_dir
from rnmt.training.checkpoint import atomic_write_text
from rnmt.training.run_log import RunLog, read_run_log

TRAINED = "trained.json"


@dataclass
class Settings:
    """Everything a reproduction sets for every system of a table (the family recipe of
    ``configs/reproduce/<paper>.yaml`` comes between the paper config and these)."""

    updates: int = 2000  # training updates per system (equal updates), or the cap under `converge`
    emb_size: int = 256
    hidden_size: int = 256
    vocab_size: int = 8000  # one joint BPE model shared by all systems of a paper
    dev_sentences: int = 200  # validation (greedy dev BLEU) on this prefix of the dev set; 0: all of it
    validate_every: int = 500
    log_every: int = 50
    seeds: List[int] = field(default_factory=lambda: [1, 2])  # all for the paper's `seeded` systems
    threads: int = 1  # torch threads per training process
    jobs: int = 1  # training processes side by side
    device: str = "auto"
    bootstrap: int = 1000  # paired bootstrap resamples
    overrides: List[str] = field(default_factory=list)  # --set, applied to every system last
    # The convergence protocol (docs/reproduce.md): each run trains until dev BLEU has not
    # improved for `patience` validations, its rate decaying once per `plateau_patience`
    # validations without improvement (train.schedule plateau), `updates` at most.
    converge: bool = False
    patience: int = 8
    plateau_patience: int = 2

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Run:
    """One training of one system with one seed."""

    system: SystemSpec
    seed: int
    name: str  # file stem of its record, translations and run directory


def plan_runs(spec: PaperSpec, systems: Sequence[SystemSpec], seeds: Sequence[int]) -> List[Run]:
    """Every seed for the systems a claim rests on (the spec's ``seeded``), the first seed
    for the others; systems in table order, seeds inside."""
    runs = []
    for s in systems:
        mine = list(seeds) if s.name in spec.seeded else list(seeds[:1])
        for seed in mine:
            name = s.name if len(mine) == 1 else f"{s.name}.seed{seed}"
            runs.append(Run(s, seed, name))
    return runs


def _set(tree: Dict[str, Any], dotted: str, value: Any) -> None:
    node = tree
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def converge_recipe(settings: Settings) -> Dict[str, Any]:
    """The convergence protocol's keys over the family recipe (none for equal updates): no
    update count fixed in advance, the rate decays on dev plateaus instead of at the
    equal-updates recipe's steps, and early stopping ends the run."""
    if not settings.converge:
        return {}
    return {"train.schedule": "plateau", "train.patience": settings.patience,
            "train.plateau_patience": settings.plateau_patience}


def miniature_config(run: Run, spec: PaperSpec, corpus: Corpus, vocab_model: Path, cache_dir: Path,
                     settings: Settings) -> Config:
    """The paper config of ``run.system``, then the paper's family recipe, then the
    system's own recipe entries, then the reproduction's data, size, updates and seed,
    then ``--set``."""
    system = run.system
    # Always the built-in copy (the checkout's configs/ or the installed package's), never a
    # file of the same name under the current directory.
    path = configs_dir() / system.config.removeprefix("configs/")
    if not path.is_file():
        raise UserError(f"{system.name}: paper config not found: {system.config}")
    tree = read_config_tree(path)[1]  # its bases resolved
    miniature = {
        **spec.recipe, **system.recipe,
        "data.train": str(corpus.train), "data.dev": str(corpus.dev), "data.test": str(corpus.test),
        "data.src": corpus.src, "data.tgt": corpus.tgt,
        "data.vocab.model": str(vocab_model), "data.cache_dir": str(cache_dir),
        "data.dev_max_sentences": settings.dev_sentences or None,
        "model.emb_size": settings.emb_size, "model.hidden_size": settings.hidden_size,
        "train.max_minutes": None, "train.max_steps": settings.updates, "train.patience": None,
        "train.seed": run.seed, "train.threads": settings.threads, "train.device": settings.device,
        "train.validate_every": settings.validate_every, "train.log_every": settings.log_every,
        "train.validation_search": "greedy", "train.progress": False, "train.keep_last": 1,
        # a converged run moves far past update 1,000, where docs/results.md measures each
        # system's gradient flow (benchmarks/gradient_flow.py --checkpoint): keep that checkpoint
        "train.keep_steps": [1000] if settings.converge else [],
    }
    miniature.update(converge_recipe(settings))
    for key, value in miniature.items():
        _set(tree, upgrade_override_key(key), value)  # a recipe's model.enc_depth sets model.options.enc_depth
    try:
        return config_from_dict(tree, settings.overrides, source=system.config)
    except UserError as exc:
        raise UserError(f"{system.config}: {exc}") from None


def _run_log(log_path: Path) -> RunLog:
    return read_run_log(log_path) if log_path.is_file() else RunLog(log_path)


def training_speed(log_path: Path) -> Dict[str, Any]:
    """Target tokens per second over the whole run, from ``log.jsonl``: each logging record
    covers the steps since the previous one (steps repeated by a resume counted once)."""
    tokens, seconds, previous = 0.0, 0.0, 0.0
    for rec in _run_log(log_path).train:
        if "tokens_per_s" not in rec:
            continue
        span = max(float(rec["train_seconds"]) - previous, 0.0)
        tokens += rec["tokens_per_s"] * span
        seconds += span
        previous = float(rec["train_seconds"])
    return {"train_tokens_per_s": tokens / seconds if seconds > 0 else None}


def last_validation(run_log: RunLog) -> Dict[str, Any]:
    """The last dev evaluation of a training run (``dev_loss``, ``dev_ppl``, ...); empty when
    the run never validated. Dev perplexity still separates systems whose BLEU is near zero
    after a short budget."""
    return dict(run_log.last_dev or {})


def validation_curve(run_log: RunLog) -> List[Dict[str, Any]]:
    """Every dev evaluation of a run: the learning curve a record keeps, so that what a
    document says of a run's progress has a committed source."""
    return [{"step": int(rec["step"]), "dev_loss": round(rec["dev_loss"], 4), "dev_bleu": round(rec["dev_bleu"], 2),
             **({"plateau_decays": rec["plateau_decays"]} if "plateau_decays" in rec else {})}
            for rec in run_log.dev]


def train_run(run: Run, cfg: Config, run_dir: Path, log: Callable[[str], None]) -> Dict[str, Any]:
    """Train (or resume, or skip when already trained) and return the training summary.
    A resumed run keeps its own resolved config; only its threads and device follow
    ``cfg`` (they change no result)."""
    threads, device = cfg.train.threads, cfg.train.device
    from rnmt.training.trainer import STATE_FILE, Trainer

    done = run_dir / TRAINED
    if done.is_file():
        log(f"{run.name}: already trained, decoding only")
        return json.loads(done.read_text(encoding="utf-8"))
    if (run_dir / STATE_FILE).is_file():
        # The run's own resolved config (vocabulary sizes filled in).
        # (and a converged table's patience: raising it continues runs early stopping ended)
        patience = [] if cfg.train.patience is None else [f"train.patience={cfg.train.patience}"]
        cfg = load_config(run_dir / "config.yaml", [f"train.threads={threads}", f"train.device={device}", *patience],
                          warn_deprecated=False)  # rnmt wrote it (maybe before a key moved)
        log(f"{run.name}: resuming the stopped training run")
        trainer = Trainer(cfg, run_dir, resume=True, log=log)
    else:
        if run_dir.exists():  # started but never reached a checkpoint: start again
            shutil.rmtree(run_dir)
        log(f"{run.name}: training for {cfg.train.max_steps} updates (seed {run.seed})")
        trainer = Trainer(cfg, run_dir, log=log)
    summary = trainer.run()
    if summary.get("stop_reason") == "signal":
        # Stopped from outside (Ctrl-C, SIGTERM at the end of a sitting): not trained yet.
        # No trained.json, no record: the next call resumes from the checkpoint just written.
        raise UserError(f"{run.name}: training stopped by {trainer.stop_signal or 'a signal'} at update "
                        f"{summary.get('steps')}; run the same command again to resume it")
    summary.update(training_speed(run_dir / "log.jsonl"))
    sampler = trainer.sampler  # epochs as a fraction: whole epochs plus the share of the current one
    summary["epochs"] = round(sampler.epoch + sampler.position / max(len(sampler), 1), 2)
    summary["updates_per_epoch"] = len(sampler)
    summary["plateau_decays"] = trainer.progress.plateau_decays
    atomic_write_text(done, json.dumps(summary, indent=1) + "\n")
    return summary


def _timed_translate(translator, lines: List[str], **kwargs) -> tuple:
    start = time.perf_counter()
    hyps = translator.translate_best(lines, **kwargs)
    seconds = time.perf_counter() - start
    words = sum(len(h.split()) for h in hyps)
    return hyps, seconds, words


def evaluate_run(run: Run, run_dir: Path, corpus: Corpus, device: str, greedy_speed: bool,
                 log: Callable[[str], None]) -> tuple:
    """Decode the test set with the paper's search settings; returns (metrics, hypotheses)."""
    from rnmt.data import read_lines
    from rnmt.device import pick_device
    from rnmt.evaluation.metrics import corpus_bleu, corpus_chrf
    from rnmt.models import load_model
    from rnmt.models.loading import count_parameters
    from rnmt.reproduce.report import length_ratio
    from rnmt.search.translator import Translator

    test_src, test_ref = corpus.files("test")
    src_lines, refs = read_lines(test_src), read_lines(test_ref)
    device = pick_device(device)
    loaded = load_model(run_dir, device)
    search = loaded.config.search
    translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, search, device)
    log(f"{run.name}: decoding {len(src_lines)} test sentences (beam {search.beam}, "
        f"normalize {search.normalize}, alpha {search.alpha})")
    with torch.no_grad():
        hyps, seconds, words = _timed_translate(translator, src_lines)
        metrics: Dict[str, Any] = {
            "params": count_parameters(loaded.model)["total"],
            "beam": search.beam, "normalize": search.normalize, "alpha": search.alpha,
            "decode_seconds": round(seconds, 2), "decode_words": words,
            "decode_words_per_s": words / seconds if seconds > 0 else None,
        }
        if greedy_speed:
            _, g_seconds, g_words = _timed_translate(translator, src_lines, greedy=True)
            metrics["greedy_decode_words_per_s"] = g_words / g_seconds if g_seconds > 0 else None
    bleu, chrf = corpus_bleu(hyps, [refs]), corpus_chrf(hyps, [refs])
    metrics.update(test_bleu=bleu.score, test_chrf=chrf.score, length_ratio=length_ratio(hyps, refs),
                   bleu_signature=bleu.signature, chrf_signature=chrf.signature,
                   checkpoint_step=loaded.meta.get("step"))
    return metrics, hyps


def record_path(results_dir: Path, run: Run) -> Path:
    return results_dir / f"{run.name}.json"


def hyp_path(results_dir: Path, run: Run, tgt: str) -> Path:
    return results_dir / "hyp" / f"{run.name}.{tgt}"


def stopped_short(record: Dict[str, Any], patience: int) -> bool:
    """Whether early stopping ended the run of ``record`` after fewer validations without a
    better dev BLEU than ``patience``: with that patience it would have trained on. (A
    better BLEU is a strictly higher one, the first of equals counting, as in training.)"""
    if record.get("stop_reason") != "early_stopping":
        return False
    curve = [v.get("dev_bleu") for v in record.get("validations") or []]
    if not curve or any(b is None for b in curve):
        return False
    best = curve.index(max(curve))
    return len(curve) - 1 - best < patience


def continues(run_dir: Path, record_file: Path, settings: Settings) -> bool:
    """A finished converged run to continue from its last checkpoint because the table's
    patience was raised since it stopped (and its checkpoint is on this machine)."""
    from rnmt.training.trainer import STATE_FILE

    if not settings.converge or not record_file.is_file() or not (run_dir / STATE_FILE).is_file():
        return False
    try:
        record = json.loads(record_file.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return isinstance(record, dict) and stopped_short(record, settings.patience)


def run_system(run: Run, spec: PaperSpec, corpus: Corpus, vocab_model: Path, runs_dir: Path, results_dir: Path,
               settings: Settings, machine: Dict[str, Any], provenance: Dict[str, str],
               log: Callable[[str], None]) -> Optional[Dict[str, Any]]:
    """Train, decode and score ``run`` unless it is finished; returns its record.

    ``provenance``: the ``commit`` the code was at and the ``command`` that reproduces the
    table; both go into the record."""
    record_file, hyp_file = record_path(results_dir, run), hyp_path(results_dir, run, corpus.tgt)
    run_dir = runs_dir / run.name
    if continues(run_dir, record_file, settings):
        # The record stays until the continued run replaces it (a break in between resumes).
        log(f"{run.name}: early stopping ended it sooner than patience {settings.patience}: continuing it")
        (run_dir / TRAINED).unlink(missing_ok=True)
    elif record_file.is_file() and hyp_file.is_file():
        log(f"{run.name}: finished earlier, skipped ({display_path(record_file)})")
        return json.loads(record_file.read_text(encoding="utf-8"))
    cfg = miniature_config(run, spec, corpus, vocab_model, runs_dir / "cache", settings)
    summary = train_run(run, cfg, run_dir, log)
    metrics, hyps = evaluate_run(run, run_dir, corpus, settings.device, spec.greedy_speed, log)
    steps = summary.get("steps")
    seconds = float(summary.get("train_seconds", 0.0))
    per_epoch = summary.get("updates_per_epoch")
    best = metrics.get("checkpoint_step")
    run_log = _run_log(run_dir / "log.jsonl")  # read once for the last validation and the curve
    validation = last_validation(run_log)
    from rnmt.training.checkpoint import load_train_state

    # train.amp auto is bf16 autocast on CUDA and on CPUs with fast bf16 products: the
    # record says what the run trained in (its training state keeps that).
    trained_in = load_train_state(run_dir / "train_state.pt").get("amp", "fp32")
    precision = "bf16 autocast" if trained_in == "bf16" else "fp32"
    record = {
        "system": run.system.name, "run": run.name, "label": run.system.label, "config": run.system.config,
        "seed": run.seed, **provenance,
        "corpus": corpus.name, "src": corpus.src, "tgt": corpus.tgt,
        "emb_size": cfg.model.emb_size, "hidden_size": cfg.model.hidden_size,
        "recipe": {**spec.recipe, **run.system.recipe, **converge_recipe(settings)},
        "steps": steps, "epochs": summary.get("epochs"),
        "updates_to_best": best, "epochs_to_best": round(best / per_epoch, 2) if best and per_epoch else None,
        "train_minutes": round(seconds / 60.0, 2),
        "wall_minutes": round(float(summary["wall_seconds"]) / 60.0, 2) if "wall_seconds" in summary else None,
        "plateau_decays": summary.get("plateau_decays") if settings.converge else None,
        "seconds_per_update": round(seconds / steps, 4) if steps else None,
        "stop_reason": summary.get("stop_reason"), "best_dev_bleu": summary.get("best_dev_bleu"),
        "dev_ppl": validation.get("dev_ppl"), "dev_loss": validation.get("dev_loss"),
        "dev_sentences": settings.dev_sentences,
        "train_tokens_per_s": summary.get("train_tokens_per_s"),
        **metrics, "machine": {**machine, "precision": precision}, "overrides": list(settings.overrides),
        "validations": validation_curve(run_log),
    }
    atomic_write_text(hyp_file, "".join(h + "\n" for h in hyps))
    atomic_write_text(record_file, json.dumps(record, indent=1) + "\n")  # last: its presence means "finished"
    log(f"{run.name}: test BLEU {record['test_bleu']:.2f}, chrF {record['test_chrf']:.2f}, "
        f"{steps} updates, {record['seconds_per_update']} s/update")
    return record
