"""Peer comparison in one command: rnmt against JoeyNMT, OpenNMT-py and fairseq.

    python -m benchmarks.run [--peers joeynmt,opennmt,fairseq] [--steps 200] [--warmup 20]
                             [--threads 2] [--data ../shared/data] [--out runs/peers-benchmark]

Run it with rnmt's Python from the repository root, after ``bash
benchmarks/peers/<peer>/setup.sh`` for the peers to include (a peer that is not set up is
skipped with a note). On the same machine, one system at a time, with the same data:

1. ``prepare``: one joint 8k BPE sentencepiece model, the training pairs filtered once,
   the text segmented once (benchmarks/prepare.py);
2. the fp32 GEMM peak of the machine at ``--threads`` threads (torch.matmul of
   1024x1024 matrices, best of several rounds; measured before and after the systems, the
   higher figure is used);
3. for rnmt and each peer: train ``warmup + steps`` updates, read the real target tokens
   per second of the last ``steps`` updates from the toolkit's log, then decode the dev set
   with beam 5 and read the toolkit's own timing of the search;
4. print and write (``OUT/results.md``, ``OUT/results.json``) the tables.

``--decode-only`` repeats step 3's decoding (and the dev scores) with the models an earlier
run left in ``--out``, keeping that run's training figures: to decode long-trained models
again on a quiet machine, or with a newer rnmt.

Every child gets ``OMP_NUM_THREADS`` = ``MKL_NUM_THREADS`` = ``--threads`` (rnmt and the
peers also set torch's thread count from their configs where they have the option), and
its peak resident memory is read from the kernel's accounting of that child (``wait4``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks import flops
from benchmarks.peers.base import Decoded, Peer, Settings, Window, replace, window_from_intervals
from benchmarks.prepare import DEFAULT_DATA, prepare

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

ALL_PEERS = ("joeynmt", "opennmt", "fairseq")


# -- rnmt itself ------------------------------------------------------------------------
class RNMT(Peer):
    name = "rnmt"
    label = "rnmt"
    package = "rnmt"
    cell = "gru"
    hypotheses_are_pieces = False
    config = HERE / "configs" / "rnnsearch-gru.yaml"

    amp = "auto"  # train.amp: rnmt's default (bf16 on CUDA and on CPUs measured fast in bf16)

    def __init__(self, python: str, amp: Optional[str] = None) -> None:
        self._python = Path(python)
        if amp is not None and amp != "auto":
            self.amp = amp
            self.name = f"rnmt-{'fp32' if amp == 'none' else amp}"
            self.label = f"rnmt ({'fp32' if amp == 'none' else amp})"

    @property
    def python(self) -> Path:  # rnmt runs from the repository in the given interpreter
        return self._python

    def installed(self):
        return True, ""

    def version(self) -> str:
        m = re.search(r'^version\s*=\s*"([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        return (m.group(1) if m else "?") + (f" ({rev})" if rev else "")

    def overrides(self, s: Settings) -> List[str]:
        sets = {
            "data.train": s.data / "raw" / "train", "data.dev": "null",
            "data.vocab.model": s.data / "spm.model", "data.batch_tokens": s.batch_tokens,
            "model.emb_size": s.emb, "model.hidden_size": s.hidden, "model.dropout": s.dropout,
            "train.max_steps": s.total_steps, "train.log_every": s.log_every, "train.threads": s.threads,
            "train.seed": s.seed, "train.device": "cpu", "train.progress": "false", "train.amp": self.amp,
        }
        out = []
        for k, v in sets.items():
            out += ["--set", f"{k}={v}"]
        return out

    def train_command(self, s: Settings) -> List[str]:
        return [str(self.python), "-m", "rnmt", "train", str(self.config), "--out", str(s.work / "model"),
                *self.overrides(s)]

    def train_window(self, s: Settings, log_text: str) -> Window:
        """rnmt's log.jsonl: per interval ``tokens_per_s`` (real target tokens incl. ``</s>``
        over the seconds of the training steps) and the cumulative ``train_seconds``."""
        intervals, last_seconds = [], 0.0
        with open(s.work / "model" / "log.jsonl", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                if "tokens_per_s" not in rec:
                    continue
                seconds = rec["train_seconds"] - last_seconds
                last_seconds = rec["train_seconds"]
                intervals.append((rec["step"], rec["tokens_per_s"] * seconds, seconds))
        return window_from_intervals(intervals, s)

    def decode_command(self, s: Settings) -> List[str]:
        return [str(self.python), "-m", "rnmt", "translate", "--model", str(s.work / "model"),
                "--input", str(s.dev_source("raw")), "--output", str(s.work / "dev.hyp"),
                "--beam", str(s.beam), "--threads", str(s.threads), "--batch-tokens", str(s.batch_tokens),
                "--device", "cpu", "--speed"]

    def decode_result(self, s: Settings, log_text: str) -> Decoded:
        m = re.search(r"translated (\d+) sentences, \d+ words in ([\d.]+) s", log_text)
        if not m:
            raise RuntimeError("rnmt translate printed no speed line")
        hyp = s.work / "dev.hyp"
        # rnmt writes detokenised text: count its pieces with the shared model.
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(s.data / "spm.model"))
        lines = hyp.read_text(encoding="utf-8").splitlines()
        tokens = sum(len(sp.encode(line, out_type=str)) for line in lines)
        return Decoded(seconds=float(m.group(2)), sentences=int(m.group(1)), output_tokens=tokens, hypotheses=hyp)

    def parameters(self, s: Settings, log_text: str) -> Optional[int]:
        cmd = [str(self.python), "-m", "rnmt", "params", str(self.config), "--json",
               *self.overrides(s), "--set", f"model.src_vocab_size={s.stats['vocab_size']}",
               "--set", f"model.tgt_vocab_size={s.stats['vocab_size']}"]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=self.env(s), timeout=300)
        try:
            return int(json.loads(out.stdout.strip().splitlines()[-1])["total"])
        except (ValueError, IndexError, KeyError):
            return None

    def flops_model(self, s: Settings):
        return flops.RNNSearch(emb=s.emb, hidden=s.hidden, vocab=s.stats["vocab_size"], cell="gru")


def load_peer(name: str) -> Peer:
    import importlib

    return importlib.import_module(f"benchmarks.peers.{name}.driver").PEER


# -- running children ---------------------------------------------------------------------
@dataclass
class ChildResult:
    returncode: int
    seconds: float
    max_rss_mib: float
    log: str
    timed_out: bool = False


def run_child(cmd: List[str], env: Dict[str, str], log_path: Path, timeout: float, nice: int = 0) -> ChildResult:
    """Run ``cmd`` (output to ``log_path``), return its exit status, wall time and peak RSS."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    start = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                start_new_session=True)
        timed_out = threading.Event()

        def stop() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                time.sleep(10)
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, stop)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    text = log_path.read_text(encoding="utf-8", errors="replace")
    # ru_maxrss is in KiB on Linux: the largest resident set of the child (or of a
    # descendant it waited for).
    return ChildResult(proc.returncode, seconds, usage.ru_maxrss / 1024, text, timed_out.is_set())


