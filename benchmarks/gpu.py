"""rnmt on one GPU in one command: its systems in fp32 and bf16, the papers' 1000-unit steps, the peers.

    python -m benchmarks.gpu --data .gpudata/data --prepared .gpudata/prepared --out "$OUT" --name h100
    python -m benchmarks.gpu --device cpu --steps 3 --warmup 1 --dims 32,64 ...    # a smoke test on the CPU

docs/gpu.md gives the device calls. In order, within ``--budget-minutes`` (what does not fit
is written as skipped):

1. **rnmt's systems at the peer size** (``--systems``): RNNSearch-GRU with the config and data
   of benchmarks/run.py's ``rnmt`` row (benchmarks/configs/rnnsearch-gru.yaml on the shared
   joint 8k BPE corpus of benchmarks/prepare.py), and ATR, DTMT#1, DTMT#4 and Cseq2seq-I (LS)
   from configs/papers/ at the same embedding/hidden size (``--dims``, 256,512), batch
   (``--batch-tokens`` 4000) and corpus, each in every ``--precisions`` (fp32 is
   ``train.amp: none``, bf16 is ``train.amp: bf16``: autocast, as rnmt trains). Training runs
   the trainer's own update (`Trainer.train_step`: autocast, loss, backward, clipping, the
   config's optimiser) on its own batches; after ``--warmup`` updates the window runs until
   ``--steps`` updates or ``--seconds`` seconds, with the device synchronised before each
   clock reading. Target tokens/s counts real target tokens (``</s>`` included, padding
   not). Then the trained model decodes the first ``--decode-sentences`` dev sentences with
   beam ``--beam`` (bf16 rows under bf16 autocast), timed the same way, ``--decode-chunk``
   sentences a call, no further chunk after ``--decode-seconds``. GPU memory:
   ``torch.cuda.max_memory_allocated`` / ``max_memory_reserved`` over each phase (the cache
   is emptied between systems).
2. **The papers' sizes** (``--paper-systems``): seconds per update of ATR (Table 4: E 620,
   d 1000, 40k vocabularies, 80-sentence batches), DTMT#4 (d = E = 1024, 34.3k vocabularies,
   8,192-token batches) and Cseq2seq-I (d_w 620, d_h 1000, 30k vocabularies, 80-sentence
   batches) with the vocabulary sizes of their configs (the corpus's 8k ids index into
   them), each in ``--paper-precisions``, ``--paper-seconds`` at most.
3. **The peers** (``--peers`` fairseq,opennmt): benchmarks/run.py's drivers on this device
   (``--peer-warmup`` + ``--peer-steps`` updates, then the same dev sentences), in fp32 and,
   for rnmt's bf16, in their fp16 mixed precision (neither has bf16 on a GPU:
   `PEER_PRECISION`), the packages found under ``--peer-site`` (installed from the carried
   wheels by benchmarks/peers/gpu_install.sh) or in the peer's venv;
   ``train_ratio_vs_fairseq`` is rnmt RNNSearch-GRU's target tokens/s over fairseq's LSTM's
   ("fp32", and "bf16/fp16"), ``decode_ratio_vs_fairseq`` the same for sentences/s.

``--profile`` adds, for the systems of ``--profile-systems``, a torch.profiler table of one
training update and one beam search over ``--profile-sentences`` sentences: top kernels by
device time, the number of kernels launched and the device's busy share of the wall time
(``OUT/profile-NAME.txt``). ``OUT/NAME.json`` is written after every system, so a run cut
short keeps what it measured; the table is printed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import torch

from benchmarks import run as peer_run  # (benchmarks/run.py: the peers' harness)
from benchmarks.peers.base import Settings
from benchmarks.prepare import DEFAULT_DATA, prepare

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# name: (config, label)
SYSTEMS: Dict[str, tuple] = {
    "rnnsearch-gru": ("benchmarks/configs/rnnsearch-gru.yaml", "RNNSearch-GRU"),
    "atr": ("configs/papers/atr/rnnsearch-atr.yaml", "RNNSearch-ATR"),
    "dtmt1": ("configs/papers/dtmt/dtmt1.yaml", "DTMT#1"),
    "dtmt4": ("configs/papers/dtmt/dtmt4.yaml", "DTMT#4"),
    "cseq2seq1": ("configs/papers/cseq2seq/cseq2seq1-ls.yaml", "Cseq2seq-I (LS)"),
}
# name: (config, label, sentences per batch or None for the config's token batches, batch as the paper gives it)
PAPER_SYSTEMS: Dict[str, tuple] = {
    "atr": ("configs/papers/atr/rnnsearch-atr.yaml", "RNNSearch-ATR (ATR Table 4)", 80, "80 sentences"),
    "dtmt4": ("configs/papers/dtmt/dtmt4.yaml", "DTMT#4", None, "8,192 tokens (4,096 on each of 2 GPUs)"),
    "cseq2seq1": ("configs/papers/cseq2seq/cseq2seq1-ls.yaml", "Cseq2seq-I (LS)", 80, "80 sentences"),
}
PRECISIONS = {"fp32": "none", "bf16": "bf16"}  # precision: train.amp
PEERS = ("fairseq", "opennmt")
MIB = 1024.0 * 1024.0


def _names(text: str, allowed, what: str) -> List[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in names if x not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return names


# -- the machine ------------------------------------------------------------------------------
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def memory(device: torch.device) -> Dict[str, Optional[float]]:
    """Peak GPU memory of the phase since `reset_memory` (None on the CPU)."""
    if device.type != "cuda":
        return {"peak_allocated_mib": None, "peak_reserved_mib": None}
    return {"peak_allocated_mib": torch.cuda.max_memory_allocated(device) / MIB,
            "peak_reserved_mib": torch.cuda.max_memory_reserved(device) / MIB}


def commit(explicit: Optional[str]) -> str:
    """The commit measured: --commit, else git, else .gpudata/COMMIT (written before a device
    call, whose copy of the tree has no .git), else "unknown"."""
    if explicit:
        return explicit
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=30).stdout.strip()
            return out.stdout.strip() + ("+changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    stamp = REPO / ".gpudata" / "COMMIT"
    return stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else "unknown"


def machine(device: torch.device) -> Dict[str, Any]:
    info: Dict[str, Any] = {"device": str(device), "torch": torch.__version__, "cuda": torch.version.cuda,
                            "python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
                            "cpu_threads": torch.get_num_threads()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(device_name=props.name, device_memory_mib=props.total_memory / MIB,
                    multiprocessors=props.multi_processor_count, capability=f"{props.major}.{props.minor}",
                    cudnn=torch.backends.cudnn.version(), bf16_supported=torch.cuda.is_bf16_supported())
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            info["driver"] = smi.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    else:
        info["device_name"] = "cpu"
    return info


# -- one rnmt system --------------------------------------------------------------------------
def make_trainer(config: str, overrides: List[str], work: Path):
    """A Trainer for ``config`` (its vocabulary, corpus, model, optimiser and precision)."""
    from rnmt.config import load_config
    from rnmt.training.trainer import Trainer

    cfg = load_config(str(REPO / config), overrides, warn_deprecated=False)
    # The papers' vocabulary sizes are in their configs; the shared sentencepiece model decides.
    cfg.model.src_vocab_size = cfg.model.tgt_vocab_size = None
    return Trainer(cfg, work, log=lambda *_: None)


def timed_updates(trainer, batches, device: torch.device, warmup: int, steps: int, seconds: float,
                  log: Callable[[str], None]) -> Dict[str, Any]:
    """``warmup`` untimed updates (at most half of ``seconds``, at least one), then updates
    until ``steps`` or ``seconds``: target tokens/s and seconds per update of the window."""
    start = time.perf_counter()
    done_warmup = 0
    while done_warmup < max(1, warmup) and (done_warmup == 0 or time.perf_counter() - start < seconds / 2):
        trainer.train_step([next(batches)])
        done_warmup += 1
    sync(device)
    times: List[float] = []
    tokens = 0
    window_start = time.perf_counter()
    while len(times) < steps and (not times or time.perf_counter() - window_start < seconds):
        t0 = time.perf_counter()
        stats = trainer.train_step([next(batches)])
        sync(device)
        times.append(time.perf_counter() - t0)
        tokens += int(stats["ntokens"])
    total = sum(times)
    log(f"    {len(times)} updates in {total:.2f} s after {done_warmup} warm-up updates: "
        f"{tokens / total:,.0f} target tok/s, {statistics.median(times) * 1000:.1f} ms/update (median)")
    return {"warmup_updates": done_warmup, "updates": len(times), "seconds": total, "target_tokens": tokens,
            "target_tokens_per_s": tokens / total if total > 0 else None,
            "target_tokens_per_update": tokens / len(times),
            "seconds_per_update_mean": total / len(times), "seconds_per_update_median": statistics.median(times),
            "seconds_per_update_min": min(times)}


def failure_note(exc: BaseException) -> str:
    """A row's note for an exception: its type and the first line of its message."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"


