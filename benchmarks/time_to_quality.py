"""Time to quality: dev and test BLEU against wall-clock training minutes, rnmt and fairseq
on the same machine and data.

    python -m benchmarks.time_to_quality [--minutes 20] [--points 10] [--threads 2]
        [--systems rnmt-rnnsearch,rnmt-rnnsearch-bf16,rnmt-rnnsearch-averaged,rnmt-dtmt1,fairseq-lstm,
                   fairseq-transformer]
        [--data ../shared/data] [--out runs/time-to-quality] [--seed 1]
    python -m benchmarks.time_to_quality --report-only --out runs/time-to-quality

Run it with rnmt's Python from the repository root on an otherwise idle machine, after
``bash benchmarks/peers/fairseq/setup.sh`` (fairseq's systems are skipped with a note when
it is not set up). One system at a time:

1. the shared data of the peer comparison (benchmarks/prepare.py: one joint 8k BPE model,
   the full Bible training set filtered once, dev and test), prepared once;
2. the system trains under its own recipe (below) and is stopped when ``--minutes`` of
   wall-clock time have passed since its training command started (start-up, corpus
   loading and checkpoint writing included: what a user waits for). It saves a checkpoint
   every ``save_every`` updates; a checkpoint's time is its file's modification time;
   fairseq's binarisation runs before the clock starts (its time is reported beside);
3. at ``--points`` marks evenly spread over the budget, the last checkpoint saved before
   the mark decodes the dev and test sets (beam 5, the toolkit's own search), scored with
   sacrebleu on detokenised text against the raw references;
4. ``OUT/results.json``, ``OUT/results.md`` (a table per system and the time each rnmt
   system needs to reach the best peer's test BLEU at the end of the budget) and
   ``OUT/curves.png`` (dev and test BLEU against minutes).

Recipes (each system's own; the two toolkits' sizes match: 256 embeddings, 512 units for
the recurrent models, shared 8k BPE, batches of about 2,000 target tokens):

* ``rnmt-rnnsearch``: benchmarks/configs/ttq-rnnsearch.yaml (Adam 2e-3, 200 warm-up
  updates, halving every 500 after 1,000, U(-0.15, 0.15), dropout 0.2, label smoothing 0.1),
  with ``train.amp=none`` (fp32 whatever the processor);
* ``rnmt-rnnsearch-bf16``: the same with ``train.amp=bf16`` (bf16 autocast on the CPU);
* ``rnmt-rnnsearch-fast-start`` (and ``-fast-start-bf16``): the same model with half the
  batch (``data.batch_tokens=2000``), warm-up over 100 updates, halvings every 1,000 after
  2,000 (not in the default list);
* ``rnmt-rnnsearch-short-warmup``: the fast start with warm-up over 50 updates and dropout
  0.1, fairseq's (not in the default list);
* ``rnmt-rnnsearch-peer-search``: the short warm-up, decoded with fairseq's length
  normalisation (log-probability / length) instead of rnmt's default GNMT penalty with
  alpha 0.6 (``search.normalize=length``; the training is the same; not in the default list);
* ``rnmt-rnnsearch-averaged``: the peer search, with checkpoints holding the exponential
  moving average of the weights (``train.ema_decay=0.999``): the recipe that meets the
  target on the AVX2 EPYC (docs/time-to-quality.md); ``-averaged-bf16`` the same in bf16 (not
  in the default list);
* ``rnmt-dtmt1``: benchmarks/configs/ttq-dtmt1.yaml, DTMT#1 under the same recipe, fp32;
  ``rnmt-dtmt1-bf16`` the same in bf16 (not in the default list);
* ``fairseq-lstm``: fairseq's ``lstm`` as in the peer comparison (benchmarks/peers/fairseq),
  Adam 1e-3 constant, dropout 0.1, label smoothing 0.1;
* ``fairseq-transformer``: ``transformer`` with 3+3 layers, d_model 256, 4 heads, FFN 1024,
  shared decoder embeddings, Adam (0.9, 0.98), inverse square root schedule (peak 1e-3 after
  1,000 warm-up updates), dropout 0.1, weight decay 1e-4, label smoothing 0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from benchmarks.peers.base import Settings
from benchmarks.peers.fairseq.driver import PEER as FAIRSEQ
from benchmarks.prepare import DEFAULT_DATA, prepare
from benchmarks.run import run_child

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SPLITS = ("dev", "test")


@dataclass
class Checkpoint:
    path: Path
    update: int
    seconds: float  # since the training command started


@dataclass
class System:
    """One toolkit's recipe: how it trains, where its checkpoints are, how it decodes."""

    name: str
    label: str
    save_every: int = 100
    seed: int = 1  # the training run's random seed (--seed)

    def installed(self) -> Tuple[bool, str]:
        return True, ""

    def env(self, threads: int) -> Dict[str, str]:
        env = dict(os.environ)
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), PYTHONHASHSEED="0",
                   CUDA_VISIBLE_DEVICES="")
        env.pop("PYTHONPATH", None)
        return env

    def setup(self, work: Path, data: Path, threads: int) -> None:
        """Work before the clock starts (fairseq's binarisation)."""

    def train_command(self, work: Path, data: Path, threads: int) -> List[str]:
        raise NotImplementedError

    def checkpoints(self, work: Path) -> List[Tuple[Path, int]]:
        raise NotImplementedError

    def decode(self, ckpt: Path, split: str, work: Path, data: Path, threads: int) -> Tuple[List[str], float]:
        """Detokenised hypotheses of ``split`` and the seconds the decoding command took."""
        raise NotImplementedError

    def parameters(self, work: Path, train_log: str) -> Optional[int]:
        return None


