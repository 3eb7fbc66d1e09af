"""Shared data for the peer comparison: one sentencepiece model, one encoded corpus.

Every toolkit in the comparison reads the same pairs cut into the same pieces:

* a joint 8k BPE sentencepiece model is trained once on the training corpus (both sides)
  with rnmt's deterministic trainer (special ids ``<pad>``=0, ``<unk>``=1, ``<s>``=2,
  ``</s>``=3);
* training pairs with an empty side or with more than ``max_len - 1`` pieces on either side
  are dropped (rnmt's ``data.max_len`` rule: a side plus ``</s>`` must fit in ``max_len``),
  so that no toolkit filters anything further;
* the kept pairs are written twice: as raw text (``raw/``, what rnmt reads; it segments
  them with the same model) and as space-separated pieces (``pieces/``, what the peers
  read, so that they do no tokenisation of their own);
* ``vocab.txt`` lists the model's ordinary pieces (its four special symbols left out, each
  toolkit adds its own) as ``piece count`` lines, in the model's order.

Layout written under ``OUT``::

    spm.model  spm.vocab  vocab.txt  stats.json
    raw/{train,dev,test}.{src,tgt}      pieces/{train,dev,test}.{src,tgt}

(test only where the corpus has one).

The language suffixes are replaced by ``src`` / ``tgt`` so the peers need no language
options. Run as ``python -m benchmarks.prepare --data ../shared/data --out DIR``; ``run.py``
calls :func:`prepare` itself.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parent.parent

DEFAULT_DATA = REPO.parent / "shared" / "data"
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")


def _read(path: Path) -> List[str]:
    with open(path, encoding="utf-8", newline="\n") as fh:
        return [line.rstrip("\n").rstrip("\r") for line in fh]


def _write(path: Path, lines: List[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")


def _fingerprint(paths: List[Path], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def prepare(data_dir: Path, out: Path, corpus: str = "bible-es-en", src: str = "es", tgt: str = "en",
            vocab_size: int = 8000, max_len: int = 100, log=print) -> Dict:
    """Build (or reuse, when the inputs are unchanged) the shared data under ``out``."""
    from rnmt.data import load_vocab, train_vocabs

    base = Path(data_dir) / corpus
    # the test split is optional (a corpus may have only train and dev)
    splits = ("train", "dev", "test") if (base / f"test.{src}").is_file() else ("train", "dev")
    inputs = {f"{split}.{side}": base / f"{split}.{lang}"
              for split in splits for side, lang in (("src", src), ("tgt", tgt))}
    for path in inputs.values():
        if not path.is_file():
            raise SystemExit(f"prepare: file not found: {path} (set --data to the shared data directory)")
    key = _fingerprint(list(inputs.values()), f"{vocab_size}/{max_len}/v3")
    stats_file = out / "stats.json"
    if stats_file.is_file():
        stats = json.loads(stats_file.read_text())
        if stats.get("key") == key and (out / "spm.model").is_file():
            log(f"prepare: reusing {out}")
            return stats

    out.mkdir(parents=True, exist_ok=True)
    log(f"prepare: training a joint {vocab_size} BPE sentencepiece model on {base}/train.{{{src},{tgt}}} ...")
    vocab, _ = train_vocabs(inputs["train.src"], inputs["train.tgt"], out, joint=True, model_type="bpe",
                            src_size=vocab_size, tgt_size=vocab_size, seed=1)
    vocab = load_vocab(out / "spm.model")
    pieces = vocab.pieces
    assert tuple(pieces[:4]) == SPECIALS, pieces[:4]

    stats: Dict = {"key": key, "corpus": corpus, "src": src, "tgt": tgt, "vocab_size": vocab.size,
                   "max_len": max_len}
    counts: collections.Counter = collections.Counter()
    for split in splits:
        s_lines, t_lines = _read(inputs[f"{split}.src"]), _read(inputs[f"{split}.tgt"])
        if len(s_lines) != len(t_lines):
            raise SystemExit(f"prepare: {split}: {len(s_lines)} source lines but {len(t_lines)} target lines")
        s_pieces = [vocab.encode_pieces(x) for x in s_lines]
        t_pieces = [vocab.encode_pieces(x) for x in t_lines]
        keep: List[int] = []
        dropped_empty = dropped_long = 0
        for i, (sp, tp) in enumerate(zip(s_pieces, t_pieces)):
            if not s_lines[i].strip() or not t_lines[i].strip():
                dropped_empty += 1
            elif split == "train" and (len(sp) + 1 > max_len or len(tp) + 1 > max_len):
                dropped_long += 1
            else:
                keep.append(i)
        if split == "train":
            for i in keep:
                counts.update(s_pieces[i])
                counts.update(t_pieces[i])
        _write(out / "raw" / f"{split}.src", [s_lines[i] for i in keep])
        _write(out / "raw" / f"{split}.tgt", [t_lines[i] for i in keep])
        _write(out / "pieces" / f"{split}.src", [" ".join(s_pieces[i]) for i in keep])
        _write(out / "pieces" / f"{split}.tgt", [" ".join(t_pieces[i]) for i in keep])
        src_tokens = sum(len(s_pieces[i]) for i in keep)
        tgt_tokens = sum(len(t_pieces[i]) for i in keep)
        stats[split] = {
            "pairs": len(keep), "dropped_empty": dropped_empty, "dropped_long": dropped_long,
            # pieces only; every toolkit adds one </s> per sentence on top
            "src_pieces": src_tokens, "tgt_pieces": tgt_tokens,
            "mean_src_len": src_tokens / max(len(keep), 1), "mean_tgt_len": tgt_tokens / max(len(keep), 1),
            "max_src_len": max((len(s_pieces[i]) for i in keep), default=0),
            # with </s> on both sides: source tokens per target token, and the source
            # positions one target token attends to on average (weighted by target length)
            "src_per_tgt": (src_tokens + len(keep)) / max(tgt_tokens + len(keep), 1),
            "attn_src_per_tgt": sum((len(s_pieces[i]) + 1) * (len(t_pieces[i]) + 1) for i in keep)
            / max(tgt_tokens + len(keep), 1),
        }
        log(f"prepare: {split}: kept {len(keep)} pairs (dropped {dropped_empty} empty, {dropped_long} too long); "
            f"mean length {stats[split]['mean_src_len']:.1f} / {stats[split]['mean_tgt_len']:.1f} pieces")
    # Counts are what fairseq's dictionary format wants; pieces never seen get 1 so that no
    # toolkit drops them (all keep every entry of the file).
    _write(out / "vocab.txt", [f"{p} {max(counts[p], 1)}" for p in pieces[len(SPECIALS):]])
    stats_file.write_text(json.dumps(stats, indent=2) + "\n")
    return stats


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(DEFAULT_DATA), help="shared data directory (default: ../shared/data)")
    p.add_argument("--corpus", default="bible-es-en")
    p.add_argument("--src", default="es")
    p.add_argument("--tgt", default="en")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    stats = prepare(Path(args.data), Path(args.out), args.corpus, args.src, args.tgt, args.vocab_size)
    print(json.dumps(stats, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