def compiled_window(trainer, batches, device: torch.device, args, log: Callable[[str], None]) -> Dict[str, Any]:
    """The same model and batches again with teacher forcing's step through torch.compile
    (`train.compile_step`): the compile (first updates, untimed, their seconds reported),
    then a window as ``train``'s. A failure to compile is reported in the row, not raised."""
    if not trainer.model.compile_step():
        return {"status": "not compilable"}
    try:
        t0 = time.perf_counter()
        for _ in range(max(1, args.compile_warmup)):  # a new batch shape may compile once more
            trainer.train_step([next(batches)])
        sync(device)
        compile_seconds = time.perf_counter() - t0
        window = timed_updates(trainer, batches, device, args.warmup, args.steps, args.seconds, log)
    except Exception as exc:  # the eager row above stands whatever happens here
        note = failure_note(exc)
        log(f"    torch.compile failed: {note}")
        return {"status": "failed", "note": note}
    log(f"    compiled step: {window['target_tokens_per_s']:,.0f} target tok/s after "
        f"{compile_seconds:.1f} s of compiling updates")
    return {"status": "ok", "compile_seconds": compile_seconds, **window, **memory(device)}


def autocast(device: torch.device, precision: str):
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def decode(trainer, sources: List[str], beam: int, device: torch.device, precision: str, chunk: int = 0,
           max_seconds: float = 0.0) -> Dict[str, Any]:
    """Beam search over ``sources`` with the trained model, the device synchronised around it:
    in chunks of ``chunk`` sentences (0: one call), stopping after the chunk that passes
    ``max_seconds`` (0: none), so a slow system decodes a prefix of the same sentences
    (``complete`` says whether it decoded them all)."""
    from rnmt.search.translator import Translator

    translator = Translator(trainer.model, trainer.src_vocab, trainer.tgt_vocab, trainer.cfg.search, device)
    # The model and the optimiser's state stay resident: the peak is read against that baseline.
    resident = torch.cuda.memory_allocated(device) / MIB if device.type == "cuda" else None
    with torch.inference_mode(), autocast(device, precision):
        translator.translate(sources[: min(len(sources), 8)], beam=beam)  # warm-up: allocator, kernels
        sync(device)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        results: list = []
        step = chunk or len(sources)
        t0 = time.perf_counter()
        for start in range(0, len(sources), step):
            results += translator.translate(sources[start:start + step], beam=beam)
            sync(device)
            if max_seconds and time.perf_counter() - t0 > max_seconds:
                break
        seconds = time.perf_counter() - t0
    done = sources[: len(results)]
    out_tokens = sum(len(r[0].tokens) + 1 for r in results)
    src_tokens = sum(len(trainer.src_vocab.encode(s)) + 1 for s in done)
    return {"sentences": len(done), "complete": len(done) == len(sources), "chunk": step, "beam": beam,
            "seconds": seconds,
            "sentences_per_s": len(done) / seconds if seconds > 0 else None,
            "output_tokens": out_tokens, "output_tokens_per_s": out_tokens / seconds if seconds > 0 else None,
            "output_per_source_token": out_tokens / max(src_tokens, 1), "resident_before_mib": resident,
            **memory(device)}