@dataclass
class Rnmt(System):
    config: str = "ttq-rnnsearch.yaml"
    sets: List[str] = field(default_factory=list)

    def _sets(self, data: Path, threads: int) -> List[str]:
        sets = [f"data.train={data / 'raw' / 'train'}", f"data.vocab.model={data / 'spm.model'}",
                f"train.threads={threads}", f"train.save_every={self.save_every}", f"train.seed={self.seed}",
                *self.sets]
        return [a for s in sets for a in ("--set", s)]

    def train_command(self, work: Path, data: Path, threads: int) -> List[str]:
        return [sys.executable, "-m", "rnmt", "train", str(HERE / "configs" / self.config),
                "--out", str(work / "model"), *self._sets(data, threads)]

    def checkpoints(self, work: Path) -> List[Tuple[Path, int]]:
        found = [(p, int(p.stem.split("-")[1])) for p in (work / "model").glob("ckpt-*.safetensors")]
        return sorted(found, key=lambda c: c[1])

    def decode(self, ckpt: Path, split: str, work: Path, data: Path, threads: int) -> Tuple[List[str], float]:
        hyp = work / f"{ckpt.stem}.{split}.hyp"
        cmd = [sys.executable, "-m", "rnmt", "translate", "--model", str(ckpt), "--input",
               str(data / "raw" / f"{split}.src"), "--output", str(hyp), "--beam", "5", "--threads", str(threads),
               "--device", "cpu"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=self.env(threads), cwd=REPO, capture_output=True)
        return hyp.read_text(encoding="utf-8").splitlines(), time.perf_counter() - t0

    def parameters(self, work: Path, train_log: str) -> Optional[int]:
        import sentencepiece as spm

        vocab = spm.SentencePieceProcessor(model_file=str(work / "model" / "spm.model")).get_piece_size()
        cmd = [sys.executable, "-m", "rnmt", "params", str(HERE / "configs" / self.config), "--json",
               *(a for s in self.sets for a in ("--set", s)),
               "--set", f"model.src_vocab_size={vocab}", "--set", f"model.tgt_vocab_size={vocab}"]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=self.env(1))
        try:
            return int(json.loads(out.stdout.strip().splitlines()[-1])["total"])
        except (ValueError, IndexError, KeyError):
            return None


