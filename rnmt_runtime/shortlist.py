"""Lexical shortlists, the lists themselves: the file `rnmt shortlist` writes and the
candidate words of a batch (numpy and JSON only, so that the runtime reads them without
torch; `rnmt.search.shortlist` searches over them in PyTorch, `rnmt_runtime.graphs` over an
export).

The file is JSON (no code runs when it loads), keyed by pieces, with the fingerprints (the
SHA-256 of the sentencepiece model's bytes) of the vocabularies it was built with, so a
shortlist of another model is refused by name. A batch's list holds the special words
(pad, unk, bos, eos: ids 0-3, the smallest, so they keep their ids in it), the first
``n_frequent`` frequent target words and the first ``n_best`` translations of each of its
source words, sorted.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Sequence, Tuple

import numpy as np

from rnmt_runtime.errors import ExportError

FORMAT = "rnmt-shortlist"
VERSION = 1
SPECIALS = (0, 1, 2, 3)  # pad, unk, bos, eos (rnmt.data.vocab): listed in every shortlist
DEFAULT_FREQUENT = 100
DEFAULT_BEST = 50


def add_arguments(p: argparse.ArgumentParser, sampling: str, size: Callable[[str], int] = int) -> None:
    """``--shortlist FILE`` and ``--shortlist-sizes FREQUENT BEST`` for a command that searches
    (rnmt's and the runtime's translate and serve); ``sampling`` says what becomes of sampling
    there, ``size`` parses a size."""
    p.add_argument("--shortlist", metavar="FILE",
                   help=f"search each batch over a lexical shortlist of target subwords (rnmt shortlist builds it; "
                        f"faster, approximate; {sampling}; docs/translation.md \"Lexical shortlists\")")
    p.add_argument("--shortlist-sizes", type=size, nargs=2, metavar=("FREQUENT", "BEST"),
                   default=(DEFAULT_FREQUENT, DEFAULT_BEST),
                   help=f"the shortlist's most frequent target subwords and translations per source subword "
                        f"(default {DEFAULT_FREQUENT} {DEFAULT_BEST})")


@dataclass
class Shortlist:
    """Candidate target ids: ``frequent`` (most frequent first) and, per source id, its
    most probable translations (``best[s]``, most probable first); a batch takes the first
    ``n_frequent`` of the one and the first ``n_best`` of each of its sources' others."""

    frequent: np.ndarray  # [F] target ids
    best: List[np.ndarray]  # per source id: target ids
    n_frequent: int = DEFAULT_FREQUENT
    n_best: int = DEFAULT_BEST

    def with_sizes(self, n_frequent: int, n_best: int) -> Shortlist:
        """The same lists taken at other sizes (``--shortlist-sizes``)."""
        if n_frequent < 0 or n_best < 0:
            raise ExportError(f"shortlist sizes must be at least 0, got {n_frequent} frequent and {n_best} best")
        return Shortlist(self.frequent, self.best, n_frequent, n_best)

    def sizes(self) -> Dict[str, int]:
        """What a server's ``GET /model`` reports of it."""
        return {"frequent": self.n_frequent, "best": self.n_best}

    def rows(self, src: np.ndarray, also: Iterable[int] = ()) -> np.ndarray:
        """The sorted target ids a batch of source ids ``src`` ([B, S], padding included)
        searches over, plus ``also`` (prefix and constraint subwords)."""
        ids = [np.asarray(SPECIALS), self.frequent[:self.n_frequent], np.fromiter(also, dtype=np.int64)]
        if self.n_best:
            for s in np.unique(np.asarray(src)):
                if 0 <= s < len(self.best):
                    ids.append(self.best[s][:self.n_best])
        return np.unique(np.concatenate(ids).astype(np.int64))

    # -- the file ----------------------------------------------------------------------
    @staticmethod
    def document(frequent: Sequence[int], best: Sequence[Sequence[Tuple[int, float]]], src_vocab: Any,
                 tgt_vocab: Any, about: Dict[str, Any]) -> str:
        """The shortlist file's text: the frequent target pieces, each source piece's
        translations with p(t | s), the vocabularies' fingerprints and ``about`` (how it was
        built)."""
        piece = tgt_vocab.id_to_piece
        doc = {"format": FORMAT, "version": VERSION,
               "source_vocabulary": src_vocab.fingerprint, "target_vocabulary": tgt_vocab.fingerprint,
               **about,
               "frequent": [piece(t) for t in frequent],
               "translations": {src_vocab.id_to_piece(s): [[piece(t), round(p, 6)] for t, p in pairs]
                                for s, pairs in enumerate(best) if pairs}}
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"

    @classmethod
    def load(cls, path: str | Path, src_vocab: Any, tgt_vocab: Any) -> Shortlist:
        """Read a shortlist file for a model with these vocabularies; a missing, foreign or
        malformed file is an `ExportError` naming it."""
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ExportError(f"{path}: no such shortlist file") from None
        except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON; nesting too deep
            raise ExportError(f"{path}: not a shortlist file ({type(exc).__name__}: {str(exc)[:200]})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ExportError(f"{path}: not a shortlist file (no \"format\": \"{FORMAT}\"; rnmt shortlist writes one)")
        if doc.get("version") != VERSION:
            raise ExportError(f"{path}: shortlist version {doc.get('version')!r}; this rnmt reads version {VERSION}")
        for side, vocab in (("source", src_vocab), ("target", tgt_vocab)):
            if doc.get(f"{side}_vocabulary") != vocab.fingerprint:
                raise ExportError(f"{path}: built for another {side} vocabulary than this model's "
                                f"(rnmt shortlist --model MODEL builds one for it)")
        try:
            frequent = np.array([_id(tgt_vocab, p) for p in doc["frequent"]], dtype=np.int64)
            best = [np.zeros(0, dtype=np.int64) for _ in range(len(src_vocab))]
            for s, pairs in doc["translations"].items():
                best[_id(src_vocab, s)] = np.array([_id(tgt_vocab, t) for t, _ in pairs], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise ExportError(f"{path}: malformed shortlist ({type(exc).__name__}: {exc})") from None
        return cls(frequent, best)


def _id(vocab: Any, piece: Any) -> int:
    if not isinstance(piece, str):
        raise ValueError(f"a piece must be a string, got {piece!r}")
    i = vocab.piece_to_id(piece)
    if i == vocab.unk_id and piece != vocab.id_to_piece(vocab.unk_id):
        raise ValueError(f"piece {piece!r} is not in the vocabulary")
    return i


class ShortlistedModel:
    """An export's model (`rnmt_runtime.graphs.ExportedModel`) over the target ids ``rows``
    (sorted, the special words first): the search's word i is the vocabulary's ``rows[i]``.
    Each step runs the readout graph (the step without its output layer) and multiplies
    the readout by the listed rows of the output layer only, then normalises over them, as
    `rnmt.search.shortlist.ShortlistModel` does in PyTorch."""

    def __init__(self, model: Any, rows: np.ndarray) -> None:
        if list(rows[:len(SPECIALS)]) != list(SPECIALS):
            raise ValueError("a shortlist's rows start with the special words")
        weight, bias = model.output_layer()
        self.model, self.rows = model, rows
        self.weight_t = np.ascontiguousarray(weight[rows].T)  # [d, V'], the product's right-hand side
        self.bias = bias[rows]
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = model.pad_id, model.unk_id, model.bos_id, model.eos_id
        self.beam_shares_memory = model.beam_shares_memory
        self.reports_attention = model.reports_attention

    def encode(self, src: np.ndarray, src_mask: np.ndarray) -> Dict[str, np.ndarray]:
        return self.model.encode(src, src_mask)

    def init_state(self, memory: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        return self.model.init_state(memory)

    def step(self, prev: np.ndarray, state: Dict[str, np.ndarray],
             memory: Dict[str, np.ndarray]) -> Tuple[np.ndarray, Dict[str, np.ndarray], Dict[str, np.ndarray]]:
        readout, next_state, extras = self.model.readout_step(self.rows[prev], state, memory)
        if readout.ndim != 2 or readout.shape[1] != self.weight_t.shape[0]:
            raise ExportError(f"the readout step gives {readout.shape}, the output layer takes "
                              f"{self.weight_t.shape[0]} values a row: the export's files do not belong together")
        logits = readout @ self.weight_t + self.bias
        top = logits.max(axis=1, keepdims=True)
        log_probs = logits - (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))
        return log_probs.astype(np.float32, copy=False), next_state, extras

    def to_vocabulary(self, tokens: Sequence[int]) -> List[int]:
        """A search output over the shortlist in vocabulary ids."""
        return [int(self.rows[t]) for t in tokens]

    def to_shortlist(self, ids: Sequence[int]) -> List[int]:
        """Vocabulary ids (each in the shortlist) as the search's ids."""
        return [int(i) for i in np.searchsorted(self.rows, np.asarray(list(ids), dtype=np.int64))]
