"""`rnmt serve` as a process: a bad model path fails at start, and the server translates end
to end."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import REPO

SENTENCES = ["Y dijo Dios: Sea la luz.", "En el principio era el Verbo."]


def _rnmt(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "rnmt", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def test_invalid_model_path_fails_at_start_with_one_line(tmp_path, capsys):
    r = _rnmt("serve", "--model", str(tmp_path / "missing"), "--port", "0")
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
    from rnmt.cli import main

    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"not a checkpoint")
    assert main(["serve", "--model", str(garbage), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra", [[], ["--int8", "--device", "cpu"]], ids=["fp32", "int8"])
def test_rnmt_serve_runs_end_to_end(tiny_run, extra):
    import httpx

    from rnmt.bench.server_process import serve_process

    with serve_process(tiny_run, extra) as server:
        r = httpx.post(f"{server.url}/translate", json={"texts": ["", SENTENCES[0]]}, timeout=30)
        assert r.status_code == 200 and r.json()["translations"][0]["text"] == ""