@dataclass
class Fairseq(System):
    arch_args: List[str] = field(default_factory=list)

    @property
    def python(self) -> Path:
        return FAIRSEQ.python

    def installed(self) -> Tuple[bool, str]:
        return FAIRSEQ.installed()

    def env(self, threads: int) -> Dict[str, str]:
        env = super().env(threads)
        env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"  # fairseq checkpoints hold an argparse.Namespace
        return env

    def setup(self, work: Path, data: Path, threads: int) -> None:
        cmd = [str(self.python), "-m", "fairseq_cli.preprocess", "--source-lang", "src", "--target-lang", "tgt",
               "--trainpref", str(data / "pieces" / "train"), "--validpref", str(data / "pieces" / "dev"),
               "--testpref", str(data / "pieces" / "test"), "--destdir", str(work / "bin"),
               "--srcdict", str(data / "vocab.txt"), "--joined-dictionary", "--workers", "1"]
        subprocess.run(cmd, check=True, env=self.env(threads), capture_output=True)

    def train_command(self, work: Path, data: Path, threads: int) -> List[str]:
        return [str(self.python), "-m", "fairseq_cli.train", str(work / "bin"), "--task", "translation",
                "--source-lang", "src", "--target-lang", "tgt", *self.arch_args,
                "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                # sentences x max(src, tgt) length: about rnmt's 4,000 padded source + target tokens
                "--max-tokens", "2000", "--required-batch-size-multiple", "1",
                "--max-update", "1000000", "--log-interval", "20", "--log-format", "json",
                "--disable-validation", "--save-dir", str(work / "checkpoints"), "--no-epoch-checkpoints",
                "--no-last-checkpoints", "--save-interval-updates", str(self.save_every),
                "--keep-interval-updates", "-1", "--cpu", "--num-workers", "0", "--seed", str(self.seed),
                "--no-progress-bar"]

    def checkpoints(self, work: Path) -> List[Tuple[Path, int]]:
        found = [(p, int(p.stem.rsplit("_", 1)[1])) for p in (work / "checkpoints").glob("checkpoint_*_*.pt")]
        return sorted(found, key=lambda c: c[1])

    def decode(self, ckpt: Path, split: str, work: Path, data: Path, threads: int) -> Tuple[List[str], float]:
        import sentencepiece as spm

        subset = "valid" if split == "dev" else "test"
        cmd = [str(self.python), "-m", "fairseq_cli.generate", str(work / "bin"), "--path", str(ckpt),
               "--gen-subset", subset, "--source-lang", "src", "--target-lang", "tgt", "--beam", "5",
               "--max-tokens", "4000", "--max-len-a", "1.5", "--max-len-b", "10", "--cpu", "--num-workers", "0",
               "--seed", "1", "--no-progress-bar"]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, check=True, env=self.env(threads), capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        hyps: Dict[int, str] = {}
        for line in out.stdout.splitlines():
            if line.startswith("H-"):
                parts = line.split("\t")
                hyps[int(parts[0][2:])] = parts[2] if len(parts) > 2 else ""
        sp = spm.SentencePieceProcessor(model_file=str(data / "spm.model"))
        return [sp.decode_pieces(hyps.get(i, "").split()) for i in range(max(hyps, default=-1) + 1)], seconds

    def parameters(self, work: Path, train_log: str) -> Optional[int]:
        return FAIRSEQ.parameters(Settings(data=work, stats={}, work=work), train_log)


FAIRSEQ_LSTM = ["--arch", "lstm", "--encoder-embed-dim", "256", "--encoder-hidden-size", "512",
                "--encoder-layers", "1", "--encoder-bidirectional", "--decoder-embed-dim", "256",
                "--decoder-hidden-size", "512", "--decoder-layers", "1", "--decoder-out-embed-dim", "256",
                "--decoder-attention", "True", "--dropout", "0.1", "--optimizer", "adam",
                "--adam-betas", "(0.9, 0.999)", "--lr", "0.001", "--lr-scheduler", "fixed", "--clip-norm", "5"]
FAIRSEQ_TRANSFORMER = ["--arch", "transformer", "--encoder-layers", "3", "--decoder-layers", "3",
                       "--encoder-embed-dim", "256", "--decoder-embed-dim", "256",
                       "--encoder-ffn-embed-dim", "1024", "--decoder-ffn-embed-dim", "1024",
                       "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
                       "--share-decoder-input-output-embed", "--dropout", "0.1", "--weight-decay", "0.0001",
                       "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.001",
                       "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "1000", "--warmup-init-lr", "1e-07",
                       "--clip-norm", "0.0"]

# Half the batch (about 1,000 target tokens) and its schedule in the same tokens (warm-up over
# the first ~100,000 target tokens, halvings from 2M): it learns more per token from the start
# (docs/time-to-quality.md, "Leaving the plateau sooner"). Its checkpoints come every 100 updates
# (about as often in time as the full-batch recipes'), so the crossing is read on a grid as
# fine as theirs (every 200 at e6b138c: 3.3 minutes apart on the AVX2 EPYC).
FAST_START = ["data.batch_tokens=2000", "train.warmup_steps=100", "train.decay_start=2000", "train.decay_steps=1000"]
# B with half its warm-up and the peer's dropout: ahead of B by about 0.13 nats of dev loss at
# update 600 in one seed (docs/time-to-quality.md, "Leaving the plateau sooner")
SHORT_WARMUP = [*FAST_START, "train.warmup_steps=50", "model.dropout=0.1"]
# fairseq's own search rule: a hypothesis's log-probability divided by its length (lenpen 1)
PEER_SEARCH = [*SHORT_WARMUP, "search.normalize=length"]
# the checkpoints hold the weights' moving average; within the budget its warm-up governs
# (an average over about the last ninth of the updates so far; rnmt.training.weight_average)
AVERAGED = [*PEER_SEARCH, "train.ema_decay=0.999"]