def profile_text(title: str, fn: Callable[[], Any], device: torch.device, rows: int) -> str:
    """torch.profiler over one call of ``fn`` (after one unprofiled call): kernels launched,
    the device's busy share of the wall time and the top operations by device (or CPU) time."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    fn()
    sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        fn()
        sync(device)
    wall = time.perf_counter() - t0
    events = prof.key_averages()
    head = [f"== {title}", f"wall time (profiled) {wall * 1000:.1f} ms"]
    sort = "self_cpu_time_total"
    if device.type == "cuda":
        sort = "self_device_time_total" if events and hasattr(events[0], "self_device_time_total") \
            else "self_cuda_time_total"
        try:
            kernels = [e for e in events if getattr(e, "device_type", None) == DeviceType.CUDA]
            busy = sum(float(getattr(e, sort, 0) or 0) for e in kernels) / 1e6
            head.append(f"kernels launched {sum(e.count for e in kernels)}; device busy {busy * 1000:.1f} ms "
                        f"= {busy / wall:.0%} of the wall time")
        except (AttributeError, TypeError) as exc:  # the table below still says it
            head.append(f"(kernel count not read: {exc})")
    return "\n".join(head) + "\n" + events.table(sort_by=sort, row_limit=rows) + "\n"


def system_overrides(dims, batch_tokens: int, prepared: Path, stats: Dict, work: Path, device: str,
                     precision: str, threads: Optional[int]) -> List[str]:
    """The config overrides of a peer-size system's row: its size and batches, the prepared
    data, the device and precision, seed 1, and the eager step."""
    E, H = dims
    overrides = [f"model.emb_size={E}", f"model.hidden_size={H}", f"data.batch_tokens={batch_tokens}",
                 f"data.train={prepared / 'raw' / 'train'}", "data.dev=null", "data.test=null",
                 "data.src=src", "data.tgt=tgt", f"data.max_len={stats['max_len']}",
                 f"data.vocab.model={prepared / 'spm.model'}", f"data.cache_dir={work / 'cache'}",
                 f"train.device={device}", f"train.amp={PRECISIONS[precision]}", "train.seed=1",
                 "train.progress=false",
                 # the `train` row is the eager step; --compile-step adds `train_compiled`, which is
                 # what the default `auto` runs on a GPU for the systems whose units are not fused
                 "train.compile_step=false"]
    if threads:
        overrides.append(f"train.threads={threads}")
    return overrides


def run_system(name: str, precision: str, args, prepared: Path, stats: Dict, work: Path, sources: List[str],
               device: torch.device, log, profiles: List[str]) -> Dict[str, Any]:
    from rnmt.models import count_parameters

    config, label = SYSTEMS[name]
    E, H = args.dims
    overrides = system_overrides(args.dims, args.batch_tokens, prepared, stats, work, args.device, precision,
                                 args.threads) + [f"train.cuda_graphs={args.cuda_graphs == 'on'}"]
    row: Dict[str, Any] = {"system": name, "label": label, "config": config, "precision": precision,
                           "dims": [E, H], "batch_tokens": args.batch_tokens, "status": "ok"}
    log(f"[{name} {precision}] {label}, {E}/{H}, {args.batch_tokens}-token batches")
    reset_memory(device)
    trainer = make_trainer(config, overrides, work / f"{name}-{precision}")
    row["parameters"] = count_parameters(trainer.model)["total"]
    row["amp"] = "bf16" if trainer.amp_dtype is not None else "fp32"
    batches = trainer.sampler.forever()
    row["train"] = timed_updates(trainer, batches, device, args.warmup, args.steps, args.seconds, log)
    row["train"].update(memory(device))
    graphs = getattr(trainer, "update_graphs", None)
    if graphs is not None:  # train.cuda_graphs: shapes recorded (warm-up included) and replays
        row["train"].update(graph_shapes=len(graphs.entries), graph_replays=graphs.replays,
                            graph_eager=graphs.eager, graph_host_mib=round(graphs.host_mib, 1))
        log(f"    CUDA graphs: {len(graphs.entries)} batch shapes recorded ({graphs.host_mib:,.0f} MiB of host "
            f"memory), {graphs.replays} replays, {graphs.eager} updates of unrecorded shapes")
    if args.decode_sentences:
        from rnmt.search import step_graphs

        reset_memory(device)
        with step_graphs.use(False):  # `decode` is the eager step; --step-graphs adds the graphed one
            row["decode"] = decode(trainer, sources, args.beam, device, precision, args.decode_chunk,
                                   args.decode_seconds)
        d = row["decode"]
        log(f"    decoding {d['sentences']} sentences, beam {d['beam']}: {d['sentences_per_s']:.1f} sentences/s, "
            f"{d['output_tokens_per_s']:,.0f} output tok/s")
        if args.step_graphs and device.type == "cuda" and precision == "fp32":
            # The same sentences again with the step replayed from CUDA graphs (rnmt/search/step_graphs.py).
            reset_memory(device)
            with step_graphs.use(True):
                row["decode_graphs"] = decode(trainer, sources, args.beam, device, precision, args.decode_chunk,
                                              args.decode_seconds)
            g = row["decode_graphs"]
            log(f"    the same with CUDA graphs: {g['sentences_per_s']:.1f} sentences/s, "
                f"{g['output_tokens_per_s']:,.0f} output tok/s ({g['sentences_per_s'] / d['sentences_per_s']:.2f}x)")
    if args.profile and name in args.profile_systems:
        profiles.append(profile_text(f"{name} {precision}: one training update",
                                     lambda: trainer.train_step([next(batches)]), device, args.profile_rows))

        def search() -> None:
            from rnmt.search.translator import Translator

            tr = Translator(trainer.model, trainer.src_vocab, trainer.tgt_vocab, trainer.cfg.search, device)
            with torch.inference_mode(), autocast(device, precision):
                tr.translate(sources[: args.profile_sentences], beam=args.beam)

        profiles.append(profile_text(f"{name} {precision}: beam search ({args.beam}) over "
                                     f"{min(args.profile_sentences, len(sources))} sentences",
                                     search, device, args.profile_rows))
    if args.compile_step:  # last: from here on the model's teacher forcing runs the compiled step
        row["train_compiled"] = compiled_window(trainer, batches, device, args, log)
        if args.profile and name in args.profile_systems and row["train_compiled"]["status"] == "ok":
            profiles.append(profile_text(f"{name} {precision}: one training update, the step compiled",
                                         lambda: trainer.train_step([next(batches)]), device, args.profile_rows))
    return row  # the caller frees the model (reset_memory)


def run_paper_system(name: str, precision: str, args, prepared: Path, work: Path, device: torch.device,
                     log) -> Dict[str, Any]:
    """Seconds per update at a paper's size: its config's dimensions, vocabulary sizes and batches."""
    from rnmt.config import load_config
    from rnmt.data import TokenBatchSampler
    from rnmt.models import build_model, count_parameters
    from rnmt.models.base import uniform_init_
    from rnmt.training.optimizers import build_optimizer

    config, label, sentences, batch_text = PAPER_SYSTEMS[name]
    paper = load_config(str(REPO / config), warn_deprecated=False)
    max_len = paper.data.max_len
    overrides = [f"data.train={prepared / 'raw' / 'train'}", "data.dev=null", "data.test=null", "data.src=src",
                 "data.tgt=tgt", f"data.vocab.model={prepared / 'spm.model'}", f"data.cache_dir={work / 'cache'}",
                 f"train.device={args.device}", f"train.amp={PRECISIONS[precision]}", "train.seed=1",
                 "train.progress=false"]
    if args.paper_dims:
        overrides += [f"model.emb_size={args.paper_dims[0]}", f"model.hidden_size={args.paper_dims[1]}"]
    if args.threads:
        overrides.append(f"train.threads={args.threads}")
    E, H = args.paper_dims or (paper.model.emb_size, paper.model.hidden_size)
    vocab = ((args.paper_vocab, args.paper_vocab) if args.paper_vocab
             else (paper.model.src_vocab_size, paper.model.tgt_vocab_size))
    row: Dict[str, Any] = {"system": name, "label": label, "config": config, "precision": precision, "dims": [E, H],
                           "vocab": list(vocab), "batch": batch_text, "max_len": max_len, "status": "ok"}
    log(f"[paper {name} {precision}] {label}, {E}/{H}, vocabularies {vocab[0]}/{vocab[1]}, batches of {batch_text}")
    reset_memory(device)
    trainer = make_trainer(config, overrides, work / f"paper-{name}-{precision}")
    # The paper's vocabulary sizes: a model of that size in place of the 8k one.
    cfg = trainer.cfg
    model = build_model(cfg.model, vocab[0], vocab[1])
    uniform_init_(model, cfg.train.init_scale)
    model.to(trainer.device)
    trainer.model = trainer.train_model = trainer.translator.model = model
    trainer.optimizer = build_optimizer(model.parameters(), cfg.train)
    row["parameters"] = count_parameters(model)["total"]
    row["amp"] = "bf16" if trainer.amp_dtype is not None else "fp32"
    if sentences:
        sampler = TokenBatchSampler(trainer.corpus.src_lens, trainer.corpus.tgt_lens,
                                    max_tokens=sentences * 2 * max_len, seed=1, max_sentences=sentences)
    else:
        sampler = trainer.sampler
    trainer.sampler = sampler
    batches = sampler.forever()
    row["train"] = timed_updates(trainer, batches, device, args.paper_warmup, args.paper_steps, args.paper_seconds,
                                 log)
    row["train"].update(memory(device))
    return row


# -- the peers ----------------------------------------------------------------------------------
def peer_on_site(name: str, site: Optional[Path]):
    """benchmarks/run.py's driver for ``name``; with ``site``, run by this interpreter with
    ``site`` on PYTHONPATH (the packages installed from the carried wheels) instead of the
    peer's venv."""
    peer = peer_run.load_peer(name)
    if site is None:
        return peer
    base = type(peer)

    class OnSite(base):  # type: ignore[valid-type, misc]
        @property
        def python(self) -> Path:
            return Path(sys.executable)

        def env(self, s):
            env = base.env(self, s)
            env["PYTHONPATH"] = str(site)
            return env

        def installed(self):
            module = {"fairseq": "fairseq_cli.train", "opennmt": "onmt.bin.train"}.get(self.name, self.name)
            env = dict(os.environ, PYTHONPATH=str(site))
            out = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, env=env,
                                 timeout=300)
            if out.returncode != 0:
                last = (out.stderr.strip().splitlines() or ["?"])[-1]
                return False, f"{module} does not import from {site}: {last}"
            return True, ""

        def version(self) -> str:
            code = f"from importlib.metadata import version; print(version({self.package!r}))"
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                                 env=dict(os.environ, PYTHONPATH=str(site)))
            return out.stdout.strip() or "?"

    return OnSite()


