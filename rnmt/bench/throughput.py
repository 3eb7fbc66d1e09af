"""Training and decoding throughput of any config, measured the way users train.

Training: the run's own updates on real token batches from the config's corpus
(`Trainer.train_step`: batch assembly, forward, label-smoothed loss, backward, clipping and
the config's optimiser, in the precision ``train.amp`` resolves to, ``amp`` in the report,
with the compiled step or CUDA graphs where the config asks); the first ``warmup`` steps
are not timed.
Throughput counts real target tokens (padding excluded) per second.

Decoding: beam search over the first sentences of the dev set (or the training set when the
config has none), reporting sentences/s and output tokens/s.

The model is freshly initialised: throughput does not depend on the weights' values except
through output lengths, so decoding speed should be read on trained models (``--model``).
"""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any, Dict, Optional

import torch

from rnmt.config import Config
from rnmt.data import TokenBatchSampler, collate, read_lines
from rnmt.models import count_parameters
from rnmt.models.base import TranslationModel
from rnmt.search.translator import Translator
from rnmt.training.loss import label_smoothed_nll
from rnmt.training.preflight import train_files
from rnmt.training.trainer import Trainer


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def train_throughput(model: TranslationModel, corpus, cfg: Config, steps: int, warmup: int,
                     device: torch.device) -> Dict[str, float]:
    """Tokens/s of ``steps`` plain fp32 Adam updates of ``model`` after ``warmup``: the same
    update for every system, which is how `rnmt reproduce` and the benchmarks compare two
    systems' speed (`update_throughput` times a run's own update)."""
    opt = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
    sampler = TokenBatchSampler(corpus.src_lens, corpus.tgt_lens, cfg.data.batch_tokens, seed=cfg.train.seed)
    batches = iter(sampler)
    model.train()
    tokens, seconds = 0, 0.0
    for i in range(warmup + steps):
        try:
            indices = next(batches)
        except StopIteration:
            batches = iter(sampler)
            indices = next(batches)
        batch = collate(corpus, indices, device)
        start = time.perf_counter()
        logits = model(batch.src, batch.src_mask, batch.tgt_in)
        loss, _ = label_smoothed_nll(logits, batch.tgt_out, batch.tgt_mask, cfg.train.label_smoothing)
        (loss / batch.ntokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.clip_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i >= warmup:
            seconds += time.perf_counter() - start
            tokens += batch.ntokens
    return {"train_tokens_per_s": tokens / max(seconds, 1e-9), "train_steps": steps,
            "train_seconds": seconds}


def update_throughput(trainer: Trainer, steps: int, warmup: int) -> Dict[str, float]:
    """Tokens/s of ``steps`` of the run's own updates (`Trainer.train_step`: its precision,
    optimiser, compiled step or CUDA graphs, batch assembly included) after ``warmup``."""
    source = trainer.sampler.forever()
    tokens, seconds = 0, 0.0
    for i in range(warmup + steps):
        indices = next(source)
        start = time.perf_counter()
        stats = trainer.train_step([indices])
        if trainer.device.type == "cuda":
            torch.cuda.synchronize()
        if i >= warmup:
            seconds += time.perf_counter() - start
            tokens += int(stats["ntokens"])
    return {"train_tokens_per_s": tokens / max(seconds, 1e-9), "train_steps": steps, "train_seconds": seconds}


def decode_throughput(translator: Translator, sources: list, beam: int) -> Dict[str, float]:
    start = time.perf_counter()
    results = translator.translate(sources, beam=beam)
    seconds = time.perf_counter() - start
    out_tokens = sum(len(r[0].tokens) + 1 for r in results)
    words = sum(len(r[0].text.split()) for r in results)
    return {"decode_sentences": len(sources), "decode_seconds": seconds,
            "decode_sentences_per_s": len(sources) / max(seconds, 1e-9),
            "decode_tokens_per_s": out_tokens / max(seconds, 1e-9),
            "decode_words_per_s": words / max(seconds, 1e-9)}


def benchmark_config(cfg: Config, work_dir: Path, steps: int = 30, warmup: int = 5,
                     decode_sentences: int = 100, beam: int = 5, model_path: Optional[str] = None,
                     device: str = "cpu") -> Dict[str, Any]:
    """Train ``steps`` timed updates and beam-decode ``decode_sentences`` dev sentences."""
    cfg.train.device = device
    cfg.data.dev = None  # the trainer's set-up gives vocabulary + encoded corpus; no validation
    # the sentences to decode: data.test's source side (read now, so that a missing or
    # unreadable file is a one-line error before the training), else the training file's
    test_lines = read_lines(f"{cfg.data.test}.{cfg.data.src}") if cfg.data.test and decode_sentences > 0 else None
    setup = Trainer(cfg, work_dir, log=lambda *_: None)
    first = train_files(setup.cfg)[0]  # the first corpus of data.train
    dev = (first.src, first.tgt)
    torch.manual_seed(cfg.train.seed)
    model = setup.model
    report: Dict[str, Any] = {"arch": cfg.model.arch, "cell": cfg.model.cell,
                              "params": count_parameters(model)["total"], "threads": torch.get_num_threads(),
                              "amp": "bf16" if setup.amp_dtype is not None else "fp32"}
    report.update(update_throughput(setup, steps, warmup))
    lines = test_lines if test_lines is not None else read_lines(dev[0]) if decode_sentences > 0 else []
    sources = [line for line in lines if line.strip()][:decode_sentences]
    if model_path:
        from rnmt.models import load_model

        loaded = load_model(model_path, setup.device)
        translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search, setup.device)
    else:
        translator = Translator(model, setup.src_vocab, setup.tgt_vocab, cfg.search, setup.device)
    report.update(decode_throughput(translator, sources, beam))
    report["peak_rss_mb"] = peak_rss_mb()
    return report