SYSTEMS: Dict[str, System] = {s.name: s for s in (
    # Each rnmt system names its precision: train.amp's default (auto) picks bf16 on CPUs
    # measured fast in it, so an unnamed one would change meaning from machine to machine.
    Rnmt("rnmt-rnnsearch", "rnmt RNNSearch (GRU, fp32)", sets=["train.amp=none"]),
    Rnmt("rnmt-rnnsearch-bf16", "rnmt RNNSearch (GRU, bf16)", sets=["train.amp=bf16"]),
    Rnmt("rnmt-rnnsearch-fast-start", "rnmt RNNSearch (GRU, fp32, half batches)", save_every=100,
         sets=["train.amp=none", *FAST_START]),
    Rnmt("rnmt-rnnsearch-fast-start-bf16", "rnmt RNNSearch (GRU, bf16, half batches)", save_every=100,
         sets=["train.amp=bf16", *FAST_START]),
    Rnmt("rnmt-rnnsearch-short-warmup", "rnmt RNNSearch (GRU, fp32, half batches, warm-up 50, dropout 0.1)",
         save_every=100, sets=["train.amp=none", *SHORT_WARMUP]),
    Rnmt("rnmt-rnnsearch-peer-search", "rnmt RNNSearch (GRU, fp32, half batches, warm-up 50, dropout 0.1, "
         "length-normalised search)", save_every=100, sets=["train.amp=none", *PEER_SEARCH]),
    Rnmt("rnmt-rnnsearch-averaged", "rnmt RNNSearch (GRU, fp32, half batches, warm-up 50, dropout 0.1, "
         "length-normalised search, weight average)", save_every=100, sets=["train.amp=none", *AVERAGED]),
    Rnmt("rnmt-rnnsearch-averaged-bf16", "rnmt RNNSearch (GRU, bf16, half batches, warm-up 50, dropout 0.1, "
         "length-normalised search, weight average)", save_every=100, sets=["train.amp=bf16", *AVERAGED]),
    Rnmt("rnmt-dtmt1", "rnmt DTMT#1 (fp32)", config="ttq-dtmt1.yaml", sets=["train.amp=none"]),
    Rnmt("rnmt-dtmt1-bf16", "rnmt DTMT#1 (bf16)", config="ttq-dtmt1.yaml", sets=["train.amp=bf16"]),
    Fairseq("fairseq-lstm", "fairseq LSTM", arch_args=FAIRSEQ_LSTM),
    Fairseq("fairseq-transformer", "fairseq Transformer 3+3", save_every=200, arch_args=FAIRSEQ_TRANSFORMER),
)}

DEFAULT_SYSTEMS = ("rnmt-rnnsearch", "rnmt-rnnsearch-bf16", "rnmt-rnnsearch-averaged", "rnmt-dtmt1", "fairseq-lstm",
                   "fairseq-transformer")

# -- one system -----------------------------------------------------------------------------
def timed_checkpoints(system: System, work: Path, started: float) -> List[Checkpoint]:
    return [Checkpoint(p, update, p.stat().st_mtime - started) for p, update in system.checkpoints(work)]


def pick(checkpoints: List[Checkpoint], budget: float, points: int) -> List[Checkpoint]:
    """For each of ``points`` marks evenly spread over the budget, the last checkpoint saved
    at or before it (a checkpoint serves one mark at most)."""
    chosen: List[Checkpoint] = []
    for k in range(1, points + 1):
        mark = budget * k / points
        before = [c for c in checkpoints if c.seconds <= mark]
        if before and (not chosen or before[-1].update != chosen[-1].update):
            chosen.append(before[-1])
    return chosen


def score(hyps: List[str], data: Path, split: str) -> Dict[str, float]:
    import sacrebleu

    refs = (data / "raw" / f"{split}.tgt").read_text(encoding="utf-8").splitlines()
    if len(hyps) != len(refs):
        raise RuntimeError(f"{len(hyps)} {split} hypotheses for {len(refs)} references")
    bleu = sacrebleu.corpus_bleu(hyps, [refs])
    return {"bleu": round(bleu.score, 2), "chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
            "length_ratio": round(bleu.sys_len / max(bleu.ref_len, 1), 3)}


