"""Setting up a training run: checks, output directory, precision, vocabularies, data, model.

`set_up_run` does, in this order, everything that comes before the first update: it checks
the config's shapes and files before writing anything, resolves the device, reads a
``--init-from`` checkpoint, makes (or checks) and locks the output directory, seeds the
generator, trains or loads the vocabularies, checks a ``--resume``'s config changes, encodes
the training corpus and the dev set, builds and initialises the model, and only then
resolves the run's execution plan (`rnmt.plan`: precision, products, kernels, compiled step,
CUDA graphs, memory bounds; a resumed run's recorded plan), logs it, saves it as
``plan.json`` and applies it (building the C++ kernels, compiling the step with
``train.compile_step``). Input errors therefore come before any plan line. The
order is part of the contract: the random draws of the initialisation follow from it, so a
change here changes every run's weights (scripts/model_fingerprints.py and the exact-resume
tests watch it).

Under ``torchrun`` rank 0 trains the vocabulary and encodes the corpora first; the others
then load the same files (or, on a node without the shared directory, rebuild them
identically: both steps are deterministic). A failure on rank 0 is passed on to the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import torch

from rnmt import hardware
from rnmt.config import Config, SubwordSamplingConfig, load_config
from rnmt.data import EncodedCorpus, Vocab
from rnmt.data.corpora import TrainingData, load_training_data
from rnmt.device import check_threads, pick_device, rank_device
from rnmt.errors import UserError, write_failure
from rnmt.io.checkpoint_files import load_state_into
from rnmt.models import build_model
from rnmt.models.base import TranslationModel, uniform_init_
from rnmt.plan import PLAN_FILE, Choice, ExecutionPlan, precision_choice, resolve_plan, write_plan
from rnmt.plan.plan import choices_from_dict
from rnmt.plan.resolve import slow_bf16_warning
from rnmt.training import run_lock
from rnmt.training.checkpoint import atomic_write_text, load_train_state
from rnmt.training.distributed import DistContext, init_distributed
from rnmt.training.init_from import InitCheckpoint, check_architecture, read_init_checkpoint
from rnmt.training.preflight import check_before_writing, train_files
from rnmt.training.resume import changed_keys, check_resume_config
from rnmt.training.run_lock import RunLock
from rnmt.training.run_vocab import run_vocabularies
from rnmt.training.validator import DevSet, load_dev_set

STATE_FILE = "train_state.pt"
# Rank r > 0 reseeds its generator with seed + r * RANK_SEED_STRIDE after the (identical)
# initialisation, so dropout masks differ between processes.
RANK_SEED_STRIDE = 1_000_003

Log = Callable[..., None]


def amp_dtype(name: str, device: torch.device, hidden: int = 0) -> Optional[torch.dtype]:
    """The autocast dtype of ``train.amp`` on ``device`` (None: full precision); see `resolve_amp`."""
    return resolve_amp(name, device, hidden)[0]


def resolve_amp(name: str, device: torch.device, hidden: int = 0) -> Tuple[Optional[torch.dtype], str]:
    """The autocast dtype of ``train.amp`` on ``device`` and why, for the log: the plan's
    precision choice (`rnmt.plan.precision_choice`; on the CPU the rule of
    `rnmt.hardware.bf16_training`, no timing)."""
    value, why = precision_choice(name, device, hidden)
    return (torch.bfloat16 if value == "bf16" else None), f"{value} ({why})"


def main_first(dist: DistContext, fn: Callable[[], Any], others: Optional[Callable[[], Any]] = None) -> Any:
    """Run ``fn`` on rank 0, then (if it succeeded) ``others or fn`` on the other ranks.

    A failure on rank 0 is passed on, so no rank waits forever for a rank that stopped.
    """
    if not dist.enabled:
        return fn()
    if dist.is_main:
        try:
            result = fn()
        except BaseException as exc:
            dist.broadcast_object(str(exc) or type(exc).__name__)
            raise
        dist.broadcast_object(None)
        return result
    error = dist.broadcast_object(None)
    if error is not None:
        raise UserError(f"rank 0 failed: {error}")
    return (others or fn)()


@dataclass
class RunSetup:
    """What `set_up_run` made: the run's place, precision, vocabularies, data and model."""

    cfg: Config
    out: Path
    resume: bool
    dist: DistContext
    log: Log  # prints on rank 0 only
    device: torch.device
    amp_dtype: Optional[torch.dtype]
    init: Optional[InitCheckpoint]  # the --init-from checkpoint (fine-tuning), or None
    src_vocab: Vocab
    tgt_vocab: Vocab
    corpus: EncodedCorpus  # the training pairs as encoded (a ConcatCorpus for several corpora)
    data: TrainingData  # the corpora, their weights and each epoch's pairs and segmentation
    dev: Optional[DevSet]  # None without data.dev, and on every rank but 0
    model: TranslationModel
    cuda_graphs: bool  # train.cuda_graphs resolved: updates replayed from CUDA graphs
    config_changes: List[str]  # a --resume's accepted changes to the saved config
    lock: Optional[RunLock] = None  # rank 0's hold on the output directory (rnmt/training/run_lock.py)
    plan: Optional[ExecutionPlan] = None  # how the run computes (rnmt.plan), applied

    @property
    def is_main(self) -> bool:
        return self.dist.is_main


