"""The training loop: batches -> loss -> Adam step, with validation, checkpoints and resume.

Output directory layout:

    OUT/config.yaml          the resolved config
    OUT/config.source.yaml   the config file as `rnmt.train` last read it, before --set (what
                             --resume compares an edited file with: rnmt.train.resume)
    OUT/spm*.model           the sentencepiece model(s)
    OUT/ckpt-<step>.safetensors   the last ``train.keep_last`` checkpoints
    OUT/best.safetensors     the checkpoint with the best dev BLEU, or the newest one when
                             there is no dev set (what `translate` and `serve` load)
    OUT/train_state.pt       optimiser, step, data position and random state (for --resume)
    OUT/log.jsonl            one JSON object per logging interval and per validation
    OUT/tensorboard/         the same as TensorBoard events (train.tensorboard: true)

Resume is exact: the model, the optimiser moments, the learning-rate schedule (a pure
function of the step, and for ``plateau`` of the decays counted so far), the position in
the epoch's batch order and the random generator are restored, so a stopped and resumed
run reproduces the losses of an uninterrupted one. SIGTERM and SIGINT stop the run at the
next update boundary with a checkpoint (`rnmt.train.signals`); a non-finite loss skips its
update (`train.max_nonfinite` in a row stop the run) and non-finite weights are never
written; every file is written atomically (`rnmt.train.checkpoint.atomic_write`).
docs/reliability.md lists the guarantees.

Data parallelism (docs/scaling.md): under ``torchrun`` every process trains a replica
wrapped in DistributedDataParallel on its own shard of the batches (rank r takes batches
r, r + N, ...). Each update's loss is divided by the target tokens of the whole update
over all processes, so N processes with batch B compute the gradient of one process
accumulating the same N batches. Rank 0 alone validates and writes checkpoints; its
early-stopping decision is broadcast to the others.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import sacrebleu
import torch
from tqdm import tqdm

from rnmt import precision
from rnmt.config import Config, load_config
from rnmt.data import TokenBatchSampler, collate, encode_corpus, iter_parallel, load_vocab, read_parallel, train_vocabs
from rnmt.device import pick_device, rank_device
from rnmt.errors import UserError, write_failure
from rnmt.io.checkpoint_files import load_state_into
from rnmt.models import build_model
from rnmt.models.base import TranslationModel, uniform_init_
from rnmt.models.loading import read_checked
from rnmt.search.translator import Translator
from rnmt.train.checkpoint import atomic_write_text, load_train_state, save_model, save_train_state
from rnmt.train.distributed import DistContext, init_distributed
from rnmt.train.init_from import InitCheckpoint, check_architecture, read_init_checkpoint
from rnmt.train.loss import label_smoothed_nll
from rnmt.train.optimizers import build_optimizer
from rnmt.train.preflight import check_before_writing, corpus_files
from rnmt.train.resume import check_corpus, check_resume_config
from rnmt.train.schedules import learning_rate
from rnmt.train.signals import StopSignals

STATE_FILE = "train_state.pt"


def amp_dtype(name: str, device: torch.device, hidden: int = 0, threads: int = 1) -> Optional[torch.dtype]:
    """The autocast dtype of ``train.amp`` on ``device`` (None: full precision); see `resolve_amp`."""
    return resolve_amp(name, device, hidden, threads)[0]


def resolve_amp(name: str, device: torch.device, hidden: int = 0,
                threads: int = 1) -> Tuple[Optional[torch.dtype], str]:
    """The autocast dtype of ``train.amp`` on ``device`` and why, for the log.

    ``auto`` is bf16 on a CUDA device that supports it. On the CPU it is bf16 when the
    model's hidden size is at least `precision.BF16_MIN_HIDDEN` and this processor's bf16
    products, measured at that size on ``threads`` threads, run at least
    `precision.BF16_MIN_SPEEDUP` times fp32's (`precision.cpu_bf16_speedup`): processors
    that list ``avx512_bf16`` differ (2.1-2.7x fp32 on a Zen 4, 0.5-0.8x on a Xeon without
    AMX), so the flag alone cannot decide. bf16 keeps quality at equal updates
    (`rnmt reproduce bf16`, docs/performance.md). ``bf16`` and ``none`` force the choice.
    """
    if name == "none":
        return None, "fp32 (train.amp: none)"
    if name not in ("auto", "bf16"):
        raise UserError(f"train.amp: unknown value '{name}'; choose auto, bf16 or none")
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return torch.bfloat16, f"bf16 ({torch.cuda.get_device_name(device)})"
        if name == "bf16":
            raise UserError(f"train.amp is bf16 but {torch.cuda.get_device_name(device)} does not support bf16")
        return None, f"fp32 ({torch.cuda.get_device_name(device)} has no bf16)"
    if name == "bf16":
        return torch.bfloat16, "bf16 (train.amp: bf16)"
    return precision.cpu_auto_dtype(hidden, threads)


# Rank r > 0 reseeds its generator with seed + r * _RANK_SEED_STRIDE after the (identical)
# initialisation, so dropout masks differ between processes.
_RANK_SEED_STRIDE = 1_000_003
# train.best_metric -> the validation figure it reads (loss: lower is better).
BEST_METRICS = {"bleu": "dev_bleu", "chrf": "dev_chrf", "loss": "dev_loss"}


class Trainer:
    def __init__(self, cfg: Config, out_dir: str | Path, resume: bool = False,
                 log=print, dist: Optional[DistContext] = None, corpus_changed_ok: bool = False,
                 init_from: Optional[str | Path] = None) -> None:
        self.cfg = cfg
        self.out = Path(out_dir)
        self.resume = resume
        self.corpus_changed_ok = corpus_changed_ok
        self.stop_signal: Optional[str] = None
        check_before_writing(cfg)  # the model's shapes and the corpus files, before any file is made
        tc = cfg.train
        self.dist = dist if dist is not None else init_distributed(tc.device)
        self.is_main = self.dist.is_main
        self.log = log if self.is_main else (lambda *_, **__: None)
        if tc.threads:
            torch.set_num_threads(tc.threads)
        self.device = rank_device(pick_device(tc.device), self.dist.local_rank if self.dist.enabled else None)
        self.amp_dtype = self._resolve_amp()
        auto_replicas = tc.replicas is None
        if tc.replicas is None:
            tc.replicas = self.dist.world_size  # n of DTMT eq. 17 (rnmt_plus): the processes
        # Fine-tuning (rnmt/train/init_from.py), checked before anything is written; read
        # only when the run starts: a resumed run continues from its own checkpoint.
        self.init: Optional[InitCheckpoint] = read_init_checkpoint(init_from) if init_from and not resume else None
        if self.init is not None:
            cfg.model.src_vocab_size, cfg.model.tgt_vocab_size = self.init.src_vocab.size, self.init.tgt_vocab.size
            check_architecture(self.init, cfg.model)
        self._check_out_dir()
        if self.device.type == "cpu":
            # Build or load the C++ kernels now (rank 0 first), so that a first build is not
            # counted as training time (train.max_minutes, tokens/s).
            from rnmt import kernels

            self._main_first(kernels.extension)
        torch.manual_seed(tc.seed)

        # Rank 0 trains the vocabulary and encodes the corpora first; the others then load
        # the same files (or, on a node without the shared directory, rebuild them
        # identically: both steps are deterministic).
        self.src_vocab, self.tgt_vocab = self._main_first(self._vocabularies)
        cfg.model.src_vocab_size = self.src_vocab.size
        cfg.model.tgt_vocab_size = self.tgt_vocab.size
        config_changes: List[str] = []
        if resume and (self.out / "config.yaml").is_file():
            # Checked before anything is written: a rejected --resume --set leaves the run as it was.
            saved = load_config(self.out / "config.yaml")
            if auto_replicas:  # the run's resolved n, whatever the number of processes now
                cfg.train.replicas = saved.train.replicas
            config_changes = check_resume_config(saved, cfg, str(self.out / "config.yaml"))
        if self.is_main and not resume:
            atomic_write_text(self.out / "config.yaml", cfg.dump())
        self.tensorboard = None
        if tc.tensorboard and self.is_main:
            from rnmt.train.tensorboard import TensorBoardLog

            self.tensorboard = TensorBoardLog(self.out / "tensorboard")

        train_src, train_tgt = corpus_files(cfg.data.train, cfg, "train")
        cache = Path(cfg.data.cache_dir) if cfg.data.cache_dir else self.out / "cache"
        self.corpus = self._main_first(lambda: encode_corpus(train_src, train_tgt, self.src_vocab, self.tgt_vocab,
                                                             cache, cfg.data.max_len))
        if len(self.corpus) == 0:
            raise UserError(f"{train_src}: no training pairs left after removing empty and over-long lines")
        self.log(f"training pairs: {len(self.corpus)} (skipped {self.corpus.n_empty} empty, "
                 f"{self.corpus.n_too_long} longer than {cfg.data.max_len} subwords)")
        # Validation runs on rank 0 only: the others never load the dev set.
        self.has_dev = bool(cfg.data.dev)
        self.dev = self._main_first(lambda: self._dev_set(cache), others=lambda: None)

        self.model: TranslationModel = build_model(cfg.model, self.src_vocab.size, self.tgt_vocab.size)
        uniform_init_(self.model, tc.init_scale)
        if self.init is not None:
            load_state_into(self.model, self.init.file.state, self.init.file.path)
            self.init.file.state = {}  # copied into the model: no second copy for the whole run
            self.log(f"fine-tuning from {self.init.file.path} (step {self.init.file.meta.get('step')}): its weights "
                     f"and vocabulary, a fresh optimiser and schedule")
        self.model.to(self.device)
        if self.dist.rank > 0:
            torch.manual_seed(tc.seed + _RANK_SEED_STRIDE * self.dist.rank)
        self.optimizer = build_optimizer(self.model.parameters(), tc)
        self.sampler = TokenBatchSampler(self.corpus.src_lens, self.corpus.tgt_lens, cfg.data.batch_tokens,
                                         shuffle=True, seed=tc.seed, rank=self.dist.rank,
                                         world_size=self.dist.world_size)
        self.translator = Translator(self.model, self.src_vocab, self.tgt_vocab, cfg.search, self.device)
        self.step = 0
        self.train_seconds = 0.0
        self.wall_seconds = 0.0  # training, validation and checkpoints, over every sitting
        self.best_value: Optional[float] = None  # train.best_metric at the best checkpoint
        self.best_bleu: Optional[float] = None  # dev BLEU at the best checkpoint
        self.best_step: Optional[int] = None  # the update of the best checkpoint
        self.bad_validations = 0
        # The plateau schedule: decays so far, and validations without improvement since the
        # last improvement or decay (train.plateau_patience of them trigger the next decay).
        self.plateau_decays = 0
        self.plateau_bad = 0
        self.checkpoints: List[str] = []
        self.nonfinite_total = 0  # updates skipped for a non-finite loss or gradient
        self.nonfinite_run = 0  # ... in a row
        # The data position and random state that match the weights and self.step: what an
        # emergency save (a peer process died mid-update) must store.
        self._consistent: Optional[Dict[str, Any]] = None
        if resume:
            self._restore()
            if self.is_main and config_changes:
                atomic_write_text(self.out / "config.yaml", cfg.dump())
                self.log("config changed on resume: " + "; ".join(config_changes))
        # The replica that trains: DDP synchronises gradients in backward (and broadcasts
        # rank 0's weights once, here). Saving, validation and search use the bare model.
        self.train_model: torch.nn.Module = self.model
        if self.dist.enabled:
            from torch.nn.parallel import DistributedDataParallel

            self.train_model = DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
            self.log(f"data parallel: {self.dist.world_size} processes ({self.dist.backend}), "
                     f"{tc.accumulate} batch(es) per process and update")

    def _main_first(self, fn, others=None):
        """Run ``fn`` on rank 0, then (if it succeeded) ``others or fn`` on the other ranks.

        A failure on rank 0 is passed on, so no rank waits forever for a rank that stopped.
        """
        if not self.dist.enabled:
            return fn()
        if self.is_main:
            try:
                result = fn()
            except BaseException as exc:
                self.dist.broadcast_object(str(exc) or type(exc).__name__)
                raise
            self.dist.broadcast_object(None)
            return result
        error = self.dist.broadcast_object(None)
        if error is not None:
            raise UserError(f"rank 0 failed: {error}")
        return (others or fn)()

    # -- set-up ------------------------------------------------------------------------
    def _check_out_dir(self) -> None:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            what, advice = write_failure(exc)
            raise UserError(f"{self.out}: cannot create the output directory ({what}): {advice}") from None
        has_run = (self.out / STATE_FILE).exists()
        if has_run and not self.resume:
            raise UserError(f"{self.out} already holds a training run; pass --resume to continue it "
                            "or choose another --out")
        if self.resume and not has_run:
            raise UserError(f"cannot resume: {self.out / STATE_FILE} not found")
        if self.resume and self.is_main:
            # Temporaries of a process killed mid-write (atomic_write names them .NAME.*.tmp):
            # no other trainer writes to this directory, so none of them is in use.
            for tmp in self.out.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)

    def _vocabularies(self) -> tuple:
        vc, data = self.cfg.data.vocab, self.cfg.data
        joint_file, src_file, tgt_file = self.out / "spm.model", self.out / "spm.src.model", self.out / "spm.tgt.model"
        if self.init is not None:  # the checkpoint's embeddings index its vocabulary
            if self.init.src_vocab.to_bytes() == self.init.tgt_vocab.to_bytes():
                self.init.src_vocab.save(joint_file)
                return self.init.src_vocab, self.init.src_vocab
            self.init.src_vocab.save(src_file)
            self.init.tgt_vocab.save(tgt_file)
            return self.init.src_vocab, self.init.tgt_vocab
        if self.resume or joint_file.exists() or src_file.exists():
            if joint_file.exists():
                v = load_vocab(joint_file)
                return v, v
            return load_vocab(src_file), load_vocab(tgt_file)
        if vc.model:
            v = load_vocab(vc.model)
            v.save(joint_file)
            return v, v
        if vc.src_model or vc.tgt_model:
            if not (vc.src_model and vc.tgt_model):
                raise UserError("data.vocab.src_model and data.vocab.tgt_model must be given together")
            s, t = load_vocab(vc.src_model), load_vocab(vc.tgt_model)
            s.save(src_file)
            t.save(tgt_file)
            return s, t
        src, tgt = corpus_files(data.train, self.cfg, "train")
        for _ in iter_parallel(src, tgt):  # line counts and UTF-8 first: clearer errors than sentencepiece's
            pass
        self.log("training the sentencepiece vocabulary ...")
        return train_vocabs(src, tgt, self.out, joint=vc.joint, model_type=vc.type,
                            src_size=vc.src_size or vc.size, tgt_size=vc.tgt_size or vc.size,
                            character_coverage=vc.character_coverage, seed=self.cfg.train.seed)

    def _dev_set(self, cache: Path) -> Optional[Dict[str, Any]]:
        if not self.cfg.data.dev:
            return None
        src, tgt = corpus_files(self.cfg.data.dev, self.cfg, "dev")
        src_lines, ref_lines, _ = read_parallel(src, tgt)
        limit = self.cfg.data.dev_max_sentences
        if limit:
            src_lines, ref_lines = src_lines[:limit], ref_lines[:limit]
        corpus = encode_corpus(src, tgt, self.src_vocab, self.tgt_vocab, cache, max_len=0)
        indices = list(range(min(len(corpus), limit))) if limit else list(range(len(corpus)))
        batches = TokenBatchSampler(corpus.src_lens[indices], corpus.tgt_lens[indices],
                                    self.cfg.data.batch_tokens, shuffle=False).epoch_batches(0)
        return {"src": src_lines, "ref": ref_lines, "corpus": corpus,
                "batches": [[indices[i] for i in b] for b in batches]}

    # -- checkpoints -------------------------------------------------------------------
    def _vocab_bytes(self) -> Dict[str, bytes]:
        return {"src": self.src_vocab.to_bytes(), "tgt": self.tgt_vocab.to_bytes()}

    def _rng_state(self) -> Dict[str, Any]:
        state = {"cpu": torch.get_rng_state()}
        if self.device.type == "cuda":
            state["cuda"] = torch.cuda.get_rng_state(self.device)
        return state

    def save(self, dev_bleu: Optional[float] = None, improved: bool = False, collective: bool = True) -> None:
        """Write a checkpoint and the resumable state: rank 0 writes, every rank calls it.

        ``collective=False`` (an interrupted run) skips the collectives: rank 0 then saves
        its own random state only.
        """
        rank_rng = None
        if self.dist.enabled and collective:
            rank_rng = self.dist.all_gather_object(self._rng_state())
        if self.is_main:
            self._write_checkpoint(dev_bleu, improved, rank_rng)
        if self.dist.enabled and collective:
            self.dist.barrier()

    def _snapshot(self) -> Dict[str, Any]:
        return {"sampler": self.sampler.state_dict(), "rng": torch.get_rng_state()}

    def _resolve_amp(self) -> Optional[torch.dtype]:
        """``train.amp`` for this run: a resumed run keeps the dtype it started with (``auto``
        measures the CPU, and a second measurement could decide otherwise), and every process
        trains in rank 0's choice."""
        saved = None
        if self.resume and (self.out / STATE_FILE).is_file():
            saved = load_train_state(self.out / STATE_FILE).get("amp")
            if saved is None and self.cfg.train.amp == "auto" and self.device.type == "cpu":
                saved = "fp32"  # saved before auto could choose bf16 on a CPU
        if saved is not None:
            dtype, why = (torch.bfloat16 if saved == "bf16" else None), f"{saved} (as this run started)"
        else:
            dtype, why = resolve_amp(self.cfg.train.amp, self.device, self.cfg.model.hidden_size,
                                     torch.get_num_threads())
            if self.dist.enabled:
                dtype, why = self.dist.broadcast_object((dtype, why))
        self.log(f"train.amp {self.cfg.train.amp}: {why}")
        return dtype

    def _check_finite(self) -> None:
        bad = [n for n, p in self.model.named_parameters() if not bool(torch.isfinite(p).all())]
        if bad:
            raise UserError(f"step {self.step}: weight '{bad[0]}' is not finite ({len(bad)} tensors); "
                            f"not writing it over a good checkpoint (the last one is in {self.out})")

    def _write_checkpoint(self, dev_bleu: Optional[float], improved: bool, rank_rng: Optional[list],
                          snapshot: Optional[Dict[str, Any]] = None) -> None:
        self._check_finite()
        snapshot = snapshot or self._snapshot()
        meta = {"step": self.step, "epoch": snapshot["sampler"]["epoch"], "dev_bleu": dev_bleu}
        if self.init is not None:
            meta["init_from"] = self.init.provenance
        name = f"ckpt-{self.step}.safetensors"
        save_model(self.out / name, self.model, self.cfg, self._vocab_bytes(), meta)
        # Without a dev set there is no "best": best.safetensors follows the newest checkpoint,
        # so a run directory always loads the newest weights.
        if improved or not self.has_dev or not (self.out / "best.safetensors").exists():
            save_model(self.out / "best.safetensors", self.model, self.cfg, self._vocab_bytes(), meta)
        if name not in self.checkpoints:
            self.checkpoints.append(name)
        state = {
            "step": self.step,
            "checkpoint": name,
            "optimizer": self.optimizer.state_dict(),
            "sampler": snapshot["sampler"],
            "rng": snapshot["rng"],
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "train_seconds": self.train_seconds,
            "wall_seconds": self._wall_now(),
            "best_bleu": self.best_bleu,
            "best_value": self.best_value,
            "best_step": self.best_step,
            "plateau_decays": self.plateau_decays,
            "plateau_bad": self.plateau_bad,
            "bad_validations": self.bad_validations,
            "checkpoints": list(self.checkpoints),
            "world_size": self.dist.world_size,
            "corpus_key": self._corpus_key(),
            "nonfinite_total": self.nonfinite_total,
            "amp": "bf16" if self.amp_dtype is not None else "fp32",
        }
        if rank_rng is not None:
            state["rank_rng"] = rank_rng
        save_train_state(self.out / STATE_FILE, state)
        # Old checkpoints go only after the state that no longer needs them is on disk.
        while len(self.checkpoints) > max(1, self.cfg.train.keep_last):
            old = self.checkpoints.pop(0)
            (self.out / old).unlink(missing_ok=True)

    def _corpus_key(self) -> Optional[str]:
        return self.corpus.cache_path.name if self.corpus.cache_path is not None else None

    def _restore(self) -> None:
        state = load_train_state(self.out / STATE_FILE)
        mf, _, _ = read_checked(self.out / state["checkpoint"])
        load_state_into(self.model, mf.state, mf.path)
        self.optimizer.load_state_dict(state["optimizer"])
        changed = check_corpus(state.get("corpus_key"), self._corpus_key(), str(self.cfg.data.train),
                               self.corpus_changed_ok)
        self.sampler.load_state_dict(state["sampler"])
        if changed:
            # The saved position indexes the old corpus: continue with the next epoch's order.
            self.sampler.set_epoch(self.sampler.epoch + 1)
            self.log(f"the training corpus changed since step {state['step']}: continuing at epoch "
                     f"{self.sampler.epoch} of the new corpus")
        self.nonfinite_total = int(state.get("nonfinite_total", 0))
        self._restore_rng(state)
        self.step = int(state["step"])
        self.train_seconds = float(state["train_seconds"])
        self.wall_seconds = float(state.get("wall_seconds", self.train_seconds))  # absent before plateau
        self.plateau_decays = int(state.get("plateau_decays", 0))
        self.plateau_bad = int(state.get("plateau_bad", 0))
        self.best_bleu = state["best_bleu"]
        self.best_value = state.get("best_value", self.best_bleu)  # before best_metric: always BLEU
        self.best_step = state.get("best_step")
        self.bad_validations = int(state["bad_validations"])
        self.checkpoints = list(state["checkpoints"])
        self.log(f"resumed from step {self.step} (epoch {self.sampler.epoch}, batch {self.sampler.position})"
                 + (f"; the run had {state.get('world_size', 1)} processes, now {self.dist.world_size}"
                    if state.get("world_size", 1) != self.dist.world_size else ""))

    def _restore_rng(self, state: Dict[str, Any]) -> None:
        """Each rank's own generator when the world size is unchanged; otherwise rank 0
        continues the saved one and the others start fresh streams of their own."""
        ranks = state.get("rank_rng")
        if not self.dist.enabled:
            torch.set_rng_state(state["rng"])
            if state.get("cuda_rng") and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state["cuda_rng"])
        elif ranks and len(ranks) == self.dist.world_size:
            mine = ranks[self.dist.rank]
            torch.set_rng_state(mine["cpu"])
            if "cuda" in mine and self.device.type == "cuda":
                torch.cuda.set_rng_state(mine["cuda"], self.device)
        elif self.is_main:
            torch.set_rng_state(state["rng"])
        else:
            torch.manual_seed(self.cfg.train.seed + _RANK_SEED_STRIDE * self.dist.rank + int(state["step"]))

    # -- validation --------------------------------------------------------------------
    @torch.no_grad()
    def validate(self) -> Dict[str, float]:
        dev = self.dev
        self.model.eval()
        loss_sum, ntok = 0.0, 0
        for indices in dev["batches"]:
            batch = collate(dev["corpus"], indices, self.device)
            logits = self.model(batch.src, batch.src_mask, batch.tgt_in)
            _, nll = label_smoothed_nll(logits, batch.tgt_out, batch.tgt_mask, 0.0)
            loss_sum += float(nll)
            ntok += batch.ntokens
        greedy = self.cfg.train.validation_search == "greedy"
        hyps = self.translator.translate_best(dev["src"], greedy=greedy)
        self.model.train()
        bleu = sacrebleu.corpus_bleu(hyps, [dev["ref"]]).score
        chrf = sacrebleu.corpus_chrf(hyps, [dev["ref"]]).score
        dev_loss = loss_sum / max(ntok, 1)
        return {"dev_loss": dev_loss, "dev_ppl": math.exp(min(dev_loss, 50)), "dev_bleu": bleu, "dev_chrf": chrf}

    # -- the loop ----------------------------------------------------------------------
    def _write_log(self, record: Dict[str, Any]) -> None:
        try:
            with open(self.out / "log.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
        except OSError as exc:
            what, advice = write_failure(exc)
            raise UserError(f"{self.out / 'log.jsonl'}: {what} while appending to it; the checkpoints in "
                            f"{self.out} are intact: {advice}, then resume") from None
        if self.tensorboard is not None:
            self.tensorboard.write(record)

    def _next_batches(self, it) -> List[List[int]]:
        """The index lists of the next update (``accumulate`` batches, crossing epochs)."""
        out = []
        while len(out) < self.cfg.train.accumulate:
            try:
                out.append(next(it))
            except StopIteration:
                if self.cfg.train.max_epochs and self.sampler.epoch >= self.cfg.train.max_epochs:
                    break
                it = iter(self.sampler)
                self._iter = it
        return out

    def train_step(self, batches: List[List[int]]) -> Dict[str, float]:
        """One optimiser update over ``batches`` (gradient accumulation), loss per target token."""
        tc = self.cfg.train
        lr = learning_rate(tc, self.step, self.sampler.epoch, self.plateau_decays)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        collated = [collate(self.corpus, idx, self.device) for idx in batches]
        ntokens = sum(b.ntokens for b in collated)
        world = self.dist.world_size
        if self.dist.enabled:
            # Normalise by the update's tokens over all processes; DDP averages the
            # gradients over the N ranks, hence the factor N.
            ntokens = int(self.dist.all_reduce_sum([ntokens], self.device)[0])
        loss_total, nll_total = 0.0, 0.0
        for k, batch in enumerate(collated):
            # Only the update's last backward synchronises gradients between processes.
            sync = k == len(collated) - 1 or not self.dist.enabled
            with contextlib.nullcontext() if sync else self.train_model.no_sync():
                with torch.autocast(self.device.type, dtype=self.amp_dtype or torch.bfloat16,
                                    enabled=self.amp_dtype is not None):
                    logits = self.train_model(batch.src, batch.src_mask, batch.tgt_in)
                    loss, nll = label_smoothed_nll(logits, batch.tgt_out, batch.tgt_mask, tc.label_smoothing)
                (loss * world / ntokens).backward()
            loss_total += loss.detach()
            nll_total += nll.detach()
        if self.dist.enabled:
            loss_total, nll_total = self.dist.all_reduce_sum([loss_total, nll_total], self.device)
        # The norm is computed even without clipping: an infinite gradient with a finite loss
        # (overflow in backward) must not reach the weights either. After DDP's all-reduce
        # every rank sees the same gradients, hence the same verdict.
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                              tc.clip_norm if tc.clip_norm > 0 else float("inf"))
        loss_value = float(loss_total)
        if not (math.isfinite(loss_value) and bool(torch.isfinite(norm))):
            self.optimizer.zero_grad(set_to_none=True)
            self.nonfinite_total += 1
            self.nonfinite_run += 1
            return {"skipped": True, "loss": loss_value, "lr": lr, "ntokens": ntokens}
        self.nonfinite_run = 0
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return {"loss": loss_value / ntokens, "nll": float(nll_total) / ntokens, "lr": lr, "ntokens": ntokens}

    def run(self) -> Dict[str, Any]:
        with StopSignals(self.log) as signals:
            try:
                return self._run(signals)
            except RuntimeError as exc:
                if not self.dist.enabled or isinstance(exc, UserError):
                    raise
                # A collective failed: a peer process died. Rank 0 saves what it has (the
                # weights and data position of the last whole update) without collectives.
                self._emergency_save()
                raise UserError(f"rank {self.dist.rank}: lost contact with the other processes at step "
                                f"{self.step} ({str(exc).splitlines()[0][:160]}); "
                                + ("saved a checkpoint, continue with --resume" if self.is_main
                                   else "rank 0 saves the checkpoint")) from None

    def _emergency_save(self) -> None:
        if not self.is_main:
            return
        try:
            self._write_checkpoint(None, False, None, snapshot=self._consistent)
            self.log(f"saved ckpt-{self.step}.safetensors after losing the other processes")
        except Exception as exc:  # the previous checkpoint is intact (atomic writes)
            self.log(f"could not save after losing the other processes: {exc}")

    def _should_stop(self, signals: StopSignals, budget: Optional[float]) -> Optional[str]:
        """``"signal"``, ``"time_budget"`` or None; one all-reduce agrees on it over all ranks."""
        flags = [float(signals.received is not None),
                 float(budget is not None and self.train_seconds >= budget)]
        if self.dist.enabled:
            flags = self.dist.all_reduce_sum(flags, self.device)
        if flags[0] > 0:
            return "signal"
        if flags[1] > 0:
            return "time_budget"
        return None

    def _wall_now(self) -> float:
        """Wall-clock seconds of this run over all its sittings, up to now."""
        started = getattr(self, "_sitting_start", None)
        return self.wall_seconds + (time.perf_counter() - started if started is not None else 0.0)

    def _run(self, signals: StopSignals) -> Dict[str, Any]:
        tc = self.cfg.train
        self._sitting_start = time.perf_counter()
        self.model.train()
        budget = tc.max_minutes * 60 if tc.max_minutes else None
        save_every = tc.save_every if tc.save_every is not None else tc.validate_every
        window = {"loss": 0.0, "nll": 0.0, "tokens": 0, "seconds": 0.0, "steps": 0}
        last: Dict[str, Any] = {}
        validated_at = saved_at = self.step
        stop_reason = "max_steps"
        bar = tqdm(total=tc.max_steps, initial=self.step, disable=not (tc.progress and self.is_main) or None,
                   file=sys.stderr, dynamic_ncols=True, leave=False)
        self._iter = iter(self.sampler)
        self._consistent = self._snapshot()
        while self.step < tc.max_steps:
            stop = self._should_stop(signals, budget)
            if stop:
                stop_reason = stop
                break
            batches = self._next_batches(self._iter)
            if not batches:
                stop_reason = "max_epochs"
                break
            t0 = time.perf_counter()
            stats = self.train_step(batches)
            elapsed = time.perf_counter() - t0
            self.train_seconds += elapsed
            self._consistent = self._snapshot()
            if stats.get("skipped"):
                self.log(f"step {self.step:>6}  non-finite loss or gradient: update skipped "
                         f"({self.nonfinite_run} in a row, {self.nonfinite_total} in all)")
                if self.is_main:
                    self._write_log({"step": self.step, "skipped_nonfinite": self.nonfinite_total,
                                     "nonfinite_in_a_row": self.nonfinite_run})
                if self.nonfinite_run >= tc.max_nonfinite:
                    self.save()  # the weights are still finite: keep the data position
                    raise UserError(f"{self.nonfinite_run} non-finite losses in a row at step {self.step} "
                                    f"(train.max_nonfinite); the last checkpoint, ckpt-{self.step}, has finite "
                                    f"weights: lower train.lr or check the data before resuming")
                continue
            window["loss"] += stats["loss"] * stats["ntokens"]
            window["nll"] += stats["nll"] * stats["ntokens"]
            window["tokens"] += stats["ntokens"]
            window["seconds"] += elapsed
            window["steps"] += 1
            bar.update(1)
            if self.step % tc.log_every == 0 or self.step == tc.max_steps:
                last = self._log_window(window, stats["lr"])
                bar.set_postfix(loss=f"{last['loss']:.3f}", lr=f"{last['lr']:.2e}",
                                tok_s=f"{last['tokens_per_s']:.0f}")
                window = {k: 0 for k in window}
            if self.has_dev and tc.validate_every and self.step % tc.validate_every == 0:
                stop_early = self._validate_and_save()
                validated_at = saved_at = self.step  # before the break: no second validation below
                if stop_early:
                    stop_reason = "early_stopping"
                    break
            elif save_every and self.step % save_every == 0:
                self.save()
                saved_at = self.step
        bar.close()
        if window["steps"]:
            last = self._log_window(window, learning_rate(tc, max(self.step - 1, 0), self.sampler.epoch,
                                                          self.plateau_decays))
        if stop_reason == "signal":
            self.stop_signal = signals.name or "signal"
            self.log(f"{self.stop_signal}: stopping at step {self.step}")
            final = self.step != saved_at or not (self.out / STATE_FILE).exists()
            if self.dist.broadcast_object(final):
                self.save()  # no validation: a stopping process has seconds, not minutes
        else:
            final = (self.step != validated_at if self.has_dev else self.step != saved_at) \
                or not (self.out / STATE_FILE).exists()
            if self.dist.broadcast_object(final):  # rank 0's file system decides
                if self.has_dev:
                    self._validate_and_save()
                else:
                    self.save()
        summary = {"steps": self.step, "stop_reason": stop_reason, "train_seconds": round(self.train_seconds, 1),
                   "wall_seconds": round(self._wall_now(), 1), "best_dev_bleu": self.best_bleu,
                   "best_metric": tc.best_metric, "best_value": self.best_value,
                   "best_step": self.best_step, **{k: last[k] for k in ("loss", "tokens_per_s") if k in last}}
        if self.nonfinite_total:
            summary["skipped_nonfinite"] = self.nonfinite_total
        self.log("training finished: " + json.dumps(summary))
        return summary

    def _log_window(self, window: Dict[str, float], lr: float) -> Dict[str, Any]:
        tokens = max(window["tokens"], 1)
        record = {
            "step": self.step,
            "epoch": self.sampler.epoch,
            "loss": window["loss"] / tokens,
            "nll": window["nll"] / tokens,
            "ppl": math.exp(min(window["nll"] / tokens, 50)),
            "lr": lr,
            "tokens_per_s": window["tokens"] / max(window["seconds"], 1e-9),
            "train_seconds": round(self.train_seconds, 2),
        }
        if self.nonfinite_total:
            record["skipped_nonfinite"] = self.nonfinite_total
        if not self.is_main:
            return record
        self._write_log(record)
        if not self.cfg.train.progress or not sys.stderr.isatty():
            self.log(f"step {record['step']:>6}  loss {record['loss']:.3f}  ppl {record['ppl']:.1f}  "
                     f"lr {record['lr']:.2e}  {record['tokens_per_s']:.0f} tok/s")
        return record

    def _validate_and_save(self) -> bool:
        """Validate (rank 0 only), checkpoint, and say whether early stopping should end
        training; every rank gets rank 0's verdict."""
        metrics, bleu, improved = None, None, False
        if self.is_main:
            metrics = self.validate()
            bleu = metrics["dev_bleu"]
            value = metrics[BEST_METRICS[self.cfg.train.best_metric]]
            improved = self.best_value is None or (
                value < self.best_value if self.cfg.train.best_metric == "loss" else value > self.best_value)
            if improved:
                self.best_value, self.best_bleu, self.best_step = value, bleu, self.step
                self.bad_validations = self.plateau_bad = 0
            else:
                self.bad_validations += 1
                self._note_plateau()
        if self.dist.enabled:
            (self.best_value, self.best_bleu, self.best_step, self.bad_validations, self.plateau_bad,
             self.plateau_decays, bleu, improved) = self.dist.broadcast_object(
                (self.best_value, self.best_bleu, self.best_step, self.bad_validations, self.plateau_bad,
                 self.plateau_decays, bleu, improved))
        self.save(dev_bleu=bleu, improved=improved)
        if self.is_main:
            record = {"step": self.step, **metrics, "best_dev_bleu": self.best_bleu,
                      f"best_dev_{self.cfg.train.best_metric}": self.best_value,
                      "train_seconds": round(self.train_seconds, 2), "wall_seconds": round(self._wall_now(), 2)}
            if self.cfg.train.schedule == "plateau":
                record["plateau_decays"] = self.plateau_decays
            self._write_log(record)
            self.log(f"step {self.step:>6}  dev loss {metrics['dev_loss']:.3f}  BLEU {bleu:.2f}  "
                     f"chrF {metrics['dev_chrf']:.2f}" + ("  (best)" if improved else ""))
        patience = self.cfg.train.patience
        return patience is not None and self.bad_validations >= patience

    def _note_plateau(self) -> None:
        """One more validation without improvement of ``train.best_metric``: under the
        ``plateau`` schedule, the ``plateau_patience``-th in a row since the last
        improvement or decay decays the rate."""
        tc = self.cfg.train
        if tc.schedule != "plateau":
            return
        self.plateau_bad += 1
        if self.plateau_bad >= tc.plateau_patience:
            self.plateau_decays += 1
            self.plateau_bad = 0
            self.log(f"step {self.step:>6}  dev {tc.best_metric} has not improved for {tc.plateau_patience} "
                     f"validations: learning rate x{tc.decay_rate:g} (decay {self.plateau_decays})")