# rnmt's precision: the peers' nearest. Neither peer trains in bf16 on a GPU (fairseq 0.12.2's
# --bf16 implies --tpu; OpenNMT-py 3.5.1's model_dtype is fp32 or fp16), so rnmt's bf16 rows
# are set against their fp16 mixed precision (fairseq --fp16, OpenNMT-py model_dtype: fp16).
PEER_PRECISION = {"fp32": "fp32", "bf16": "fp16"}


def peer_precisions(precisions: List[str], device: torch.device) -> List[str]:
    """The peers' rows: fp32, and fp16 for rnmt's bf16 (on a GPU only)."""
    return [PEER_PRECISION[p] for p in precisions if device.type == "cuda" or p == "fp32"]


def run_peer(name: str, precision: str, args, prepared: Path, stats: Dict, work: Path, device: torch.device,
             log) -> Dict[str, Any]:
    peer = peer_on_site(name, args.peer_site)
    s = Settings(data=prepared, stats=stats, work=work / f"peer-{name}-{precision}", steps=args.peer_steps,
                 warmup=args.peer_warmup, log_every=args.peer_log_every, threads=args.threads or 2,
                 batch_tokens=args.batch_tokens, emb=args.dims[0], hidden=args.dims[1], beam=args.beam,
                 dev_sentences=args.decode_sentences or None, device=device.type, precision=precision)
    run_args = types.SimpleNamespace(timeout=args.peer_timeout, nice=0, no_decode=not args.decode_sentences)
    log(f"[peer {name} {precision}] {args.peer_warmup} + {args.peer_steps} updates on {device.type}")
    res = peer_run.run_system(peer, s, run_args, log=lambda m: log("    " + m))
    row = {"system": name, "label": peer.label, "precision": precision, "version": res.version,
           "status": res.status, "note": res.note, "parameters": res.parameters,
           "train": {"target_tokens_per_s": res.train_tokens_per_s, "updates": res.train_window_steps,
                     "seconds": res.train_window_seconds, "target_tokens_per_update": res.target_tokens_per_batch,
                     "seconds_per_update_mean": (res.train_window_seconds / res.train_window_steps
                                                 if res.train_window_seconds and res.train_window_steps else None),
                     "peak_rss_mib": res.train_peak_rss_mib, "wall_seconds": res.train_wall_seconds},
           "decode": {"sentences": res.decode_sentences, "beam": args.beam, "seconds": res.decode_seconds,
                      "sentences_per_s": res.decode_sentences_per_s, "output_tokens": res.decode_output_tokens,
                      "output_tokens_per_s": res.decode_tokens_per_s, "peak_rss_mib": res.decode_peak_rss_mib},
           "work": str(s.work)}
    return row