def set_up_run(cfg: Config, out_dir: str | Path, resume: bool = False, log: Log = print,
               dist: Optional[DistContext] = None, init_from: Optional[str | Path] = None) -> RunSetup:
    """Everything before the first update (see the module's docstring for the order)."""
    out = Path(out_dir)
    check_before_writing(cfg)  # the model's shapes and the corpus files, before any file is made
    tc = cfg.train
    dist = dist if dist is not None else init_distributed(tc.device)
    if not dist.is_main:
        log = lambda *_, **__: None  # noqa: E731
    if tc.threads:
        check_threads(tc.threads, "train.threads")
        torch.set_num_threads(tc.threads)
    device = rank_device(pick_device(tc.device), dist.local_rank if dist.enabled else None)
    auto_replicas = tc.replicas is None
    if tc.replicas is None:
        tc.replicas = dist.world_size  # n of DTMT eq. 17 (rnmt_plus): the processes
    # Fine-tuning (rnmt/training/init_from.py), checked before anything is written; read
    # only when the run starts: a resumed run continues from its own checkpoint.
    init = read_init_checkpoint(init_from) if init_from and not resume else None
    if init is not None:
        cfg.model.src_vocab_size, cfg.model.tgt_vocab_size = init.src_vocab.size, init.tgt_vocab.size
        check_architecture(init, cfg.model)
    # Rank 0 first: a directory another run holds stops every rank with rank 0's one-line error.
    lock = main_first(dist, lambda: _check_out_dir(out, resume, True), lambda: _check_out_dir(out, resume, False))
    torch.manual_seed(tc.seed)

    src_vocab, tgt_vocab = main_first(dist, lambda: run_vocabularies(cfg, out, resume, init, log))
    cfg.model.src_vocab_size = src_vocab.size
    cfg.model.tgt_vocab_size = tgt_vocab.size
    config_changes, changed = _resume_changes(cfg, out, resume, auto_replicas)
    if dist.is_main and not resume:
        atomic_write_text(out / "config.yaml", cfg.dump())
    data, dev = _training_data(cfg, out, src_vocab, tgt_vocab, dist, log)
    model = _initialised_model(cfg, init, device, log)
    plan = _run_plan(cfg, out, resume, device, dist, model, changed, log)
    model = plan.apply(model)
    if device.type == "cpu" and plan.kernels.value:
        # Build or load the C++ kernels now (rank 0 first), so that a first build is not
        # counted as training time (train.max_minutes, tokens/s).
        from rnmt import kernels

        main_first(dist, kernels.extension)
    _set_up_compile_step(model, plan.compile_step.value, tc.compile_step == "auto", cfg.model.arch, device, log)
    if dist.rank > 0:
        torch.manual_seed(tc.seed + RANK_SEED_STRIDE * dist.rank)
    return RunSetup(cfg=cfg, out=out, resume=resume, dist=dist, log=log, device=device,
                    amp_dtype=torch.bfloat16 if plan.bf16 else None, plan=plan,
                    init=init, src_vocab=src_vocab, tgt_vocab=tgt_vocab, data=data, dev=dev,
                    corpus=cast(EncodedCorpus, data.corpus),  # a ConcatCorpus reads as one
                    model=model, cuda_graphs=plan.cuda_graphs.value, config_changes=config_changes, lock=lock)


def _resume_changes(cfg: Config, out: Path, resume: bool, auto_replicas: bool) -> Tuple[List[str], List[str]]:
    """A ``--resume``'s accepted changes to the run's saved config (checked before anything
    is written: a rejected --resume --set leaves the run as it was), and the keys they
    change, whose execution-plan choices are made anew."""
    if not (resume and (out / "config.yaml").is_file()):
        return [], []
    saved = load_config(out / "config.yaml", warn_deprecated=False)  # upgraded silently: rnmt wrote it
    if auto_replicas:  # the run's resolved n, whatever the number of processes now
        cfg.train.replicas = saved.train.replicas
    config_changes = check_resume_config(saved, cfg, str(out / "config.yaml"))
    return config_changes, [key for key, _, _ in changed_keys(saved, cfg)]