# -- GEMM peak -------------------------------------------------------------------------
def gemm_peak(threads: int, n: int = 1024, reps: int = 10, rounds: int = 5) -> float:
    """Best fp32 GFLOP/s of an n x n product at ``threads`` threads, through PyTorch's BLAS
    (``torch.matmul``) or through oneDNN where rnmt multiplies with it (`rnmt.products`):
    the faster of the two is what this machine's fp32 products can reach from PyTorch."""
    import torch

    try:
        from rnmt import products
    except ImportError:  # an interpreter without rnmt: the BLAS alone
        products = None
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        c = torch.empty(n, n)
        ways = [lambda: torch.matmul(a, b, out=c)]
        if products is not None and products.active():
            ways.append(lambda: products.add_product_(c, a, b))  # out += a @ b: the same product
        best = 0.0
        for product in ways:
            for _ in range(3):
                product()
            for _ in range(rounds):
                t0 = time.perf_counter()
                for _ in range(reps):
                    product()
                dt = time.perf_counter() - t0
                best = max(best, 2 * n ** 3 * reps / dt / 1e9)
        return best
    finally:
        torch.set_num_threads(old)


# -- one system ----------------------------------------------------------------------------
@dataclass
class SystemResult:
    name: str
    label: str
    version: str = ""
    status: str = "ok"
    note: str = ""
    parameters: Optional[int] = None
    train_tokens_per_s: Optional[float] = None
    train_window_tokens: Optional[float] = None
    train_window_seconds: Optional[float] = None
    train_window_steps: Optional[int] = None
    target_tokens_per_batch: Optional[float] = None
    train_wall_seconds: Optional[float] = None
    train_peak_rss_mib: Optional[float] = None
    train_flops_per_token: Optional[float] = None  # forward + backward
    forward_flops_per_token: Optional[float] = None
    model_gflops: Optional[float] = None
    peak_fraction: Optional[float] = None
    decode_seconds: Optional[float] = None
    decode_sentences: Optional[int] = None
    decode_output_tokens: Optional[int] = None
    decode_sentences_per_s: Optional[float] = None
    decode_tokens_per_s: Optional[float] = None
    dev_bleu: Optional[float] = None  # sacrebleu on detokenised output against the raw dev reference
    dev_chrf: Optional[float] = None
    reference_tokens: Optional[int] = None  # pieces in the references of the decoded sentences
    decode_peak_rss_mib: Optional[float] = None
    extra: Dict = field(default_factory=dict)