# -- the report -----------------------------------------------------------------------------------
def ratios(payload: Dict[str, Any]) -> None:
    """``train_ratio_vs_fairseq`` (and ``decode_ratio_vs_fairseq``, sentences/s): rnmt
    RNNSearch-GRU over fairseq's LSTM, keyed "fp32" and "bf16/fp16" (rnmt's bf16 against
    fairseq's fp16, `PEER_PRECISION`); on a CPU, where fairseq trains in fp32 only,
    "bf16/fp32"."""
    train: Dict[str, float] = {}
    dec: Dict[str, float] = {}
    on_cpu = payload.get("meta", {}).get("machine", {}).get("device") == "cpu"
    for prec, peer_prec in PEER_PRECISION.items():
        if on_cpu:
            peer_prec = "fp32"  # on a CPU the peers train in fp32 only (`peer_precisions`)
        key = prec if prec == peer_prec else f"{prec}/{peer_prec}"
        ours = next((r for r in payload["systems"] if r["system"] == "rnnsearch-gru" and r["precision"] == prec
                     and r["status"] == "ok"), None)
        theirs = next((r for r in payload["peers"] if r["system"] == "fairseq" and r["precision"] == peer_prec
                       and r["status"] == "ok"), None)
        if not ours or not theirs:
            continue
        a, b = ours["train"].get("target_tokens_per_s"), theirs["train"].get("target_tokens_per_s")
        if a and b:
            train[key] = a / b
        c = (ours.get("train_compiled") or {}).get("target_tokens_per_s")
        if c and b:
            train[f"{key} with the compiled step"] = c / b
        a = (ours.get("decode") or {}).get("sentences_per_s")
        b = (theirs.get("decode") or {}).get("sentences_per_s")
        if a and b:
            dec[key] = a / b
        g = (ours.get("decode_graphs") or {}).get("sentences_per_s")
        if g and b:
            dec[f"{key} with CUDA graphs"] = g / b
    payload["train_ratio_vs_fairseq"] = train
    payload["decode_ratio_vs_fairseq"] = dec