def _training_data(cfg: Config, out: Path, src_vocab: Vocab, tgt_vocab: Vocab, dist: DistContext,
                   log: Log) -> Tuple[TrainingData, Optional[DevSet]]:
    """The encoded training corpora (rank 0 first) and the dev set (rank 0 only)."""
    files = train_files(cfg)
    cache = Path(cfg.data.cache_dir) if cfg.data.cache_dir else out / "cache"
    ss = cfg.data.subword_sampling
    sampling = {"alpha": ss.alpha, "nbest": ss.nbest, "dropout": ss.dropout} if ss.enabled else None
    data = main_first(dist, lambda: load_training_data(files, src_vocab, tgt_vocab, cache, cfg.data.max_len,
                                                       cfg.train.seed, sampling, log))
    corpus = data.corpus
    for part, cf in zip(data.parts, files):
        if len(part) == 0:
            raise UserError(f"{cf.src}: no training pairs left after removing empty and over-long lines")
    log(f"training pairs: {len(corpus)} (skipped {corpus.n_empty} empty, "
        f"{corpus.n_too_long} longer than {cfg.data.max_len} subwords)")
    if len(files) > 1:
        log("training corpora: " + "; ".join(f"{cf.src.with_suffix('')} {len(p)} pairs, weight {cf.weight:g}"
                                             for cf, p in zip(files, data.parts)))
    if ss.enabled:
        log(f"subword sampling: {_sampling_method(src_vocab, ss)} on both sides, a new segmentation each epoch")
    # Validation runs on rank 0 only: the others never load the dev set.
    dev = main_first(dist, lambda: load_dev_set(cfg, src_vocab, tgt_vocab, cache), others=lambda: None)
    return data, dev


def _initialised_model(cfg: Config, init: Optional[InitCheckpoint], device: torch.device,
                       log: Log) -> TranslationModel:
    """The plain model, initialised (from ``--init-from`` when given) and on ``device``."""
    model: TranslationModel = build_model(cfg.model, cfg.model.src_vocab_size, cfg.model.tgt_vocab_size)
    uniform_init_(model, cfg.train.init_scale)
    if init is not None:
        load_state_into(model, init.file.state, init.file.path)
        init.file.state = {}  # copied into the model: no second copy for the whole run
        log(f"fine-tuning from {init.file.path} (step {init.file.meta.get('step')}): its weights "
            f"and vocabulary, a fresh optimiser and schedule")
    model.to(device)
    return model


def _set_up_compile_step(model: TranslationModel, compile_step: bool, auto: bool, arch: str,
                         device: torch.device, log: Log) -> None:
    """The plan's ``compile_step``: compile teacher forcing's decoder step. Under
    ``train.compile_step: auto`` a failed compile falls back to the eager step."""
    if not compile_step:
        return
    if auto:
        import torch._dynamo

        # auto must not stop a run that would train eagerly: a failed compile falls back to eager
        torch._dynamo.config.suppress_errors = True
    _compile_step(model, arch, device, log)


def auto_compile_declines(model: TranslationModel, device: torch.device) -> Optional[str]:
    """Why ``train.compile_step: auto`` leaves this model's step eager on ``device``, or None
    to compile it. Compiling fuses a step's element-wise work into a few kernels, which pays
    where the eager step is bound by kernel launches: on a GPU, for units without a fused step
    of their own (on an H200 ATR's, DTMT#1's and DTMT#4's updates ran 1.18-1.29x faster, the
    GRU's, already one fused kernel each way, at half the rate: results/gpu/)."""
    if device.type != "cuda":
        return "not on a GPU: the CPU's step is matrix products and rnmt's C++ kernels"
    if not model.compilable_step:
        return "no step loop, or a data-dependent one"
    if model.step_fused_on_cuda():
        return "its units' steps are fused GPU kernels already"
    try:
        from torch.utils._triton import has_triton
    except ImportError:  # a torch without the helper: let torch.compile decide
        return None
    return None if has_triton() else "torch.compile finds no Triton here"


