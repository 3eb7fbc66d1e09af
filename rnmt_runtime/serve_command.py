"""``rnmt serve --model EXPORT_DIR``: placeholder until the server lands."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
