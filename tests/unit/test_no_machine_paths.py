"""No committed file names the machine it was written on: neither the checkout's absolute
path nor the home directory (a log or a record copied into results/ carries them easily)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import REPO


def tracked_text_files():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    names = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in names.decode().split("\0"):
        path = REPO / name
        if name and path.is_file() and path.stat().st_size < 20_000_000:
            data = path.read_bytes()
            if b"\0" not in data[:8192]:  # text
                yield name, data


def test_no_committed_file_holds_this_checkouts_path_or_the_home_directory():
    needles = {str(REPO).encode()}
    home = str(Path.home())
    if home not in ("/", ""):
        needles.add((home.rstrip("/") + "/").encode())
    found = [f"{name}: {needle.decode()}" for name, data in tracked_text_files()
             for needle in needles if needle in data]
    assert found == [], found[:10]