def run_system(peer: Peer, s: Settings, args, log=print, trained: Optional[Dict] = None) -> SystemResult:
    """Train, then decode and score; with ``trained`` (the system's entry in an earlier
    results.json, whose model is still in ``s.work``) only decode and score."""
    res = SystemResult(peer.name, peer.label)
    ok, why = peer.installed()
    if not ok:
        res.status, res.note = "skipped", why
        log(f"[{peer.name}] skipped: {why}")
        return res
    env = peer.env(s)
    if trained is not None:
        kept = {k: v for k, v in trained.items() if k in SystemResult.__dataclass_fields__ and
                not k.startswith("decode_") and k not in ("dev_bleu", "dev_chrf", "reference_tokens", "status", "note")}
        res = SystemResult(**kept)
        res.extra = {k: v for k, v in res.extra.items() if not k.startswith("decode")}
        res.extra["decoded_by"] = peer.version()
        return decode_system(peer, s, args, res, env, log)
    res.version = peer.version()
    corpus = flops.Corpus.from_stats(s.stats)
    model = peer.flops_model(s)
    res.forward_flops_per_token = model.forward_per_token(corpus)
    res.train_flops_per_token = model.train_per_token(corpus)
    if hasattr(model, "executed"):
        res.extra["executed_forward_flops_per_token"] = model.executed(corpus)

    log(f"[{peer.name}] training {s.total_steps} updates ({s.warmup} warm-up) ...")
    if s.work.exists():
        import shutil

        shutil.rmtree(s.work)
    s.work.mkdir(parents=True)
    tr = run_child(peer.train_command(s), env, s.work / "train.log", args.timeout, args.nice)
    res.train_wall_seconds, res.train_peak_rss_mib = tr.seconds, tr.max_rss_mib
    if tr.returncode != 0:
        res.status = "failed"
        res.note = ("training timed out" if tr.timed_out else f"training exited with {tr.returncode}") + \
            f" (see {s.work / 'train.log'})"
        log(f"[{peer.name}] {res.note}\n" + "\n".join(tr.log.splitlines()[-15:]))
        return res
    try:
        w = peer.train_window(s, tr.log)
        res.train_tokens_per_s, res.train_window_tokens = w.tokens_per_s, w.tokens
        res.train_window_seconds, res.train_window_steps = w.seconds, w.steps
        res.target_tokens_per_batch = w.batches_tokens
        res.model_gflops = res.train_flops_per_token * w.tokens_per_s / 1e9
    except (RuntimeError, OSError, ValueError) as exc:
        res.status, res.note = "failed", f"could not read the training log: {exc}"
        log(f"[{peer.name}] {res.note}")
        return res
    res.parameters = peer.parameters(s, tr.log)
    log(f"[{peer.name}] {res.train_tokens_per_s:.0f} target tokens/s over {w.steps} updates "
        f"({w.tokens:.0f} tokens in {w.seconds:.1f} s); peak RSS {tr.max_rss_mib:.0f} MiB")

    if args.no_decode:
        return res
    return decode_system(peer, s, args, res, env, log)