def _f(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _graphs(row: Dict[str, Any]) -> str:
    g = (row.get("decode_graphs") or {}).get("sentences_per_s")
    return "" if g is None else f" ({g:.1f} with CUDA graphs)"


def table(payload: Dict[str, Any]) -> str:
    m = payload["meta"]
    lines = [f"{m['machine'].get('device_name')} | torch {m['machine']['torch']} | CUDA {m['machine']['cuda']} | "
             f"commit {m['commit']}", "",
             "| system | precision | params | target tok/s | ms/update | train peak alloc MiB | sentences/s "
             "| output tok/s | decode peak alloc MiB | status |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in payload["systems"] + payload["peers"]:
        t, d = r.get("train") or {}, r.get("decode") or {}
        c = (r.get("train_compiled") or {}).get("target_tokens_per_s")
        compiled = "" if c is None else f" ({c:,.0f} compiled)"
        mem = t.get("peak_allocated_mib")
        lines.append(
            f"| {r['label']} | {r['precision']} | {_f(r.get('parameters') and r['parameters'] / 1e6, '.2f')}M "
            f"| {_f(t.get('target_tokens_per_s'), ',.0f')}{compiled} "
            f"| {_f(t.get('seconds_per_update_mean') and t['seconds_per_update_mean'] * 1000, '.1f')} "
            f"| {_f(mem, ',.0f')} | {_f(d.get('sentences_per_s'), '.1f')}{_graphs(r)} "
            f"| {_f(d.get('output_tokens_per_s'), ',.0f')} "
            f"| {_f(d.get('peak_allocated_mib'), ',.0f')} | {r['status']}{': ' + r['note'] if r.get('note') else ''} |")
    if payload["paper_sizes"]:
        lines += ["", "| paper size | precision | params | batch | s/update (median) | target tok/update "
                  "| peak alloc MiB | status |", "|---|---|---:|---|---:|---:|---:|---|"]
        for r in payload["paper_sizes"]:
            t = r.get("train") or {}
            dims = "/".join(str(x) for x in r["dims"]) if r.get("dims") else ""
            lines.append(f"| {r['label']} {dims} | {r['precision']} "
                         f"| {_f(r.get('parameters') and r['parameters'] / 1e6, '.1f')}M | {r['batch']} "
                         f"| {_f(t.get('seconds_per_update_median'), '.3f')} "
                         f"| {_f(t.get('target_tokens_per_update'), ',.0f')} "
                         f"| {_f(t.get('peak_allocated_mib'), ',.0f')} "
                         f"| {r['status']}{': ' + r['note'] if r.get('note') else ''} |")
    for key in ("train_ratio_vs_fairseq", "decode_ratio_vs_fairseq"):
        if payload.get(key):
            lines.append(f"\n{key}: " + ", ".join(f"{k} {v:.2f}x" for k, v in payload[key].items()))
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description="rnmt on one GPU: training and decoding speed, memory, paper-size "
                                "steps, the peers", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (cpu: a smoke test)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="rnmt systems at the peer size (empty: none)")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--dims", default="256,512", help="embedding,hidden size of the peer-size systems")
    p.add_argument("--batch-tokens", type=int, default=4000, help="padded source+target tokens per batch (rnmt's)")
    p.add_argument("--warmup", type=int, default=10, help="untimed updates before each window")
    p.add_argument("--steps", type=int, default=200, help="at most this many timed updates per window")
    p.add_argument("--seconds", type=float, default=20.0, help="at most this many seconds per window")
    p.add_argument("--decode-sentences", type=int, default=571, help="first N dev sentences (571: all); 0: none")
    p.add_argument("--decode-chunk", type=int, default=192, help="sentences per translate call (0: all at once)")
    p.add_argument("--decode-seconds", type=float, default=60.0,
                   help="no further chunk after this many seconds (0: decode them all)")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--paper-systems", default=",".join(PAPER_SYSTEMS), help="paper-size systems (empty: none)")
    p.add_argument("--paper-precisions", default="bf16,fp32")
    p.add_argument("--paper-dims", help="override the papers' embedding,hidden size (smoke tests)")
    p.add_argument("--paper-vocab", type=int, help="override the papers' vocabulary sizes (smoke tests)")
    p.add_argument("--paper-warmup", type=int, default=3)
    p.add_argument("--paper-steps", type=int, default=50)
    p.add_argument("--paper-seconds", type=float, default=20.0)
    p.add_argument("--peers", default="", help="fairseq,opennmt (empty: none)")
    p.add_argument("--peer-site", type=Path, help="where gpu_install.sh put the peers' packages (else their venvs)")
    p.add_argument("--peer-warmup", type=int, default=20)
    p.add_argument("--peer-steps", type=int, default=200)
    p.add_argument("--peer-log-every", type=int, default=10)
    p.add_argument("--peer-timeout", type=float, default=300.0, help="seconds per peer training or decoding run")
    p.add_argument("--profile", action="store_true", help="profile one update and one beam search")
    p.add_argument("--profile-systems", default="rnnsearch-gru,dtmt4,cseq2seq1")
    p.add_argument("--profile-sentences", type=int, default=32)
    p.add_argument("--profile-rows", type=int, default=25)
    p.add_argument("--budget-minutes", type=float, default=8.0,
                   help="start nothing new after this many minutes (the rest is written as skipped)")
    p.add_argument("--gru-cuda", choices=("on", "off"), default="on",
                   help="the GRU's fused CUDA cell and cuDNN encoder (rnmt/fast/gru_cuda.py); off: the "
                   "unit's PyTorch expressions, as before they existed")
    p.add_argument("--deferred-grads", choices=("on", "off"), default="on",
                   help="one weight-gradient accumulation per pass (rnmt/deferred_grads.py; on, the default) "
                   "or plain autograd's per-step products; the models open that scope on the CPU only")
    p.add_argument("--cuda-graphs", choices=("on", "off"), default="off",
                   help="train.cuda_graphs for every rnmt row: each update's forward and backward replayed "
                   "from a CUDA graph per padded batch shape (rnmt/training/update_graphs.py)")
    p.add_argument("--step-graphs", action="store_true",
                   help="decode fp32 rows a second time with beam search's step replayed from CUDA graphs "
                   "(rnmt/search/step_graphs.py): `decode_graphs` beside `decode`")
    p.add_argument("--compile-step", action="store_true",
                   help="train each rnmt row a second time with teacher forcing's step through torch.compile "
                   "(train.compile_step): `train_compiled` beside `train`")
    p.add_argument("--compile-warmup", type=int, default=6,
                   help="untimed updates that compile the step before its window")
    p.add_argument("--threads", type=int, help="torch CPU threads (train.threads); default: the configs'")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory holding the corpus")
    p.add_argument("--corpus", default="bible-es-en")
    p.add_argument("--src", default="es")
    p.add_argument("--tgt", default="en")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--prepared", type=Path, help="benchmarks/prepare.py's output (made or reused; default OUT/data)")
    p.add_argument("--out", type=Path, default=REPO / "results" / "gpu")
    p.add_argument("--name", help="results file name (default: the device's name, then --tag)")
    p.add_argument("--tag", help="appended to the default name: NAME = DEVICE-TAG (e.g. systems, peers)")
    p.add_argument("--commit", help="the commit measured (default: git, else .gpudata/COMMIT)")
    args = p.parse_args(argv)
    args.systems = _names(args.systems, SYSTEMS, "system")
    args.precisions = _names(args.precisions, PRECISIONS, "precision")
    args.paper_systems = _names(args.paper_systems, PAPER_SYSTEMS, "paper system")
    args.paper_precisions = _names(args.paper_precisions, PRECISIONS, "precision")
    peers = _names(args.peers, PEERS, "peer")
    args.profile_systems = _names(args.profile_systems, SYSTEMS, "system")
    args.dims = tuple(int(x) for x in args.dims.split(","))
    args.paper_dims = tuple(int(x) for x in args.paper_dims.split(",")) if args.paper_dims else None

    started = time.perf_counter()
    from rnmt import deferred_grads
    from rnmt.device import pick_device
    from rnmt.fast import gru_cuda

    # the two switches hold for the whole process
    gru_cuda.use(args.gru_cuda == "on").__enter__()
    deferred_grads.enabled(args.deferred_grads == "on").__enter__()

    device = pick_device(args.device)
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)
    if args.threads:
        torch.set_num_threads(args.threads)
    info = machine(device)
    name = args.name or "".join(c if c.isalnum() else "-" for c in str(info.get("device_name", "cpu")).lower())
    if args.tag and not args.name:
        name += f"-{args.tag}"
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    result_file, profile_file = out / f"{name}.json", out / f"profile-{name}.txt"

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {msg}", flush=True)

    log(f"{info.get('device_name')}, torch {info['torch']}, CUDA {info['cuda']}")
    prepared = (args.prepared or out / "data").resolve()
    stats = prepare(args.data, prepared, args.corpus, args.src, args.tgt, vocab_size=args.vocab_size, log=log)
    sources = (prepared / "raw" / "dev.src").read_text(encoding="utf-8").splitlines()[: args.decode_sentences]
    payload: Dict[str, Any] = {
        "meta": {"commit": commit(args.commit), "command": " ".join(shlex.quote(a) for a in [
            "python", "-m", "benchmarks.gpu", *(sys.argv[1:] if argv is None else argv)]),
                 "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": info,
                 "corpus": args.corpus, "train_pairs": stats["train"]["pairs"], "vocab_size": stats["vocab_size"],
                 "decode_sentences": len(sources), "settings": {
                     k: (list(v) if isinstance(v, tuple) else str(v) if isinstance(v, Path) else v)
                     for k, v in vars(args).items()}},
        "systems": [], "paper_sizes": [], "peers": [], "train_ratio_vs_fairseq": {}, "decode_ratio_vs_fairseq": {}}
    profiles: List[str] = []

    def save() -> None:
        ratios(payload)
        payload["meta"]["elapsed_seconds"] = time.perf_counter() - started
        payload["meta"]["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        result_file.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        if profiles:
            profile_file.write_text(f"# {payload['meta']['command']}\n# commit {payload['meta']['commit']}, "
                                    f"{info.get('device_name')}, torch {info['torch']}\n\n" + "\n".join(profiles),
                                    encoding="utf-8")

    def attempt(section: str, base: Dict[str, Any], fn: Callable[[], Dict[str, Any]]) -> None:
        if time.perf_counter() - started > args.budget_minutes * 60:
            note = f"past --budget-minutes {args.budget_minutes:g}"
            payload[section].append({**base, "status": "skipped", "note": note})
            log(f"[{base['system']} {base['precision']}] skipped: past the budget")
        else:
            try:
                payload[section].append(fn())
                reset_memory(device)
            except Exception as exc:  # one failing system must not lose the others' figures
                if device.type == "cuda" and isinstance(exc, torch.cuda.OutOfMemoryError):
                    note = "out of GPU memory"
                else:
                    note = failure_note(exc)
                payload[section].append({**base, "status": "failed", "note": note})
                log(f"[{base['system']} {base['precision']}] failed: {note}")
                reset_memory(device)
        save()

    with tempfile.TemporaryDirectory(prefix="rnmt-gpu-") as tmp:
        work = Path(tmp)
        for system in args.systems:
            for prec in args.precisions:
                attempt("systems", {"system": system, "label": SYSTEMS[system][1], "precision": prec},
                        lambda system=system, prec=prec: run_system(system, prec, args, prepared, stats, work,
                                                                    sources, device, log, profiles))
        for system in args.paper_systems:
            for prec in args.paper_precisions:
                attempt("paper_sizes", {"system": system, "label": PAPER_SYSTEMS[system][1], "precision": prec,
                                        "batch": PAPER_SYSTEMS[system][3]},
                        lambda system=system, prec=prec: run_paper_system(system, prec, args, prepared, work,
                                                                          device, log))
        for peer in peers:
            for prec in peer_precisions(args.precisions, device):
                attempt("peers", {"system": peer, "label": peer, "precision": prec},
                        lambda peer=peer, prec=prec: run_peer(peer, prec, args, prepared, stats, work, device, log))
    save()
    print("\n" + table(payload), flush=True)
    log(f"written: {result_file}" + (f", {profile_file}" if profiles else ""))
    failed = [r for section in ("systems", "paper_sizes", "peers") for r in payload[section] if r["status"] == "failed"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
