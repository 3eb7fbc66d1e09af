"""Debian's chromium driven by Playwright, for the tests that open a page in a real browser.

`browser_or_skip` gives Playwright's ``sync_playwright`` or skips the test with the reason
(the Python package or the chromium binary missing; ``.ci/run`` installs chromium when it
runs as root). ``RNMT_CHROMIUM`` names another binary.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("RNMT_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def browser_or_skip():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test needs the Python package 'playwright' (pip install playwright)")
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        found = shutil.which("chromium")
        hint = f" (found {found}; set RNMT_CHROMIUM)" if found else ""
        pytest.skip(f"browser test needs Debian's chromium at {CHROMIUM}{hint}: apt-get install chromium")
    return sync_playwright