def _compile_step(model: TranslationModel, arch: str, device: torch.device, log: Log) -> None:
    if not model.compile_step():
        log(f"train.compile_step: {arch}'s decoder step is not one graph (no step loop, or a data-dependent "
            f"one); it runs as written")
        return
    from rnmt import kernels

    where = " (rnmt's C++ kernels split it into several graphs: the option is meant for GPUs)" \
        if device.type == "cpu" and kernels.extension() is not None else ""
    log(f"train.compile_step: teacher forcing's decoder step runs through torch.compile, compiled at the "
        f"first updates{where}")


def _sampling_method(vocab: Vocab, ss: SubwordSamplingConfig) -> str:
    """How ``data.subword_sampling`` samples with this vocabulary, for the log."""
    from rnmt.data.subword_sampling import model_type

    kind = model_type(vocab)
    if kind == "unigram":
        return f"unigram n-best sampling (nbest {ss.nbest}, alpha {ss.alpha:g})"
    return f"BPE-dropout ({ss.dropout:g})" if kind == "bpe" else kind


def _recorded_plan(out: Path, resume: bool, cfg: Config,
                   device: torch.device) -> Tuple[Dict[str, Choice], str, int]:
    """A resumed run's recorded choices, the device type they were made for and its step:
    the plan in its training state, or for a state written before plans only its precision
    (``amp``)."""
    if not resume or not (out / STATE_FILE).is_file():
        return {}, device.type, 0
    state = load_train_state(out / STATE_FILE)
    step = int(state.get("step", 0))
    raw = state.get("plan")
    if raw is not None:
        return choices_from_dict(raw, str(out / STATE_FILE)), str(raw.get("device", device.type)), step
    saved = state.get("amp")
    if saved is None and cfg.train.amp == "auto" and device.type == "cpu":
        saved = "fp32"  # saved before auto could choose bf16 on a CPU
    if saved is None:
        return {}, device.type, step
    return {"precision": Choice(saved, "the precision this run started in")}, device.type, step


def _run_plan(cfg: Config, out: Path, resume: bool, device: torch.device, dist: DistContext,
              model: TranslationModel, changed: List[str], log: Log) -> ExecutionPlan:
    """The run's execution plan, resolved once the inputs are checked and the model is
    built: a resumed run keeps its recorded choices (but those whose config key ``changed``),
    every process takes rank 0's, and rank 0 logs it and writes it beside the checkpoints."""
    recorded, recorded_device, step = _recorded_plan(out, resume, cfg, device)
    cpu = hardware.this_cpu()
    plan = resolve_plan(cfg, device, cpu, recorded=recorded, overrides=set(changed),
                        model=model, distributed=dist.enabled, recorded_device=recorded_device)
    if dist.enabled:
        plan = ExecutionPlan.from_dict(dist.broadcast_object(plan.to_dict()), "rank 0's plan")
    for line in plan.describe():
        log(line)
    warning = slow_bf16_warning(plan, cpu)
    if warning:
        log(warning)
    if dist.is_main:
        write_plan(plan, out / PLAN_FILE)
        try:  # the log's first record of this sitting (rnmt.training.run_log skips it as history)
            with open(out / "log.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"step": step, "plan": plan.to_dict()}) + "\n")
        except OSError as exc:
            what, advice = write_failure(exc)
            raise UserError(f"{out / 'log.jsonl'}: {what} while appending to it: {advice}") from None
    return plan


def _check_out_dir(out: Path, resume: bool, is_main: bool) -> Optional[RunLock]:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        what, advice = write_failure(exc)
        raise UserError(f"{out}: cannot create the output directory ({what}): {advice}") from None
    # Rank 0 writes for every process of a run; another run in this directory is refused
    # before anything is read or written.
    lock = run_lock.hold(out) if is_main else None
    has_run = (out / STATE_FILE).exists()
    if has_run and not resume:
        raise UserError(f"{out} already holds a training run; pass --resume to continue it or choose another --out")
    weights = sorted(p.name for p in out.glob("*.safetensors"))
    if weights and not resume:  # a run whose state file went: a new run would write over its checkpoints
        shown = ", ".join(weights[:3]) + (", ..." if len(weights) > 3 else "")
        raise UserError(f"{out} already holds checkpoints ({shown}) but no {STATE_FILE} to resume from; "
                        f"choose another --out, or move them away")
    if resume and not has_run:
        raise UserError(f"cannot resume: {out / STATE_FILE} not found")
    if resume and is_main:
        # Temporaries of a process killed mid-write (atomic_write names them .NAME.*.tmp):
        # the lock says no other trainer writes to this directory, so none of them is in use.
        for tmp in out.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)
    return lock

