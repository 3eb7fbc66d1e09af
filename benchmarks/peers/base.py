"""What every system in the comparison provides to ``benchmarks/run.py``.

A driver turns the shared settings (:class:`Settings`) into the commands of one toolkit
and reads the toolkit's own logs back into common figures. It never imports the toolkit:
the commands run inside the toolkit's venv (``benchmarks/peers/<name>/venv``), so the
drivers themselves run under any Python 3.11 (``run.py`` uses rnmt's).

Measured training window: the run trains ``warmup + steps`` updates and logs every
``log_every`` updates; the intervals that end after the warm-up are the window. Each
driver reads, per logged interval, the real (non-padding) target tokens of the batches it
processed and the seconds it took, and the window's rate is total tokens / total seconds.
Target tokens include the end-of-sentence symbol, which every toolkit predicts and counts
in its loss (see benchmarks/README.md, "How throughput is read").
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

PEERS_DIR = Path(__file__).resolve().parent


@dataclass
class Settings:
    data: Path  # the prepared data (benchmarks/prepare.py): pieces/, raw/, spm.model, vocab.txt
    stats: Dict  # prepare's stats.json
    work: Path  # this system's working directory for the run
    steps: int = 200  # measured updates
    warmup: int = 20  # updates before the window
    log_every: int = 10
    threads: int = 2
    batch_tokens: int = 4000  # rnmt's budget: padded source + target tokens per batch
    emb: int = 256
    hidden: int = 512
    dropout: float = 0.1
    beam: int = 5
    seed: int = 1
    dev_sentences: Optional[int] = None  # decode only the first N dev sentences (smoke tests)
    device: str = "cpu"  # "cuda": train and decode on the GPU (benchmarks/gpu.py)
    precision: str = "fp32"  # "fp16": the peer's half precision on a GPU (benchmarks/gpu.py)

    def dev_source(self, kind: str) -> Path:
        """The dev source to decode: ``kind`` is "pieces" (peers) or "raw" (rnmt)."""
        full = self.data / kind / "dev.src"
        if not self.dev_sentences:
            return full
        part = self.data / kind / f"dev.first{self.dev_sentences}.src"
        if not part.exists():
            with open(full, encoding="utf-8") as fh:
                lines = [next(fh) for _ in range(min(self.dev_sentences, self.stats["dev"]["pairs"]))]
            part.write_text("".join(lines), encoding="utf-8")
        return part

    @property
    def total_steps(self) -> int:
        return self.warmup + self.steps

    @property
    def side_tokens(self) -> int:
        """Budget for toolkits whose batch size counts ``sentences x max(src_len, tgt_len)``:
        half of rnmt's source + target budget, so that batches hold about as many target
        tokens as rnmt's."""
        return self.batch_tokens // 2

    @property
    def max_output_len(self) -> int:
        """Absolute output cap for toolkits without a per-sentence one: rnmt's rule
        (1.5 x source length + 10) applied to the longest dev source."""
        return int(1.5 * (self.stats["dev"].get("max_src_len", 100) + 1) + 10)


@dataclass
class Window:
    """Training throughput over the measured window."""

    tokens: float  # real target tokens (incl. </s>)
    seconds: float
    steps: int
    batches_tokens: Optional[float] = None  # mean real target tokens per update

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


@dataclass
class Decoded:
    seconds: float  # the toolkit's own timing of the search (model loading excluded)
    sentences: int
    output_tokens: int  # pieces of the best hypotheses, </s> not counted
    hypotheses: Path


class Peer:
    """A toolkit in the comparison; subclasses fill in the commands and log readers."""

    name = "peer"
    label = "peer"
    package = ""  # distribution name whose version is reported
    hypotheses_are_pieces = True  # the decoder writes sentencepiece pieces (rnmt writes text)
    cell = "gru"

    @property
    def folder(self) -> Path:
        return PEERS_DIR / self.name

    @property
    def venv(self) -> Path:
        return self.folder / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def installed(self) -> Tuple[bool, str]:
        if not self.python.exists():
            return False, f"not set up (run: bash benchmarks/peers/{self.name}/setup.sh)"
        return True, ""

    def env(self, s: Settings) -> Dict[str, str]:
        env = dict(os.environ)
        n = str(s.threads)
        env.update(OMP_NUM_THREADS=n, MKL_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n,
                   PYTHONHASHSEED="0", TOKENIZERS_PARALLELISM="false")
        if s.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        env.pop("PYTHONPATH", None)
        return env

    # -- to implement ------------------------------------------------------------------
    def train_command(self, s: Settings) -> List[str]:
        raise NotImplementedError

    def train_window(self, s: Settings, log_text: str) -> Window:
        raise NotImplementedError

    def decode_command(self, s: Settings) -> List[str]:
        raise NotImplementedError

    def decode_result(self, s: Settings, log_text: str) -> Decoded:
        raise NotImplementedError

    def parameters(self, s: Settings, log_text: str) -> Optional[int]:
        raise NotImplementedError

    def flops_model(self, s: Settings):
        """The architecture for benchmarks/flops.py."""
        raise NotImplementedError

    def version(self) -> str:
        import subprocess

        code = f"from importlib.metadata import version; print(version({self.package!r}))"
        try:
            out = subprocess.run([str(self.python), "-c", code], capture_output=True, text=True, timeout=60)
            return out.stdout.strip() or "?"
        except (OSError, subprocess.SubprocessError):
            return "?"


def window_from_intervals(intervals: List[Tuple[int, float, float]], s: Settings) -> Window:
    """``intervals``: (step at the end of the interval, target tokens, seconds) per log line.

    Keeps the intervals that start at or after the warm-up and end within the run.
    """
    kept = [(step, tok, sec) for step, tok, sec in intervals if s.warmup < step <= s.total_steps
            and step - s.log_every >= s.warmup]
    if not kept:
        raise RuntimeError(f"no logged interval after the warm-up of {s.warmup} updates "
                           f"(intervals end at {[i[0] for i in intervals]})")
    tokens = sum(k[1] for k in kept)
    seconds = sum(k[2] for k in kept)
    steps = len(kept) * s.log_every
    return Window(tokens=tokens, seconds=seconds, steps=steps, batches_tokens=tokens / steps)


def count_output_tokens(path: Path) -> Tuple[int, int]:
    """(lines, whitespace-separated pieces) of a hypothesis file."""
    lines = tokens = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            lines += 1
            tokens += len(line.split())
    return lines, tokens


def replace(s: Settings, **kw) -> Settings:
    return dataclasses.replace(s, **kw)
