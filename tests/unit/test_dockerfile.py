"""The Dockerfile checked against the package, since no container engine runs the tests:
what it copies exists and reaches the build context, what it runs exists in rnmt, and the
port, health check, user and model mount agree with each other and with docs/serving.md."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib

from rnmt.cli import build_parser
from tests.support import REPO

DOCKERFILE = REPO / "Dockerfile"


def instructions():
    """(INSTRUCTION, arguments) per instruction, continuation lines joined, comments dropped."""
    joined, out = "", []
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        joined += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            name, _, rest = joined.strip().partition(" ")
            out.append((name.upper(), rest.strip()))
            joined = ""
    return out


def stage(index: int):
    stages, current = [], None
    for name, args in instructions():
        if name == "FROM":
            current = []
            stages.append(current)
        current.append((name, args))
    return stages[index]


def build_context_allows(path: str) -> bool:
    """Whether .dockerignore lets ``path`` into the build context (last matching rule wins)."""
    allowed = True
    for rule in (REPO / ".dockerignore").read_text().splitlines():
        rule = rule.strip()
        if not rule or rule.startswith("#"):
            continue
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            allowed = negate
    return allowed


def test_copied_sources_exist_and_reach_the_build_context():
    copies = [args.split() for name, args in stage(0) if name == "COPY"]
    sources = [src for parts in copies for src in parts[:-1]]
    assert {"pyproject.toml", "setup.py", "MANIFEST.in", "rnmt", "configs"} <= set(sources)
    for src in sources:
        assert (REPO / src).exists(), src
        assert build_context_allows(src), src
    for needed in ("rnmt/kernels/gru_gates.cpp", "configs/quickstart.yaml", "rnmt/serve/static/app.js"):
        assert build_context_allows(needed), needed
    assert not build_context_allows(".venv") and not build_context_allows("runs")


def test_python_and_extras_match_the_package():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    images = [args.split()[0] for name, args in instructions() if name == "FROM"]
    minor = re.search(r">=3\.(\d+)", project["requires-python"]).group(1)
    for image in images:
        assert image.startswith("python:3.") and int(image.split(":3.")[1].split("-")[0]) >= int(minor)
    installs = " ".join(args for name, args in stage(1) if name == "RUN" and "pip install" in args)
    extras = re.search(r"rnmt-\*\.whl\)\[([\w,]+)\]", installs).group(1).split(",")
    assert set(extras) <= set(project["optional-dependencies"]) and "serve" in extras
    assert project["scripts"]["rnmt"] == "rnmt.cli:main"


def test_serve_command_user_port_and_health_check_agree():
    final = dict((name, args) for name, args in stage(1))  # last of each instruction
    entry = json.loads(final["ENTRYPOINT"])  # exec form: signals reach rnmt directly
    assert entry[0] == "rnmt"
    args = build_parser().parse_args(entry[1:])
    assert args.command == "serve" and args.host == "0.0.0.0"
    assert final["EXPOSE"] == str(args.port)
    assert final["USER"] not in ("root", "0")
    health = final["HEALTHCHECK"]
    url = re.search(r"http://127\.0\.0\.1:(\d+)(/\w+)", health)
    assert url and int(url.group(1)) == args.port and url.group(2) == "/health"
    app_source = (REPO / "rnmt_runtime" / "serving" / "http.py").read_text()  # the routes both services share
    assert '@app.get("/health"' in app_source
    # The check runs with the image's python and the standard library only.
    snippet = shlex.split(health.split("CMD", 1)[1])[2]
    compile(snippet, "HEALTHCHECK", "exec")
    # The model is the read-only mount that the docs and the file's own usage line show.
    mount = f":{args.model}:ro"
    assert mount in DOCKERFILE.read_text() and mount in (REPO / "docs" / "serving.md").read_text()


def test_kernel_build_step_runs_as_the_serving_user():
    steps = stage(1)
    user_at = next(i for i, (name, _) in enumerate(steps) if name == "USER")
    kernel_at = next(i for i, (name, args) in enumerate(steps) if name == "RUN" and "kernels.extension()" in args)
    assert kernel_at > user_at  # the cache lands in the serving user's home
    from rnmt import kernels

    assert callable(kernels.extension)
    assert any(name == "RUN" and "g++" in args for name, args in steps[:user_at])
