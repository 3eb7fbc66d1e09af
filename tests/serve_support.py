"""Shared helpers for the serving tests (this module defines no tests itself)."""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

with warnings.catch_warnings():  # some starlette versions warn about the httpx-based client on import
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient  # noqa: E402

import uvicorn  # noqa: E402

from rnmt.commands.serve import listen  # noqa: E402
from rnmt.models import load_model  # noqa: E402
from rnmt.serve.app import create_app  # noqa: E402
from rnmt.serve.protocol import server_config  # noqa: E402
from rnmt.serve.settings import ServeSettings  # noqa: E402

_LOADED: Dict[str, Any] = {}


def loaded_model(run_dir: Path):
    key = str(run_dir)
    if key not in _LOADED:
        _LOADED[key] = load_model(run_dir, "cpu")
    return _LOADED[key]


def make_app(run_dir: Path, **settings):
    return create_app(loaded_model(run_dir), ServeSettings(threads=1, **settings), "cpu")


@contextlib.contextmanager
def serve_client(run_dir: Path, **settings) -> Iterator[TestClient]:
    with TestClient(make_app(run_dir, **settings)) as client:
        yield client


@contextlib.contextmanager
def live_server(app) -> Iterator[str]:
    """Runs ``app`` with uvicorn, configured as ``rnmt serve`` does, on a free loopback port in a
    thread; yields its base URL."""
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = server_config(app, app.state.settings, log_level="warning", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


# -- a small JSON-schema checker for the OpenAPI schema's response bodies -------------------

def validate(instance: Any, schema: Dict[str, Any], spec: Dict[str, Any], path: str = "$") -> List[str]:
    """Errors of ``instance`` against an OpenAPI 3.1 ``schema`` (the subset FastAPI emits)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return validate(instance, spec["components"]["schemas"][name], spec, path)
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            if not validate(instance, option, spec, path):
                return []
        return [f"{path}: matches none of anyOf"]
    errors: List[str] = []
    kind = schema.get("type")
    checks = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
              "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "null": lambda v: v is None}
    if kind is not None and not checks[kind](instance):
        return [f"{path}: expected {kind}, got {type(instance).__name__}"]
    if kind == "object":
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in instance:
                errors.append(f"{path}: missing required '{name}'")
        for name, value in instance.items():
            if name in props:
                errors += validate(value, props[name], spec, f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected '{name}'")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += validate(value, schema["additionalProperties"], spec, f"{path}.{name}")
    if kind == "array" and "items" in schema:
        for i, item in enumerate(instance):
            errors += validate(item, schema["items"], spec, f"{path}[{i}]")
    if "maxItems" in schema and len(instance) > schema["maxItems"]:
        errors.append(f"{path}: more than {schema['maxItems']} items")
    if "maxLength" in schema and len(instance) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']}")
    if "minimum" in schema and instance < schema["minimum"]:
        errors.append(f"{path}: below {schema['minimum']}")
    if "maximum" in schema and instance > schema["maximum"]:
        errors.append(f"{path}: above {schema['maximum']}")
    return errors


def response_schema(spec: Dict[str, Any], path: str, method: str, status: int) -> Dict[str, Any]:
    return spec["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
