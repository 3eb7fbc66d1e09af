"""The export's sentencepiece models, used exactly as ``rnmt translate`` uses them: text to
sentencepiece ids (rnmt's model ids are sentencepiece's own), ids back to text stopping at
the first end of sentence and leaving out padding and begin-of-sentence."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Dict, Iterable, List

import sentencepiece as spm

from rnmt_runtime.errors import ExportError


class Vocab:
    """One sentencepiece model file; ``special`` holds the model's pad/unk/bos/eos ids."""

    def __init__(self, path: Path, special: Dict[str, int]) -> None:
        self.path = path
        self._sp = spm.SentencePieceProcessor()
        try:
            # From bytes: sentencepiece parses a protocol buffer; nothing in it runs.
            model_bytes = path.read_bytes()
            self._sp.LoadFromSerializedProto(model_bytes)
        except OSError as exc:
            raise ExportError(f"{path}: cannot read the vocabulary: {exc.strerror}") from None
        except RuntimeError:
            raise ExportError(f"{path}: not a sentencepiece model") from None
        found = {"pad": self._sp.pad_id(), "unk": self._sp.unk_id(), "bos": self._sp.bos_id(),
                 "eos": self._sp.eos_id()}
        if found != {k: special[k] for k in found}:
            raise ExportError(f"{path}: its special ids {found} differ from the manifest's special_ids {special}")
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = (special[k] for k in ("pad", "unk", "bos", "eos"))
        self._pieces: List[str] = []
        # SHA-256 of the model's bytes, as rnmt's Vocab.fingerprint (a shortlist names its vocabularies so)
        self.fingerprint = hashlib.sha256(model_bytes).hexdigest()

    def __len__(self) -> int:
        return self._sp.GetPieceSize()

    @property
    def pieces(self) -> List[str]:
        if not self._pieces:
            self._pieces = [self._sp.IdToPiece(i) for i in range(len(self))]
        return self._pieces

    def encode(self, text: str) -> List[int]:
        return self._sp.EncodeAsIds(text)

    def id_to_piece(self, idx: int) -> str:
        return self._sp.IdToPiece(int(idx))

    def piece_to_id(self, piece: str) -> int:
        return self._sp.PieceToId(piece)

    def decode(self, ids: Iterable[int]) -> str:
        kept: List[int] = []
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                kept.append(i)
        return self._sp.DecodeIds(kept)