def run_system(system: System, data: Path, out: Path, minutes: float, points: int, threads: int,
               keep: bool, log=print) -> Dict:
    import shutil

    work = out / system.name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    system.setup(work, data, threads)
    setup_seconds = time.perf_counter() - t0
    budget = minutes * 60
    log(f"[{system.name}] training for {minutes:g} minutes of wall-clock time ...")
    started = time.time()
    child = run_child(system.train_command(work, data, threads), system.env(threads), work / "train.log",
                      timeout=budget)
    if child.returncode != 0 and not child.timed_out:
        raise RuntimeError(f"{system.name}: training exited with {child.returncode} (see {work / 'train.log'})")
    saved = timed_checkpoints(system, work, started)
    in_budget = [c for c in saved if c.seconds <= budget]
    chosen = pick(in_budget, budget, points)
    log(f"[{system.name}] {len(in_budget)} checkpoints within the budget (last at update "
        f"{in_budget[-1].update if in_budget else 0}); scoring {len(chosen)}")
    rows = []
    for c in chosen:
        row: Dict = {"update": c.update, "minutes": round(c.seconds / 60, 2)}
        for split in SPLITS:
            hyps, seconds = system.decode(c.path, split, work, data, threads)
            row[split] = score(hyps, data, split)
            row[f"{split}_decode_seconds"] = round(seconds, 1)
        log(f"[{system.name}] update {c.update} at {row['minutes']:.1f} min: dev BLEU {row['dev']['bleu']:.2f}, "
            f"test BLEU {row['test']['bleu']:.2f}")
        rows.append(row)
    if not keep:
        for c in saved:
            if c not in chosen[-1:]:
                c.path.unlink(missing_ok=True)
    return {"label": system.label, "setup_seconds": round(setup_seconds, 1),
            "train_wall_seconds": round(child.seconds, 1), "peak_rss_mib": round(child.max_rss_mib),
            "updates_in_budget": in_budget[-1].update if in_budget else 0,
            "parameters": system.parameters(work, child.log), "points": rows}


def machine() -> str:
    from rnmt.reproduce.machine import cpu_bf16, cpu_model

    bf16 = cpu_bf16()
    return f"{cpu_model()}{f' ({bf16})' if bf16 else ''}, {platform.machine()}, {os.cpu_count()} cores"


# -- report ---------------------------------------------------------------------------------
def first_reaching(points: List[Dict], target: float) -> Optional[float]:
    """Minutes of the first scored checkpoint whose test BLEU is at least ``target``."""
    return next((p["minutes"] for p in points if p["test"]["bleu"] >= target), None)