def decode_system(peer: Peer, s: Settings, args, res: SystemResult, env: Dict[str, str], log=print) -> SystemResult:
    """Decode the dev set with the trained model in ``s.work`` and score the output."""
    log(f"[{peer.name}] decoding the dev set, beam {s.beam} ...")
    de = run_child(peer.decode_command(s), env, s.work / "decode.log", args.timeout, args.nice)
    res.decode_peak_rss_mib = de.max_rss_mib
    if de.returncode != 0:
        res.status = "failed"
        res.note = ("decoding timed out" if de.timed_out else f"decoding exited with {de.returncode}") + \
            f" (see {s.work / 'decode.log'})"
        log(f"[{peer.name}] {res.note}\n" + "\n".join(de.log.splitlines()[-15:]))
        return res
    try:
        d = peer.decode_result(s, de.log)
    except (RuntimeError, OSError, ValueError) as exc:
        res.status, res.note = "failed", f"could not read the decoding log: {exc}"
        log(f"[{peer.name}] {res.note}")
        return res
    res.decode_seconds, res.decode_sentences, res.decode_output_tokens = d.seconds, d.sentences, d.output_tokens
    res.decode_sentences_per_s = d.sentences / d.seconds if d.seconds > 0 else None
    res.decode_tokens_per_s = d.output_tokens / d.seconds if d.seconds > 0 else None
    res.extra["decode_wall_seconds"] = de.seconds
    try:
        res.dev_bleu, res.dev_chrf, res.reference_tokens = score_dev(peer, s, d.hypotheses)
    except (OSError, ValueError) as exc:
        res.note = f"could not score the dev output: {exc}"
    log(f"[{peer.name}] {d.sentences} sentences, {d.output_tokens} output pieces in {d.seconds:.1f} s; "
        f"peak RSS {de.max_rss_mib:.0f} MiB")
    return res


def score_dev(peer: Peer, s: Settings, hypotheses: Path):
    """Dev BLEU and chrF (sacrebleu defaults) of the decoded sentences on detokenised text,
    and the number of reference pieces (to compare output lengths)."""
    import sacrebleu
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(s.data / "spm.model"))
    hyps = hypotheses.read_text(encoding="utf-8").splitlines()
    if peer.hypotheses_are_pieces:
        hyps = [sp.decode_pieces(line.split()) for line in hyps]
    refs = (s.data / "raw" / "dev.tgt").read_text(encoding="utf-8").splitlines()[: len(hyps)]
    if len(refs) != len(hyps):
        raise ValueError(f"{len(hyps)} hypotheses for {len(refs)} references")
    ref_tokens = sum(len(sp.encode(line, out_type=str)) for line in refs)
    return (sacrebleu.corpus_bleu(hyps, [refs]).score, sacrebleu.corpus_chrf(hyps, [refs]).score, ref_tokens)


