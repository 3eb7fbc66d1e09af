"""``rnmt export ... --web DIR``: the in-browser page, as options of `rnmt export`.

Where the page's export comes from and where the page goes:

- ``rnmt export RUN --out EXP --web DIR``: export RUN to EXP, then the page into DIR;
- ``rnmt export RUN --web DIR``: export RUN into DIR and the page into DIR/web;
- ``rnmt export EXP --web DIR`` or ``rnmt export --out EXP --web DIR``: the page of the
  existing export EXP, into DIR;
- ``rnmt export --web DIR``: the page of the existing export DIR, into DIR/web.

The page goes to DIR/web whenever DIR is the export itself, so the export's own files stay
as the exporter wrote them.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Optional

from rnmt.errors import UserError

MANIFEST = "manifest.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--web", metavar="DIR",
                   help="also write a static page that translates in the browser, offline, into DIR "
                        "(DIR/web when DIR is the export); without RUN_OR_CHECKPOINT, of an existing export "
                        "(--out, or DIR itself)")
    p.add_argument("--web-modules", metavar="NODE_MODULES",
                   help="where the page's npm packages are (onnxruntime-web, @sctg/sentencepiece-js; "
                        "default: web/node_modules of rnmt's source tree, which `npm ci` in web/ fills)")


@dataclass(frozen=True)
class Plan:
    """What the command does: export ``model`` to ``out`` (unless ``model`` is None), then
    write the page of the export ``out`` into ``web`` (unless ``web`` is None)."""

    model: Optional[str]
    out: str
    web: Optional[str]


def is_export(path: Optional[str]) -> bool:
    return bool(path) and os.path.isdir(str(path)) and os.path.isfile(os.path.join(str(path), MANIFEST))


def plan(model: Optional[str], out: Optional[str], web: Optional[str]) -> Plan:
    """The `Plan` of the command's arguments; `UserError` for a combination that says
    nothing to do."""
    if model is not None and web is not None and is_export(model):
        if out is not None:
            raise UserError(f"{model} is an export already: give --web DIR alone to write its page, without --out")
        return Plan(None, model, web)
    if model is None:
        if web is None:
            raise UserError("give RUN_OR_CHECKPOINT and --out DIR to export a model, or --web DIR to write the "
                            "in-browser page of an existing export")
        return Plan(None, out or web, web)
    if out is None and web is None:
        raise UserError("give --out DIR (where to write the export) or --web DIR (the export and its page)")
    return Plan(model, out or str(web), web)


def write(p: Plan, force: bool, modules: Optional[str] = None) -> None:
    """Write the page of ``p`` (after the export, if any, was written); ``modules``: the
    node_modules folder to take the libraries from (`rnmt.web.assets.find_modules`)."""
    if p.web is None:
        return
    from rnmt.web.page import write_page

    page = write_page(p.out, p.web, force=force, modules=modules)
    print(f"wrote the in-browser page to {page.directory / 'index.html'} ({len(page.sizes)} files, "
          f"{page.total / 1e6:.1f} MB): open it in a browser, no server needed", file=sys.stderr)
