"""Checks before any work, and the output directory's record of what it distils.

Everything a distillation could be refused for is checked before anything is written:
the teachers (readable checkpoints of one language pair and one vocabulary), each student
config (it must name the teacher's language pair and vocabulary, if any, and build a model),
and the output directory (empty, new, or holding this same distillation). ``distill.json``
records the teachers' checkpoint digests, the student configs as resolved and the settings
of `rnmt.distill.options.IDENTITY`; a later start that differs is refused, so a resumed
distillation never mixes two teachers' outputs or two students' runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Sequence

from rnmt.distill.options import DistillOptions
from rnmt.errors import UserError
from rnmt_runtime.manifest import file_sha256

MANIFEST = "distill.json"
FORMAT = 1


@dataclass
class Teacher:
    paths: List[Path]  # the checkpoint files of the ensemble's members
    src: str
    tgt: str
    src_vocab: Any  # rnmt.data.vocab.Vocab
    tgt_vocab: Any
    digests: List[str]


@dataclass
class Student:
    name: str  # the config file's stem (unique among the students)
    path: Path
    tree: Dict[str, Any]  # the config's sections as read (bases merged), with the --set overrides


def check_teachers(paths: Sequence[str]) -> Teacher:
    """The teacher ensemble's members: each a run directory or checkpoint that loads, all of
    one language pair and one vocabulary."""
    from rnmt.models.loading import read_checked

    if not paths:
        raise UserError("distill needs at least one --teacher run")
    members = []
    for given in paths:
        if not Path(given).exists():
            raise UserError(f"--teacher {given}: no such run directory or checkpoint")
        mf, src_vocab, tgt_vocab = read_checked(given)
        members.append((given, mf, src_vocab, tgt_vocab))
    first, mf0, sv0, tv0 = members[0]
    for given, mf, sv, tv in members[1:]:
        if (mf.config.data.src, mf.config.data.tgt) != (mf0.config.data.src, mf0.config.data.tgt):
            raise UserError(f"teachers {first} ({mf0.config.data.src}->{mf0.config.data.tgt}) and {given} "
                            f"({mf.config.data.src}->{mf.config.data.tgt}) translate different language pairs")
        if sv.to_bytes() != sv0.to_bytes() or tv.to_bytes() != tv0.to_bytes():
            raise UserError(f"teachers {first} and {given} have different vocabularies: an ensemble needs one")
    return Teacher(paths=[Path(mf.path) for _, mf, _, _ in members], src=mf0.config.data.src,
                   tgt=mf0.config.data.tgt, src_vocab=sv0, tgt_vocab=tv0,
                   digests=[file_sha256(Path(mf.path)) for _, mf, _, _ in members])


def check_students(paths: Sequence[str], teacher: Teacher, teacher_name: str,
                   overrides: Sequence[str]) -> List[Student]:
    """Each student config, read and checked against the teacher: the same language pair, the
    teacher's vocabulary where the config names one, and a model that builds."""
    from rnmt.config import apply_overrides, config_from_dict, read_config_tree

    if not paths:
        raise UserError("distill needs at least one --student config")
    students: List[Student] = []
    for given in paths:
        path, tree = read_config_tree(given)
        try:
            # the overrides become part of the config (--set data.train=... names the corpus to distil)
            tree = apply_overrides(tree, overrides)
            cfg = config_from_dict(tree, source=str(path))
        except UserError as exc:
            raise UserError(f"student config {path} cannot train: {exc}") from None
        data = cfg.data
        if (data.src, data.tgt) != (teacher.src, teacher.tgt):
            raise UserError(f"teacher {teacher_name} translates {teacher.src}->{teacher.tgt} but student config "
                            f"{path} has data {data.src}->{data.tgt}")
        _check_vocab(path, data.vocab, teacher, teacher_name)
        missing = [key for key in ("train", "dev", "test") if not getattr(data, key)]
        if missing:
            raise UserError(f"student config {path} cannot train: it needs data.{missing[0]} (the training pairs to "
                            f"distil, the dev set to stop on, the test set of the report)")
        _check_buildable(path, cfg, teacher)
        name = path.stem
        if any(s.name == name for s in students):
            raise UserError(f"two student configs named {name}: give each student config its own file name")
        students.append(Student(name=name, path=path, tree=tree))
    return students


def _check_vocab(path: Path, vocab: Any, teacher: Teacher, teacher_name: str) -> None:
    """A vocabulary file the student config names must be the teacher's: the student trains
    on the teacher's subwords (a config naming none gets the teacher's)."""
    from rnmt.data import load_vocab

    named = [(key, getattr(vocab, key), side) for key, side in
             (("model", teacher.src_vocab), ("model", teacher.tgt_vocab), ("src_model", teacher.src_vocab),
              ("tgt_model", teacher.tgt_vocab)) if getattr(vocab, key)]
    for key, file, want in named:
        if not Path(file).is_file():
            raise UserError(f"student config {path}: data.vocab.{key} not found: {file}")
        if load_vocab(file).to_bytes() != want.to_bytes():
            raise UserError(f"teacher {teacher_name} and student config {path} have different vocabularies "
                            f"(data.vocab.{key}: {file}): the student must use the teacher's")


def _check_buildable(path: Path, cfg: Any, teacher: Teacher) -> None:
    from rnmt.models import build_skeleton

    try:
        build_skeleton(cfg.model, teacher.src_vocab.size, teacher.tgt_vocab.size)
    except (UserError, ValueError, TypeError, RuntimeError) as exc:
        raise UserError(f"student config {path} cannot train: its model does not build ({exc})") from None


def manifest(teacher: Teacher, students: Sequence[Student], options: DistillOptions) -> Dict[str, Any]:
    # the teacher is its weights (a checkpoint copied elsewhere is the same teacher)
    return {"format": FORMAT, "teacher": {"sha256": teacher.digests, "pair": f"{teacher.src}-{teacher.tgt}"},
            "teacher_checkpoints": [str(p) for p in teacher.paths],
            "students": {s.name: {"config": str(s.path), "sections": s.tree} for s in students},
            "options": options.identity()}


def claim_out_dir(out: Path, record: Dict[str, Any]) -> bool:
    """Check that ``out`` is new, empty or this same distillation; returns whether it resumes
    one. Another distillation (another teacher, student or setting) or any other content is
    a `UserError`, before anything is written."""
    path = out / MANIFEST
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a directory")
    if not path.is_file():
        if out.is_dir() and any(out.iterdir()):
            raise UserError(f"--out {out} is not empty and holds no distillation ({MANIFEST}): choose another --out")
        return False
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read it ({exc}): choose another --out") from None
    if held.get("format") != FORMAT:
        raise UserError(f"{path}: a distillation record of another format: choose another --out")
    for key, label in (("teacher", "teacher differs"), ("students", "student configs differ"),
                       ("options", "settings differ")):
        if _comparable(held.get(key)) != _comparable(record[key]):
            raise UserError(f"--out {out} holds another distillation (its {label}: "
                            f"{_first_difference(held.get(key), record[key])}): choose another --out")
    return True


def _comparable(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _first_difference(held: Any, given: Any, where: str = "") -> str:
    held, given = _comparable(held), _comparable(given)
    if isinstance(held, dict) and isinstance(given, dict):
        for key in sorted(set(held) | set(given)):
            if held.get(key) != given.get(key):
                return _first_difference(held.get(key), given.get(key), f"{where}.{key}" if where else key)
    return f"{where or 'value'}: {json.dumps(held)[:80]} there, {json.dumps(given)[:80]} now"
