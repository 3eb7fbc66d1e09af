"""The ``rnmt`` command line: one sub-command per module in ``rnmt.commands``.

Each command module defines ``add_arguments(parser)`` and ``run(args) -> int``; this file
only wires them up and turns a `UserError` (or a write the system refused, or an allocation
that failed) into one line on stderr with exit code 2, and rnmt's own warnings (a deprecated
config key) into one line ``warning: ...``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from typing import List, Optional

from rnmt import memory
from rnmt.errors import WRITE_ERRNOS, CacheRebuiltWarning, DeprecatedConfigKey, UserError, out_of_memory, write_failure
from rnmt_runtime.cli import Parser  # one-line argument errors, shared with the runtime
from rnmt_runtime.errors import one_line  # control characters escaped: an error stays one line

# command name -> (module under rnmt.commands, one-line help)
COMMANDS = {
    "train": ("train", "train a model from a YAML config"),
    "translate": ("translate", "translate text with a trained model"),
    "evaluate": ("evaluate", "score hypotheses against references (BLEU, chrF, significance)"),
    "evaluate-alignment": ("evaluate_alignment", "word-alignment precision, recall and AER"),
    "params": ("params", "count a config's parameters without data"),
    "bench": ("bench", "measure training/decoding throughput and unit step times"),
    "score": ("score", "score given translations by forced decoding: one log-probability per line"),
    "align": ("align", "word alignments from a model's attention or gates (forced decoding)"),
    "analyze": ("analyze", "attention and gate heatmaps, ATR gate statistics, index.html"),
    "serve": ("serve", "serve a model over HTTP (JSON API and a web page)"),
    "reproduce": ("reproduce", "train and compare a paper's systems at a reduced size (results/<paper>/)"),
    "average": ("average", "average the weights of several checkpoints of one model"),
    "lr-schedule": ("lr_schedule", "plot a config's learning-rate schedule"),
    "plot": ("plot", "training loss and dev BLEU of runs against updates and training minutes"),
    "distill": ("distill", "distil a teacher (or ensemble) into small students, with a report"),
    "export": ("export", "write a model as ONNX graphs with its vocabularies, to translate without PyTorch"),
    "shortlist": ("shortlist", "build a lexical shortlist (IBM Model 1) that speeds up translate --shortlist"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="rnmt", description="Recurrent neural machine translation.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(f"rnmt.commands.{module_name}")
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def _one_line_warnings(show):
    """``warnings.showwarning`` that prints rnmt's `DeprecatedConfigKey` and
    `CacheRebuiltWarning` as one line and leaves every other warning to ``show``."""

    shown = set()  # a config read twice in one command (its base, a resume check) warns once

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, (DeprecatedConfigKey, CacheRebuiltWarning)):
            text = one_line(str(message))
            if text not in shown:
                shown.add(text)
                print(f"warning: {text}", file=sys.stderr, flush=True)
        else:
            show(message, category, filename, lineno, file, line)

    return showwarning


def main(argv: Optional[List[str]] = None) -> int:
    from rnmt_runtime.cli import dispatches

    given = sys.argv[1:] if argv is None else list(argv)
    if dispatches(given):  # translate/serve an export directory: the runtime, before anything imports torch
        from rnmt_runtime.cli import main as runtime_main

        return runtime_main(given)
    memory.configure_process()  # before any command makes its first oneDNN product
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            return int(args._run(args) or 0)
    except UserError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except (MemoryError, RuntimeError) as exc:
        message = out_of_memory(exc, getattr(args, "command", None))
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
    except OSError as exc:
        # A refused write that no command phrased itself (the commands name their files):
        # still one line, naming the file when the system did.
        if exc.errno not in WRITE_ERRNOS:
            raise
        what, advice = write_failure(exc)
        print(one_line(f"error: {f'{exc.filename}: ' if exc.filename else ''}{what}: {advice}"), file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
