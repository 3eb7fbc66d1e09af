"""Checkpoint averaging: the element-wise mean of the weights of several checkpoints.

The checkpoints must hold the same architecture (identical ``model`` config), the same
vocabularies and the same tensors; typically they are the last few checkpoints of one run.
The mean is accumulated in float64 and written, with the first checkpoint's vocabularies
and config, as an ordinary self-contained checkpoint (atomically, via `save_model`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Dict, List, Sequence

import torch

from rnmt.errors import UserError
from rnmt.io.checkpoint_files import ModelFile, load_state_into, read_model_file
from rnmt.training.checkpoint import save_model


def _first_difference(a: dict, b: dict, prefix: str = "") -> str:
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            found = _first_difference(va, vb, f"{prefix}{key}.")
            if found:
                return found
        elif va != vb:
            return f"{prefix}{key}: {json.dumps(va)} vs {json.dumps(vb)}"
    return ""


def _model_keys(mf: ModelFile) -> dict:
    """The model section, its options with their defaults filled in (a checkpoint written
    before a new version of the format and one after compare equal)."""
    from rnmt.models.registry import resolved_options

    return {**mf.config.to_dict()["model"], "options": resolved_options(mf.config.model)}


def _check_compatible(ref: ModelFile, other: ModelFile) -> None:
    diff = _first_difference(_model_keys(ref), _model_keys(other), "model.")
    if diff:
        raise UserError(f"{other.path}: config differs from {ref.path} ({diff}); only checkpoints of the "
                        "same model can be averaged")
    if other.vocabs != ref.vocabs:
        raise UserError(f"{other.path}: vocabularies differ from those of {ref.path}")
    if other.state.keys() != ref.state.keys():
        extra = sorted(set(other.state) ^ set(ref.state))[0]
        raise UserError(f"{other.path}: tensors differ from those of {ref.path} (e.g. '{extra}')")
    for key, value in other.state.items():
        if value.shape != ref.state[key].shape or value.dtype != ref.state[key].dtype:
            raise UserError(f"{other.path}: tensor '{key}' has shape {tuple(value.shape)} {value.dtype}, "
                            f"{ref.path} has {tuple(ref.state[key].shape)} {ref.state[key].dtype}")


def _check_not_an_input(out: Path, read: Path) -> None:
    """Averaging into one of the checkpoints averaged would replace it (``--out`` naming a
    run's ``best.safetensors`` while the run's directory is an input, say)."""
    if out.exists() and os.path.samefile(out, read):
        raise UserError(f"--out {out} is one of the checkpoints being averaged ({read}); write the average "
                        "to a new file so that no checkpoint is replaced")


# the step checkpoints a training run writes (`rnmt.training.trainer`), its step in group 1
STEP_CHECKPOINT = re.compile(r"ckpt-(\d+)\.safetensors")


def _check_not_a_runs_own(out: Path) -> None:
    """Averaging over a run's own ``best.safetensors`` or ``ckpt-STEP.safetensors`` would
    replace what the run's ``--resume`` and best-checkpoint choice read."""
    if (out.is_file() and (out.parent / "train_state.pt").is_file()
            and (out.name == "best.safetensors" or STEP_CHECKPOINT.fullmatch(out.name))):
        raise UserError(f"--out {out} is a checkpoint of the training run in {out.parent}, which its "
                        f"--resume and best-checkpoint choice read; write the average to another file")


def last_checkpoints(run_dir: str | Path, n: int) -> List[Path]:
    """The ``n`` step checkpoints (``ckpt-STEP.safetensors``) of ``run_dir`` with the highest
    steps, oldest first: what ``rnmt average RUN --last N`` averages."""
    run_dir = Path(run_dir)
    if n < 1:
        raise UserError(f"--last must be at least 1, got {n}")
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: with --last, give run directories (this is not one)")
    steps = sorted((int(m.group(1)), p) for p in run_dir.glob("ckpt-*.safetensors")
                   if (m := STEP_CHECKPOINT.fullmatch(p.name)))
    if len(steps) < n:
        raise UserError(f"{run_dir}: {len(steps)} step checkpoint(s) (ckpt-STEP.safetensors), --last {n} needs "
                        f"{n}; a run keeps train.keep_last of them (and train.keep_steps)")
    return [p for _, p in steps[-n:]]


def average_checkpoints(paths: Sequence[str | Path], out: str | Path) -> Dict[str, object]:
    """Average ``paths`` into the checkpoint ``out``; returns the metadata written."""
    if len(paths) < 1:
        raise UserError("give at least one checkpoint to average")
    out = Path(out)
    _check_not_a_runs_own(out)
    from rnmt.data.vocab import Vocab
    from rnmt.models import build_model

    ref = read_model_file(Path(paths[0]))
    _check_not_an_input(out, ref.path)
    sums = {k: v.to(torch.float64) if v.is_floating_point() else v.clone() for k, v in ref.state.items()}
    metas = [ref.meta]
    for path in paths[1:]:
        mf = read_model_file(Path(path))
        _check_not_an_input(out, mf.path)
        _check_compatible(ref, mf)
        for key, value in mf.state.items():
            if value.is_floating_point():
                sums[key] += value.to(torch.float64)
            elif not torch.equal(value, ref.state[key]):
                raise UserError(f"{mf.path}: integer tensor '{key}' differs from {ref.path}; cannot average it")
        metas.append(mf.meta)
        del mf
    n = len(paths)
    state = {k: (v / n).to(ref.state[k].dtype) if v.is_floating_point() else v for k, v in sums.items()}
    if "src" not in ref.vocabs or "tgt" not in ref.vocabs:
        raise UserError(f"{ref.path}: checkpoint has no vocabulary")
    model = build_model(ref.config.model, Vocab.from_bytes(ref.vocabs["src"]).size,
                        Vocab.from_bytes(ref.vocabs["tgt"]).size)
    load_state_into(model, state, ref.path)
    meta = {"averaged": [str(Path(p)) for p in paths],
            "steps": [m.get("step") for m in metas],
            "step": max((m.get("step") or 0) for m in metas)}
    save_model(out, model, ref.config, ref.vocabs, meta)
    return meta
