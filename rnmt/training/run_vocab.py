"""A training run's vocabularies: which sentencepiece model(s) it uses, and their files in
the run's directory (``spm.model``, or ``spm.src.model`` and ``spm.tgt.model``).

In order: the ``--init-from`` checkpoint's (its embeddings index them), the run's own on
``--resume``, the config's ``data.vocab.model`` (or ``src_model`` and ``tgt_model``), or
trained on the training corpus. A vocabulary trained here is described in ``vocab.json``
(the settings and a digest of every training file); a new run in a directory whose
vocabulary a stopped start left behind (a signal, or an error after the vocabulary) reuses
it only when that description is the config's, and trains it again otherwise, so a
changed corpus or vocabulary size never trains on a stale vocabulary. Writing a file of one
kind removes the other kind's, so a directory never holds both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

from rnmt.config import Config
from rnmt.data import Vocab, iter_parallel, load_vocab, train_vocabs
from rnmt.data.corpus import file_digest
from rnmt.errors import UserError
from rnmt.training.checkpoint import atomic_write_text
from rnmt.training.init_from import InitCheckpoint
from rnmt.training.preflight import train_files

JOINT, SRC, TGT = "spm.model", "spm.src.model", "spm.tgt.model"
RECIPE_FILE = "vocab.json"


def run_vocabularies(cfg: Config, out: Path, resume: bool, init: Optional[InitCheckpoint],
                     log: Callable[[str], None]) -> Tuple[Vocab, Vocab]:
    """The run's (source, target) vocabularies, written into ``out`` (module docstring)."""
    vc = cfg.data.vocab
    if init is not None:
        return _keep(out, init.src_vocab, init.tgt_vocab)
    if resume:
        if (out / JOINT).exists():
            v = load_vocab(out / JOINT)
            return v, v
        return load_vocab(out / SRC), load_vocab(out / TGT)
    if vc.model:
        v = load_vocab(vc.model)
        return _keep(out, v, v)
    if vc.src_model or vc.tgt_model:
        if not (vc.src_model and vc.tgt_model):
            raise UserError("data.vocab.src_model and data.vocab.tgt_model must be given together")
        return _keep(out, load_vocab(vc.src_model), load_vocab(vc.tgt_model))
    return _trained(cfg, out, log)


def _keep(out: Path, src: Vocab, tgt: Vocab) -> Tuple[Vocab, Vocab]:
    """Write ``src`` and ``tgt`` as the run's files (one ``spm.model`` when they are one),
    leaving a file already equal untouched (the ranks of a distributed run all pass here)."""
    joint = src.to_bytes() == tgt.to_bytes()
    wanted = {JOINT: src} if joint else {SRC: src, TGT: tgt}
    for name in (JOINT, SRC, TGT):
        path = out / name
        if name not in wanted:
            path.unlink(missing_ok=True)
        elif not (path.is_file() and path.read_bytes() == wanted[name].to_bytes()):
            wanted[name].save(path)
    (out / RECIPE_FILE).unlink(missing_ok=True)  # describes trained vocabularies only
    return src, tgt


def _trained(cfg: Config, out: Path, log: Callable[[str], None]) -> Tuple[Vocab, Vocab]:
    vc = cfg.data.vocab
    files = train_files(cfg)
    for cf in files:
        for _ in iter_parallel(cf.src, cf.tgt):  # line counts and UTF-8 first: clearer errors than sentencepiece's
            pass
    recipe = {"joint": vc.joint, "type": vc.type, "src_size": vc.src_size or vc.size,
              "tgt_size": vc.tgt_size or vc.size, "character_coverage": vc.character_coverage,
              "seed": cfg.train.seed,
              "files": [{"src": file_digest(cf.src), "tgt": file_digest(cf.tgt)} for cf in files]}
    names = [JOINT] if vc.joint else [SRC, TGT]
    if all((out / n).is_file() for n in names) and _read_recipe(out) == recipe:
        log(f"reusing the vocabulary trained earlier in {out} (the same corpus and settings)")
        vocabs = [load_vocab(out / n) for n in names]
        return (vocabs[0], vocabs[0]) if vc.joint else (vocabs[0], vocabs[1])
    if any((out / n).exists() for n in (JOINT, SRC, TGT)):
        log(f"the vocabulary left in {out} was made for another corpus or other settings: training it again")
    for name in (JOINT, SRC, TGT, RECIPE_FILE):
        (out / name).unlink(missing_ok=True)
    src: Any = files[0].src if len(files) == 1 else [cf.src for cf in files]
    tgt: Any = files[0].tgt if len(files) == 1 else [cf.tgt for cf in files]
    log("training the sentencepiece vocabulary ...")
    vocabs = train_vocabs(src, tgt, out, joint=vc.joint, model_type=vc.type, src_size=recipe["src_size"],
                          tgt_size=recipe["tgt_size"], character_coverage=vc.character_coverage,
                          seed=cfg.train.seed)
    atomic_write_text(out / RECIPE_FILE, json.dumps(recipe, indent=1) + "\n")
    return vocabs


def _read_recipe(out: Path) -> Optional[Dict[str, Any]]:
    try:
        recipe = json.loads((out / RECIPE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return recipe if isinstance(recipe, dict) else None