def budget_steps(speeds: Dict, name: str, minutes: float, log_every: int) -> Optional[int]:
    """Updates that ``name`` makes in ``minutes`` at the update rate measured in a previous
    run's results.json (its measured window), rounded down to whole logging intervals."""
    for r in speeds.get("results", []):
        if r.get("name") == name and r.get("train_window_seconds") and r.get("train_window_steps"):
            per_second = r["train_window_steps"] / r["train_window_seconds"]
            return max(log_every, int(minutes * 60 * per_second) // log_every * log_every)
    return None


# -- tables ----------------------------------------------------------------------------------
def _fmt(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _ratio(v, ref) -> str:
    return "-" if v is None or not ref else f"{v / ref:.2f}"


def tables(results: List[SystemResult], peak: float, meta: Dict) -> str:
    ref = next((r for r in results if r.name == "rnmt" and r.status == "ok"), None)

    def rr(r, key):
        return _ratio(getattr(r, key), getattr(ref, key) if ref else None)

    amount = (f"equal training time: {meta['budget_minutes']:g} minutes each at its measured update rate"
              if meta.get("budget_minutes")
              else f"{meta['steps']} measured updates after {meta['warmup']} warm-up updates")
    lines = [
        f"Peer comparison on {meta['corpus']} ({meta['train_pairs']} training pairs, joint {meta['vocab_size']} BPE), "
        f"{meta['threads']} threads, {amount}, "
        f"batches of {meta['batch_tokens']} padded source+target tokens (rnmt's count; see benchmarks/README.md).",
        f"Machine fp32 GEMM peak at {meta['threads']} threads: {peak:.1f} GFLOP/s "
        f"(1024^3 through torch.matmul or, where rnmt uses it, oneDNN; best of the runs before and after).",
    ]
    if meta.get("decode_only"):
        lines.append(f"Decoding repeated with the trained models (--decode-only) at {meta['decode_threads']} threads; "
                     "the training figures are those of the run that trained them.")
    lines += [
        "",
        "Training",
        "",
        "| system | version | unit | params | target tok/s | x rnmt | tgt tok/update | MFLOP/tok (train) "
        "| model GFLOP/s | of GEMM peak | peak RSS MiB | x rnmt |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    units = {"fairseq": "LSTM"}
    for r in results:
        if r.status == "skipped":
            lines.append(f"| {r.label} | - | - | skipped: {r.note} |||||||||")
            continue
        unit = units.get(r.name, "GRU")
        lines.append(
            f"| {r.label} | {r.version} | {unit} "
            f"| {_fmt(r.parameters and r.parameters / 1e6, '.2f')}{'M' if r.parameters else ''} "
            f"| {_fmt(r.train_tokens_per_s, '.0f')} | {rr(r, 'train_tokens_per_s')} "
            f"| {_fmt(r.target_tokens_per_batch, '.0f')} "
            f"| {_fmt(r.train_flops_per_token and r.train_flops_per_token / 1e6, '.1f')} "
            f"| {_fmt(r.model_gflops, '.2f')} | {_fmt(r.model_gflops and 100 * r.model_gflops / peak, '.1f')}% "
            f"| {_fmt(r.train_peak_rss_mib, '.0f')} | {rr(r, 'train_peak_rss_mib')} |")
    lines += [
        "",
        f"Decoding the dev set ({meta['dev_pairs']} sentences), beam {meta['beam']}, "
        "toolkit's own timing of the search",
        "",
        "| system | updates | sentences/s | x rnmt | output tok/s | x rnmt | output/ref length | dev BLEU | dev chrF "
        "| peak RSS MiB | x rnmt |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r.status == "skipped":
            continue
        length = r.decode_output_tokens / r.reference_tokens if r.reference_tokens and r.decode_output_tokens else None
        lines.append(
            f"| {r.label} | {r.extra.get('updates', '-')} | {_fmt(r.decode_sentences_per_s, '.2f')} "
            f"| {rr(r, 'decode_sentences_per_s')} | {_fmt(r.decode_tokens_per_s, '.0f')} "
            f"| {rr(r, 'decode_tokens_per_s')} "
            f"| {_fmt(length, '.2f')} | {_fmt(r.dev_bleu, '.2f')} | {_fmt(r.dev_chrf, '.1f')} "
            f"| {_fmt(r.decode_peak_rss_mib, '.0f')} | {rr(r, 'decode_peak_rss_mib')} |")
    notes = [f"- {r.label}: {r.status}: {r.note}" for r in results if r.status != "ok" or r.note]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="rnmt against its peers: training and decoding speed, memory, FLOP/s",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--peers", default=",".join(ALL_PEERS), help="comma-separated peers (empty: rnmt only)")
    p.add_argument("--steps", type=int, default=200, help="measured training updates")
    p.add_argument("--warmup", type=int, default=20, help="training updates before the measured window")
    p.add_argument("--log-every", type=int, default=10,
                   help="logging interval of every toolkit (divides steps, warmup)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-tokens", type=int, default=4000,
                   help="padded source+target tokens per training batch (rnmt's count); "
                   "also source tokens per decoding batch")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--data", default=str(DEFAULT_DATA), help="the shared data directory")
    p.add_argument("--corpus", default="bible-es-en")
    p.add_argument("--src", default="es")
    p.add_argument("--tgt", default="en")
    p.add_argument("--out", default=str(REPO / "runs" / "peers-benchmark"))
    p.add_argument("--no-rnmt", action="store_true", help="leave rnmt out (its ratios are then not given)")
    p.add_argument("--rnmt-amp", default="",
                   help="also run rnmt under these train.amp values, comma-separated (none, bf16), as rnmt-fp32 "
                        "/ rnmt-bf16; the 'rnmt' row keeps the default (auto), which its training log resolves")
    p.add_argument("--no-decode", action="store_true", help="training only")
    p.add_argument("--decode-only", action="store_true",
                   help="decode again with the models an earlier run left in --out (keeps its training figures)")
    p.add_argument("--dev-sentences", type=int, help="decode only the first N dev sentences (smoke tests)")
    p.add_argument("--rnmt-python", default=sys.executable, help="interpreter with rnmt's requirements")
    p.add_argument("--timeout", type=float, default=6 * 3600,
                   help="seconds allowed to each training or decoding run (2,000 updates take about an hour here)")
    p.add_argument("--nice", type=int, default=0, help="run the systems under nice -n N")
    p.add_argument("--budget-minutes", type=float,
                   help="equal training time instead of equal updates: each system trains for as many updates "
                        "as it makes in this many minutes at the rate measured by an earlier run (--speeds)")
    p.add_argument("--speeds", help="results.json of an earlier run, for --budget-minutes")
    args = p.parse_args(argv)
    if args.decode_only and args.no_decode:
        p.error("--decode-only and --no-decode exclude each other")
    speeds = None
    if args.budget_minutes:
        if not args.speeds:
            p.error("--budget-minutes needs --speeds (the results.json of an earlier run)")
        speeds = json.loads(Path(args.speeds).read_text(encoding="utf-8"))
    for name, v in (("--steps", args.steps), ("--warmup", args.warmup)):
        if v % args.log_every:
            p.error(f"{name} ({v}) must be a multiple of --log-every ({args.log_every})")
    if args.steps < args.log_every:
        p.error("--steps must cover at least one logging interval")
    peers = [x.strip() for x in args.peers.split(",") if x.strip()]
    unknown = [x for x in peers if x not in ALL_PEERS]
    if unknown:
        p.error(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(ALL_PEERS)}")

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    stats = prepare(Path(args.data), out / "data", args.corpus, args.src, args.tgt, log=print)
    base = Settings(data=out / "data", stats=stats, work=out, steps=args.steps, warmup=args.warmup,
                    log_every=args.log_every, threads=args.threads, batch_tokens=args.batch_tokens, beam=args.beam,
                    dev_sentences=args.dev_sentences)

    peak_before = gemm_peak(args.threads)
    print(f"fp32 GEMM peak at {args.threads} threads: {peak_before:.1f} GFLOP/s")
    systems: List[Peer] = [] if args.no_rnmt else [RNMT(args.rnmt_python)]
    systems += [RNMT(args.rnmt_python, amp) for amp in filter(None, args.rnmt_amp.split(","))]
    systems += [load_peer(name) for name in peers]
    earlier = None
    if args.decode_only:
        try:
            earlier = json.loads((out / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            p.error(f"--decode-only needs the results.json of an earlier run in {out}: {exc}")
    results = []
    for peer in systems:
        settings = replace(base, work=out / peer.name)
        if earlier is not None:
            trained = next((r for r in earlier["results"] if r["name"] == peer.name), None)
            if trained is None:
                print(f"[{peer.name}] not in {out / 'results.json'}: skipped")
                continue
            result = run_system(peer, settings, args, trained=trained)
            results.append(result)
            continue
        if speeds is not None:
            total = budget_steps(speeds, peer.name, args.budget_minutes, args.log_every)
            if total is None:
                print(f"[{peer.name}] not in {args.speeds}: skipped")
                continue
            # The measured window is then the whole run after the first logging interval.
            settings = replace(settings, warmup=args.log_every, steps=max(total - args.log_every, args.log_every))
            print(f"[{peer.name}] {args.budget_minutes:g} minutes at its measured rate: {settings.total_steps} updates")
        result = run_system(peer, settings, args)
        result.extra["updates"] = settings.total_steps
        results.append(result)
    peak_after = gemm_peak(args.threads)
    peak = max(peak_before, peak_after)
    print(f"fp32 GEMM peak at {args.threads} threads after the runs: {peak_after:.1f} GFLOP/s")
    if earlier is not None:  # the training figures are the earlier run's: so is their peak
        peak = earlier["gemm_peak_gflops"]["used"]
    for r in results:
        if r.model_gflops is not None:
            r.peak_fraction = r.model_gflops / peak

    meta = {"corpus": args.corpus, "train_pairs": stats["train"]["pairs"], "dev_pairs": stats["dev"]["pairs"],
            "vocab_size": stats["vocab_size"], "threads": args.threads, "steps": args.steps, "warmup": args.warmup,
            "log_every": args.log_every, "batch_tokens": args.batch_tokens, "beam": args.beam,
            "budget_minutes": args.budget_minutes}
    if args.dev_sentences:
        meta["dev_pairs"] = min(args.dev_sentences, meta["dev_pairs"])
    if earlier is not None:  # the training settings are the earlier run's
        meta = {**earlier["meta"], "decode_only": True, "decode_threads": args.threads,
                "dev_pairs": meta["dev_pairs"]}
    text = tables(results, peak, meta)
    print("\n" + text)
    (out / "results.md").write_text(text, encoding="utf-8")
    payload = {"meta": meta, "gemm_peak_gflops": {"before": peak_before, "after": peak_after, "used": peak},
               "corpus_stats": stats, "results": [asdict(r) for r in results]}
    (out / "results.json").write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"written: {out / 'results.md'}, {out / 'results.json'}")
    return 0 if all(r.status != "failed" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
