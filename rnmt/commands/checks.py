"""Range checks of command-line options, made before any file or model is read, so that a
bad value is one line naming the option (exit code 2) instead of a traceback from deep
inside (``torch.set_num_threads(-1)`` raised a RuntimeError)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Iterable, Optional, Sequence, Tuple, Union

import torch

from rnmt.device import check_threads
from rnmt.errors import UserError


def at_least(args: argparse.Namespace, low: int, *names: str) -> None:
    """Refuse the first of the options ``names`` (attribute names) given below ``low``;
    an option left out (None) passes."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < low:
            raise UserError(f"--{name.replace('_', '-')} must be at least {low}, got {value}")


def use_threads(threads: Optional[int]) -> None:
    """``--threads``: torch's CPU threads for this process; None keeps torch's default."""
    if threads is None:
        return
    check_threads(threads)
    torch.set_num_threads(threads)


class Once(argparse.Action):
    """An option given at most once. argparse keeps the last of repeated values silently (a
    second ``--model`` replaced the first); this keeps which option was repeated, and
    `given_once` refuses it in one line (argparse's own error would print the usage too)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            namespace.given_twice = option_string
        setattr(namespace, self.dest, values)


def given_once(args: argparse.Namespace) -> None:
    """Refuse an option of action `Once` that was given more than once."""
    repeated = getattr(args, "given_twice", None)
    if repeated:
        raise UserError(f"{repeated} given twice: this command reads one")


Given = Union[None, str, Path, Sequence[Union[str, Path]]]


def output_apart(option: str, output: Optional[Union[str, Path]], inputs: Iterable[Tuple[str, Given]]) -> None:
    """Refuse an output file that is also one of the files the command reads (``inputs``:
    (option, path or paths) pairs; a model directory stands for the checkpoint it loads).
    Opened for writing first, it is emptied before it is read (``rnmt translate --input a
    --output a`` left ``a`` empty); written last, it replaces the input. Only regular files
    compare, so ``--input /dev/stdin --output /dev/stdout`` on one terminal stays allowed.
    An existing checkpoint (``*.safetensors``, ``train_state.pt``) is refused whatever reads
    it: no command's text or image belongs there."""
    if output is None or not os.path.isfile(output):
        return
    for name, given in inputs:
        for path in [given] if isinstance(given, (str, Path)) else (given or []):
            if os.path.isdir(path):
                from rnmt.io.checkpoint_files import resolve_model_path

                try:
                    path = resolve_model_path(Path(path))
                except UserError:
                    continue
            if os.path.isfile(path) and os.path.samefile(output, path):
                raise UserError(f"{option} {output} is the file {name} reads ({path}): writing it would destroy "
                                f"that input; write to another file")
    if Path(output).suffix == ".safetensors" or Path(output).name == "train_state.pt":
        raise UserError(f"{option} {output} is a checkpoint (or a run's training state): writing "
                        f"{option}'s output there would destroy it; write to another file")
