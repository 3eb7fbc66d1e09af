"""The teacher translates the training sources, chunk by chunk, resumably.

Chunk k holds the translations of source lines ``[k * C, (k + 1) * C)`` (C:
``--chunk-lines``) in ``DIR/decode/chunk-K.jsonl``, one JSON object per line: the kept
hypothesis and the teacher's cross-entropy per subword on it (natural log, ``</s>``
counted; None for a blank source). Each chunk is written to a temporary file and renamed
into place once whole (`atomic_write_text`), so after a kill at any point a chunk file is
complete or absent: a resumed run keeps every chunk file it finds, decodes only the missing
ones, and never writes a line twice. Decoding is deterministic on a CPU (the same chunk
gives the same batches), so the result equals an uninterrupted run's.

With ``nbest > 1`` the kept hypothesis is the one of the n-best list with the highest
sentence chrF against the reference (as the Marian distillation pipelines choose), ties
going to the teacher's order.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from rnmt.training.checkpoint import atomic_write_text

DECODE_DIR = "decode"


def chunk_path(directory: Path, k: int) -> Path:
    return directory / f"chunk-{k:06d}.jsonl"


def chunk_count(lines: int, chunk_lines: int) -> int:
    return (lines + chunk_lines - 1) // chunk_lines


def cross_entropy(token_log_probs: Sequence[float]) -> Optional[float]:
    """Mean negative log-probability per subword; None for no subwords (a blank line)."""
    return -sum(token_log_probs) / len(token_log_probs) if token_log_probs else None


def best_by_chrf(hypotheses: Sequence, reference: str):
    """The hypothesis with the highest sentence chrF against ``reference`` (the first of
    equals: the teacher's own order breaks ties)."""
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    scores = [chrf.sentence_score(h.text, [reference]).score for h in hypotheses]
    return hypotheses[max(range(len(scores)), key=lambda i: (scores[i], -i))]


def translate_chunk(model, sources: List[str], references: List[str], beam: int, nbest: int) -> List[dict]:
    """One chunk's records: the kept hypothesis and its cross-entropy per subword."""
    from rnmt.errors import LongLineWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LongLineWarning)  # a long line is translated in pieces, as translate does
        results = model.translate(sources, beam=beam, nbest=nbest, token_scores=True)
    records = []
    for hyps, ref in zip(results, references):
        hyp = best_by_chrf(hyps, ref) if nbest > 1 else hyps
        ce = cross_entropy(hyp.token_log_probs)
        records.append({"hyp": hyp.text, "ce": None if ce is None else round(ce, 6)})
    return records


def decode_all(model, sources: List[str], references: List[str], directory: Path, chunk_lines: int, beam: int,
               nbest: int, log: Callable[[str], None]) -> None:
    """Translate every chunk without a file yet; chunks already there are kept as they are."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(".chunk-*.tmp"):  # temporaries of a killed write: never a finished chunk
        stale.unlink(missing_ok=True)
    total = chunk_count(len(sources), chunk_lines)
    todo = [k for k in range(total) if not chunk_path(directory, k).is_file()]
    if len(todo) < total:
        log(f"decode: {total - len(todo)} of {total} chunks already done, kept; decoding {len(todo)}")
    left = sum(len(sources[k * chunk_lines:(k + 1) * chunk_lines]) for k in todo)
    done_lines, start = 0, time.perf_counter()
    for k in todo:
        lo, hi = k * chunk_lines, min((k + 1) * chunk_lines, len(sources))
        records = translate_chunk(model, sources[lo:hi], references[lo:hi], beam, nbest)
        atomic_write_text(chunk_path(directory, k), "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                            for r in records))
        done_lines += hi - lo
        rate = done_lines / max(time.perf_counter() - start, 1e-9)
        log(f"decode: chunk {k + 1}/{total} (lines {lo + 1:,}-{hi:,} of {len(sources):,}), {rate:.1f} lines/s, "
            f"ETA {_duration((left - done_lines) / rate)}")


def read_chunks(directory: Path, lines: int, chunk_lines: int) -> List[Tuple[str, Optional[float]]]:
    """Every line's (hypothesis, cross-entropy), in source order, from the finished chunks."""
    out: List[Tuple[str, Optional[float]]] = []
    for k in range(chunk_count(lines, chunk_lines)):
        with open(chunk_path(directory, k), encoding="utf-8") as f:
            out.extend((r["hyp"], r["ce"]) for r in map(json.loads, f))
    if len(out) != lines:
        raise RuntimeError(f"{directory}: {len(out)} decoded lines for {lines} sources")  # a bug, not the user's
    return out


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}h{rest // 60:02d}m" if h else f"{rest // 60}m{rest % 60:02d}s"
