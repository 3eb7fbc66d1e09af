"""``rnmt translate --model EXPORT_DIR`` and ``rnmt serve --model EXPORT_DIR`` without torch.

The runtime wheel's ``rnmt`` command is this module; in the full rnmt install, ``rnmt.cli``
hands a command whose ``--model`` is an export directory here before anything imports
torch (`dispatches`). The flags are ``rnmt translate``'s where the runtime does what they
ask; the others (an ensemble, constraints, minimum Bayes risk, per-subword scores, a GPU) are
refused with one line saying so (docs/deploy.md, "Runtime").
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import List, Optional

from rnmt_runtime.errors import ExportError, one_line
from rnmt_runtime.manifest import is_export_dir

DEFAULT_CHUNK_LINES = 5000
# flags of `rnmt translate` the runtime does not take, and why
UNSUPPORTED = {
    "--constraints": "terminology constraints need rnmt's constrained beam search",
    "--scores": "per-subword scores need forced decoding",
    "--mbr": "minimum Bayes risk is not part of the runtime",
    "--cuda-graphs": "the runtime decodes on the CPU",
    "--set": "the execution plan is PyTorch's",
}


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose mistakes (``--beam abc``, a missing ``--model``) are one line
    like every other error, instead of the usage block before it; exit status 2 as argparse's.
    rnmt's own command line uses it too."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {one_line(message)} (see {self.prog} --help)\n")


def dispatches(argv: List[str]) -> bool:
    """Whether ``argv`` (``rnmt``'s arguments) is ``translate`` or ``serve`` with an export
    directory as ``--model``: decided from the arguments alone, importing nothing heavy."""
    if not argv or argv[0] not in ("translate", "serve"):
        return False
    models = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--model"]
    models += [a.split("=", 1)[1] for a in argv if a.startswith("--model=")]
    return any(is_export_dir(m) for m in models)


def _positive(kind: type, least: float = 1, most: Optional[float] = None, above: bool = False):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if isinstance(value, float) and math.isnan(value):
            raise argparse.ArgumentTypeError("must be a number, got nan")
        low_ok = value > least if above else value >= least
        if not low_ok or (most is not None and value > most):
            where = f"above {least}" if above else f"at least {least}"
            raise argparse.ArgumentTypeError(f"must be {where}{f' and at most {most}' if most is not None else ''}, "
                                             f"got {text}")
        return value
    return parse


def add_translate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action="append", help="an export directory (rnmt export)")
    p.add_argument("--input", help="source text, one segment per line (default: stdin)")
    p.add_argument("--output", help="where to write translations (default: stdout)")
    p.add_argument("--beam", type=_positive(int), help="beam size (1 = greedy; default: the export's)")
    p.add_argument("--greedy", action="store_true", help="greedy search")
    p.add_argument("--alpha", type=_positive(float, 0), help="GNMT length penalty exponent")
    p.add_argument("--normalize", choices=("gnmt", "length", "none"), help="length normalisation of scores")
    p.add_argument("--nbest", type=_positive(int), default=1, help="print the N best as 'i ||| text ||| score'")
    p.add_argument("--max-len-ratio", type=_positive(float, 0), help="output limit as a multiple of the input length")
    p.add_argument("--batch-tokens", type=_positive(int),
                   help="source tokens per decoding batch (default: the export's, at most 1,000)")
    p.add_argument("--max-output-tokens", type=_positive(int, 1, 65536), help="longest output in subwords")
    p.add_argument("--max-input-tokens", type=_positive(int, 2, 2 ** 31 - 1),
                   help="translate a longer line in pieces joined into one output line")
    p.add_argument("--min-output-tokens", type=_positive(int, 0), help="no output ends before N subwords")
    p.add_argument("--no-repeat-ngram", type=_positive(int, 0, 32), metavar="N",
                   help="no output contains the same N subwords twice (default: the export's; 0: off)")
    p.add_argument("--coverage", type=_positive(float, 0, 10), metavar="BETA",
                   help="GNMT coverage penalty on beam search's finished hypotheses (default: the export's; 0: off)")
    p.add_argument("--sample", action="store_true", help="draw each word instead of searching")
    p.add_argument("--topk", type=_positive(int), help="with --sample: among the K most probable words")
    p.add_argument("--topp", type=_positive(float, 0, 1, above=True), help="with --sample: nucleus mass P")
    p.add_argument("--temperature", type=_positive(float, 0, above=True), help="with --sample: temperature")
    p.add_argument("--epsilon", type=_fraction, help="with --sample: no word of probability below EPS")
    p.add_argument("--seed", type=_positive(int, 0, 2 ** 32 - 1), help="with --sample: seed of the draws")
    p.add_argument("--prefix", metavar="FILE", help="target prefixes, one per input line (empty: none)")
    p.add_argument("--threads", type=_positive(int),
                   help="CPU threads: this many batches searched at once, one thread each (default: every core)")
    p.add_argument("--speed", action="store_true", help="report sentences/s and words/s on stderr")
    p.add_argument("--chunk-lines", type=_positive(int), default=DEFAULT_CHUNK_LINES,
                   help=f"lines of a file translated per chunk (default {DEFAULT_CHUNK_LINES})")
    p.add_argument("--device", default="auto", help="auto | cpu (the runtime decodes on the CPU)")
    p.add_argument("--int8", action="store_true", help="an int8 export decodes in int8 (rnmt export --int8)")
    from rnmt_runtime import shortlist  # numpy: only once an export is translated

    shortlist.add_arguments(p, "not for --sample; the export needs rnmt export --shortlists", _positive(int, 0))
    for flag in UNSUPPORTED:
        p.add_argument(flag, dest="unsupported_" + flag[2:].replace("-", "_"), nargs="?", const=True,
                       default=None, help=argparse.SUPPRESS)


def _fraction(text: str) -> float:
    """A number in [0, 1) (``--epsilon``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not 0.0 <= value < 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="rnmt", description="Translate with an exported rnmt model (no PyTorch).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    add_translate_arguments(sub.add_parser("translate", help="translate text with an export directory"))
    from rnmt_runtime import serve_command

    serve_command.add_arguments(sub.add_parser("serve", help="serve an export directory over HTTP"))
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == "serve":
            from rnmt_runtime import serve_command

            return serve_command.run(args)
        try:
            from rnmt_runtime.translate_command import run
        except ImportError as exc:  # a full rnmt install without its export extra
            raise ExportError(f"translating an export directory needs onnxruntime, sentencepiece and numpy "
                              f"(pip install rnmt-runtime, or 'rnmt[export]'): {exc}") from None
        return run(args)
    except ExportError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
