"""Subword vocabularies: sentencepiece models with rnmt's fixed special ids.

Every vocabulary, trained here or loaded from a file, has ``<pad>``=0, ``<unk>``=1,
``<s>``=2 and ``</s>``=3, so models, batches and search can use the constants below.

Training is deterministic: the same lines and options always give a byte-identical model.
Three sentencepiece behaviours would break that and are switched off or pinned: sampling a
subset of sentences (``input_sentence_size``, seeded here when a cap is asked for),
shuffling them (``shuffle_input_sentence``) and the input file name recorded in the model
(sentences are fed from an iterator, never a temporary file).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import sentencepiece as spm

from rnmt.data.reading import PathLike, is_blank, iter_lines
from rnmt.errors import UserError, write_failure

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
MODEL_TYPES = ("bpe", "unigram", "word", "char")
# Whole tokens as given (text segmented beforehand, e.g. by subword-nmt) or characters: the
# size is a maximum, as a corpus may have fewer distinct tokens than asked for.
SIZE_IS_A_MAXIMUM = ("word", "char")


class Vocab:
    """A sentencepiece model plus the ids rnmt relies on.

    Build one with `load_vocab`, `Vocab.from_bytes` or `train_vocabs`. The model bytes
    (`to_bytes`) are the whole vocabulary: the trainer stores them next to checkpoints.
    """

    pad_id = PAD_ID
    unk_id = UNK_ID
    bos_id = BOS_ID
    eos_id = EOS_ID

    def __init__(self, model_bytes: bytes, path: Optional[PathLike] = None) -> None:
        self._bytes = bytes(model_bytes)
        self.path: Optional[str] = str(path) if path is not None else None
        name = self.path or "vocabulary bytes"
        self._sp = spm.SentencePieceProcessor()
        try:
            self._sp.LoadFromSerializedProto(self._bytes)
        except (RuntimeError, OSError):
            raise UserError(f"{name}: not a sentencepiece model") from None
        found = (self._sp.pad_id(), self._sp.unk_id(), self._sp.bos_id(), self._sp.eos_id())
        if found != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise UserError(
                f"{name}: special ids (pad, unk, bos, eos) are {found}, rnmt needs (0, 1, 2, 3); "
                "retrain with pad_id=0 unk_id=1 bos_id=2 eos_id=3"
            )

    @classmethod
    def from_bytes(cls, model_bytes: bytes) -> Vocab:
        """Rebuild a vocabulary from `to_bytes` output (e.g. read back from a checkpoint)."""
        return cls(model_bytes)

    def to_bytes(self) -> bytes:
        """The serialised sentencepiece model."""
        return self._bytes

    def save(self, path: PathLike) -> None:
        """Write the model to `path` (a regular ``.model`` file sentencepiece can load).

        Written under a temporary name and renamed: a failed write (a full disk) leaves no
        torn model for a later run to pick up."""
        target = Path(path)
        tmp = target.with_name(f".{target.name}.tmp")
        try:
            tmp.write_bytes(self._bytes)
            os.replace(tmp, target)
        except KeyboardInterrupt:  # a signal while a run prepares: no temporary left behind
            tmp.unlink(missing_ok=True)
            raise
        except OSError as exc:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            what, advice = write_failure(exc)
            raise UserError(f"{target}: {what} while writing the vocabulary: {advice}") from None
        self.path = str(path)

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the model bytes: equal fingerprints mean identical vocabularies."""
        return hashlib.sha256(self._bytes).hexdigest()

    @property
    def size(self) -> int:
        return self._sp.GetPieceSize()

    @property
    def processor(self) -> spm.SentencePieceProcessor:
        """The sentencepiece processor itself (n-best lists, piece scores and types)."""
        return self._sp

    def __len__(self) -> int:
        return self.size

    @property
    def pieces(self) -> List[str]:
        """Every piece, indexed by id."""
        return [self._sp.IdToPiece(i) for i in range(self.size)]

    def id_to_piece(self, idx: int) -> str:
        return self._sp.IdToPiece(int(idx))

    def piece_to_id(self, piece: str) -> int:
        return self._sp.PieceToId(piece)

    def encode(self, text: str) -> List[int]:
        """Subword ids of `text`, without ``<s>`` or ``</s>``."""
        return self._sp.EncodeAsIds(text)

    def encode_batch(self, texts: Sequence[str]) -> List[List[int]]:
        """`encode` for many lines in one call (faster than a Python loop)."""
        return self._sp.Encode(list(texts), out_type=int)

    def encode_pieces(self, text: str) -> List[str]:
        """Subword pieces of `text` (for inspection and analysis plots)."""
        return self._sp.EncodeAsPieces(text)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`: stops at the first ``</s>``, drops ``<pad>`` and ``<s>``."""
        kept: List[int] = []
        for i in ids:
            i = int(i)
            if i == EOS_ID:
                break
            if i not in (PAD_ID, BOS_ID):
                kept.append(i)
        return self._sp.DecodeIds(kept)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self._bytes == other._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __repr__(self) -> str:
        return f"Vocab(size={self.size}, path={self.path!r})"

    # Pickle as bytes: the SWIG processor itself cannot be pickled (data loader workers).
    def __getstate__(self) -> dict:
        return {"bytes": self._bytes, "path": self.path}

    def __setstate__(self, state: dict) -> None:
        Vocab.__init__(self, state["bytes"], state["path"])


def load_vocab(path: PathLike) -> Vocab:
    """Load a sentencepiece ``.model`` file; its special ids must be rnmt's."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such vocabulary file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a sentencepiece .model file") from None
    return Vocab(data, path)


def _as_paths(files: Union[PathLike, Sequence[PathLike]]) -> List[PathLike]:
    if isinstance(files, (str, os.PathLike)):
        return [files]
    return list(files)


def _require_text(files: Sequence[PathLike]) -> None:
    """A file without a non-blank line is an error naming it: sentencepiece would fail on
    it with an internal assertion that names no file."""
    for path in files:
        if all(is_blank(line) for line in iter_lines(path)):  # stops at the first line with text
            raise UserError(f"{path}: no text to train the vocabulary on (the file is empty or has only "
                            f"blank lines)")


def _nonblank_lines(files: Sequence[PathLike]) -> Iterator[str]:
    for path in files:
        for line in iter_lines(path):
            if not is_blank(line):
                yield line


def _spm_message(exc: RuntimeError) -> str:
    """The readable part of a sentencepiece error, without its C++ file and condition:
    "INTERNAL: src/x.cc(744) [a == b] Vocabulary size too high (60). ..." -> "Vocabulary ..."."""
    last = str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
    return re.sub(r"^[A-Z_]+: \S+\(\d+\) \[.*?\] ?", "", last) or last


class _Guarded:
    """Iterator wrapper that keeps an exception (e.g. a `UserError` for invalid UTF-8)
    instead of letting sentencepiece turn it into a RuntimeError with a C++ trace."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._it = iter(lines)
        self.error: Optional[BaseException] = None

    def __iter__(self) -> _Guarded:
        return self

    def __next__(self) -> str:
        try:
            return next(self._it)
        except StopIteration:
            raise
        except BaseException as exc:  # noqa: BLE001 - re-raised by `reraise`
            self.error = exc
            raise StopIteration from None

    def reraise(self) -> None:
        if self.error is not None:
            raise self.error


def train_spm(
    lines: Iterable[str],
    vocab_size: int,
    model_type: str = "bpe",
    character_coverage: float = 1.0,
    seed: int = 1,
    max_sentences: int = 0,
    num_threads: int = 1,
    byte_fallback: bool = False,
    name: str = "vocabulary",
) -> Vocab:
    """Train one sentencepiece model in memory from `lines` and return it.

    `max_sentences` > 0 trains on a seeded random sample of that many lines (for very
    large corpora); 0 uses every line. `num_threads` is recorded in the model, so keep it
    fixed to keep models byte-identical.
    """
    if model_type not in MODEL_TYPES:
        raise UserError(f"vocabulary model_type must be one of {', '.join(MODEL_TYPES)}, got {model_type!r}")
    if not 0.0 < character_coverage <= 1.0:
        raise UserError(f"character_coverage must be in (0, 1], got {character_coverage}")
    spm.set_random_generator_seed(seed)
    # Passed only where it applies, so that BPE and unigram models stay byte for byte as before.
    size_rule: Dict[str, Any] = {"hard_vocab_limit": False} if model_type in SIZE_IS_A_MAXIMUM else {}
    out = io.BytesIO()
    guarded = _Guarded(lines)
    try:
        _interruptible(lambda: spm.SentencePieceTrainer.train(
            sentence_iterator=guarded,
            model_writer=out,
            vocab_size=vocab_size,
            model_type=model_type,
            character_coverage=character_coverage,
            byte_fallback=byte_fallback,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            pad_piece=PAD, unk_piece=UNK, bos_piece=BOS, eos_piece=EOS,
            input_sentence_size=max_sentences,
            shuffle_input_sentence=False,
            num_threads=num_threads,
            minloglevel=2,
            **size_rule,
        ))
    except RuntimeError as exc:
        guarded.reraise()
        raise UserError(f"{name}: sentencepiece training failed: {_spm_message(exc)}") from None
    guarded.reraise()
    return Vocab(out.getvalue())


_RUNNING: List[threading.Event] = []  # one per training `_interruptible` runs: set when it ends


def training_abandoned() -> bool:
    """Whether a sentencepiece training that `_interruptible` stopped waiting for still runs.
    A process must then leave with ``os._exit``: at a normal exit C++'s static destructors
    run under the training's threads, and the C++ runtime aborts ("terminate called without
    an active exception", SIGABRT). (An event, not ``Thread.is_alive``, which an interrupted
    ``join`` can leave saying False.)"""
    return any(not done.is_set() for done in _RUNNING)


def _interruptible(train: Callable[[], Any]) -> Any:
    """``train()`` in a worker thread while this one waits in short joins. Sentencepiece
    trains in C++ (the GIL released) for seconds to minutes on a large corpus without coming
    back to Python, and a signal's Python handler runs only when this thread does: a SIGTERM
    while a run prepares (`rnmt.training.signals.interrupt_preparation`) would wait for the
    training's end. Here it stops the wait at once; the worker, a daemon, ends with the
    process (see `training_abandoned`). Its exception, if any, is raised here."""
    outcome: Dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = train()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    _RUNNING[:] = [d for d in _RUNNING if not d.is_set()] + [done]
    threading.Thread(target=work, name="sentencepiece-training", daemon=True).start()
    while not done.wait(0.1):
        pass
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def train_vocabs(
    src_files: Union[PathLike, Sequence[PathLike]],
    tgt_files: Union[PathLike, Sequence[PathLike]],
    out_dir: PathLike,
    joint: bool = True,
    model_type: str = "bpe",
    src_size: int = 8000,
    tgt_size: int = 8000,
    character_coverage: float = 1.0,
    seed: int = 1,
    max_sentences: int = 0,
    byte_fallback: bool = False,
) -> Tuple[Vocab, Vocab]:
    """Train source and target vocabularies and write them to `out_dir`.

    Joint: one model of `src_size` pieces trained on both sides, written to
    ``spm.model`` and returned twice. Separate: ``spm.src.model`` (`src_size`) and
    ``spm.tgt.model`` (`tgt_size`). Blank lines are ignored.
    """
    src_paths, tgt_paths = _as_paths(src_files), _as_paths(tgt_files)
    _require_text(src_paths + tgt_paths)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    def train(lines: Iterable[str], size: int, name: str) -> Vocab:
        return train_spm(lines, size, model_type=model_type, character_coverage=character_coverage, seed=seed,
                         max_sentences=max_sentences, byte_fallback=byte_fallback, name=name)

    def named(kind: str, files: Sequence[PathLike]) -> str:  # sentencepiece's errors name no file
        return f"{kind} vocabulary of {', '.join(str(f) for f in files)}"

    if joint:
        vocab = train(_nonblank_lines(src_paths + tgt_paths), src_size, named("joint", src_paths + tgt_paths))
        vocab.save(out / "spm.model")
        return vocab, vocab
    src_vocab = train(_nonblank_lines(src_paths), src_size, named("source", src_paths))
    tgt_vocab = train(_nonblank_lines(tgt_paths), tgt_size, named("target", tgt_paths))
    src_vocab.save(out / "spm.src.model")
    tgt_vocab.save(out / "spm.tgt.model")
    return src_vocab, tgt_vocab