def report(results: Dict) -> str:
    meta, systems = results["meta"], results["systems"]
    lines = [f"Time to quality on {meta['corpus']} ({meta['train_pairs']} training pairs, joint "
             f"{meta['vocab_size']} BPE), {meta['threads']} threads, {meta['minutes']:g} minutes of wall-clock "
             f"training per system, one system at a time; beam 5, sacrebleu BLEU on detokenised text.",
             f"Commit {meta['commit']}, {meta['machine']}; command: `{meta['command']}`.", ""]
    for name, r in systems.items():
        where = "".join(f", {key} {r[key]}" for key in ("commit", "machine")
                        if r.get(key) and r[key] != meta[key])
        if r.get("command") and r["command"] != meta["command"]:
            where += f"; command `{r['command']}`"
        lines += [f"**{r['label']}** ({name}{where}): {r['updates_in_budget']} updates in the budget, "
                  f"peak RSS {r['peak_rss_mib']} MiB" + (f", {r['parameters']:,} parameters" if r.get("parameters")
                                                        else "")
                  + (f"; binarisation before the clock {r['setup_seconds']:.0f} s" if r["setup_seconds"] >= 1 else ""),
                  "", "| minutes | update | dev BLEU | dev chrF | test BLEU | test chrF | test length ratio |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for p in r["points"]:
            lines.append(f"| {p['minutes']:.1f} | {p['update']} | {p['dev']['bleu']:.2f} | {p['dev']['chrf']:.2f} | "
                         f"{p['test']['bleu']:.2f} | {p['test']['chrf']:.2f} | {p['test']['length_ratio']:.3f} |")
        lines.append("")
    peers = {n: r for n, r in systems.items() if not n.startswith("rnmt") and r["points"]}
    if peers:
        best_name, best = max(peers.items(), key=lambda kv: kv[1]["points"][-1]["test"]["bleu"])
        target, at = best["points"][-1]["test"]["bleu"], best["points"][-1]["minutes"]
        lines += [f"Best peer at the end of the budget: {best['label']}, test BLEU {target:.2f} at {at:.1f} min.", "",
                  "| rnmt system | first scored checkpoint at or above it (minutes) | share of the peer's time |",
                  "|---|---:|---:|"]
        for n, r in systems.items():
            if n.startswith("rnmt"):
                m = first_reaching(r["points"], target)
                lines.append(f"| {r['label']} | {'not reached' if m is None else f'{m:.1f}'} | "
                             f"{'-' if m is None else f'{m / at:.2f}'} |")
        lines.append("")
    return "\n".join(lines)


def plot(results: Dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2 + 0.22 * len(results["systems"])), sharey=True)
    for name, r in results["systems"].items():
        xs = [p["minutes"] for p in r["points"]]
        style = "-" if name.startswith("rnmt") else "--"
        for ax, split in zip(axes, SPLITS):
            ax.plot(xs, [p[split]["bleu"] for p in r["points"]], style, marker="o", markersize=3, label=r["label"])
    for ax, split in zip(axes, SPLITS):
        ax.set_title(f"{split} BLEU (beam 5)")
        ax.set_xlabel("wall-clock training minutes")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("BLEU")
    # Below both plots, one entry per row: the systems' labels are long.
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=1, frameon=False)
    meta = results["meta"]
    fig.suptitle(f"Time to quality, {meta['corpus']}, {meta['threads']} threads (commit {meta['commit']})", fontsize=10)
    fig.tight_layout(rect=(0, 0.036 * len(labels) + 0.01, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(results: Dict, out: Path) -> None:
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "results.md").write_text(report(results), encoding="utf-8")
    if any(r["points"] for r in results["systems"].values()):
        plot(results, out / "curves.png")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), help=f"comma-separated, of: {', '.join(SYSTEMS)}")
    p.add_argument("--minutes", type=float, default=20.0, help="wall-clock training budget per system")
    p.add_argument("--points", type=int, default=10, help="checkpoints scored per system")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", default=str(DEFAULT_DATA), help="shared data directory (default: ../shared/data)")
    p.add_argument("--out", default=str(REPO / "runs" / "time-to-quality"))
    p.add_argument("--keep", action="store_true", help="keep every checkpoint (default: only the last scored one)")
    p.add_argument("--save-every", type=int, default=None, help="checkpoint interval in updates for every system")
    p.add_argument("--seed", type=int, default=1, help="training seed of every system (recorded per system)")
    p.add_argument("--redo", action="store_true", help="train systems again that OUT/results.json already has")
    p.add_argument("--report-only", action="store_true", help="rewrite results.md and curves.png from results.json")
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results_file = out / "results.json"
    if args.report_only:
        write(json.loads(results_file.read_text()), out)
        return 0
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        print(f"time_to_quality: unknown system(s) {', '.join(unknown)}; known: {', '.join(SYSTEMS)}", file=sys.stderr)
        return 2
    stats = prepare(Path(args.data), out / "data")
    if "test" not in stats:
        print("time_to_quality: the corpus has no test split", file=sys.stderr)
        return 2
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    results = json.loads(results_file.read_text()) if results_file.is_file() else {"systems": {}}
    results["meta"] = {"corpus": stats["corpus"], "train_pairs": stats["train"]["pairs"],
                       "vocab_size": stats["vocab_size"], "threads": args.threads, "minutes": args.minutes,
                       "commit": commit, "machine": machine(),
                       "command": "python -m benchmarks.time_to_quality " + " ".join(shlex.quote(a) for a in
                                                                                    (argv or sys.argv[1:]))}
    for name in names:
        system = SYSTEMS[name]
        if args.save_every:
            system.save_every = args.save_every
        system.seed = args.seed
        ok, why = system.installed()
        if not ok:
            print(f"[{name}] skipped: {why}")
            continue
        if name in results["systems"] and not args.redo:
            print(f"[{name}] already in {results_file} (--redo trains it again)")
            continue
        results["systems"][name] = run_system(system, out / "data", out, args.minutes, args.points, args.threads,
                                              args.keep)
        # A later invocation may add systems at another commit or with other options: each
        # keeps its own.
        results["systems"][name].update(commit=commit, machine=results["meta"]["machine"],
                                        command=results["meta"]["command"], seed=args.seed)
        write(results, out)
    write(results, out)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
