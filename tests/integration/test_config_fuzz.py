"""Random keys, values and types fed to the config loader and the command line.

Whatever a config file or ``--set`` holds, loading it gives a config or a one-line
`UserError`, and ``rnmt train`` / ``rnmt params`` exit with 0 or with 2 and one line
``error: ...`` (after a ``warning: ...`` line per deprecated key): never a traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import tempfile
import typing
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rnmt.cli import main
from rnmt.config import MOVED_MODEL_KEYS, Config, config_from_dict, load_config
from rnmt.errors import UserError


def field_types(cls=Config, prefix=""):
    """(dotted key, annotation without its bounds) of every config key."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            yield from field_types(hints[f.name], f"{prefix}{f.name}.")
        else:
            yield prefix + f.name, hints[f.name]


# deprecated keys are drawn on purpose: their warnings are expected
pytestmark = pytest.mark.filterwarnings("ignore::rnmt.errors.DeprecatedConfigKey")

TYPES = dict(field_types())
KEYS = sorted(TYPES)
# names the loader knows (and near misses): random text alone would rarely reach a valid config
CHOICES = sorted({*(name for tp in TYPES.values() if typing.get_origin(tp) is typing.Literal
                    for name in typing.get_args(tp)),
                  "gru", "atr", "lstm", "transition", "luong", "dtmt", "transformer", "rnnsearch", "seq2seq", "bogus",
                  "cuda:1", "gpu", "maxuot"})
SECTIONS = ["data", "model", "train", "search", "data.vocab", "model.options", "model.cell_options"]

keys = st.one_of(
    st.sampled_from(KEYS),  # real keys: what reaches the value checks
    st.sampled_from([f"model.{k}" for k in MOVED_MODEL_KEYS]),  # deprecated keys: what reaches the upgrade
    st.builds(lambda s, k: f"{s}.{k}", st.sampled_from(SECTIONS), st.text(max_size=12)),  # near misses
    st.text(max_size=20),
)
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=-3, max_value=300),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(min_value=-2, max_value=2),
    st.text(max_size=30), st.sampled_from(CHOICES),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=8), scalars, max_size=3))


def plausible(tp):
    """Values of about the right type, near the edges of what is valid."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) is typing.Union:
        return st.one_of(st.none(), plausible(args[0]))
    if typing.get_origin(tp) is typing.Literal:
        return st.one_of(st.sampled_from(args), st.sampled_from(CHOICES))
    if typing.get_origin(tp) is list:
        return st.lists(st.floats(min_value=-0.5, max_value=1.5), max_size=3)
    if typing.get_origin(tp) is dict:
        return st.dictionaries(st.sampled_from(["depth", "bottom", "window", "ffn_size", "x"]), scalars, max_size=2)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.one_of(st.integers(min_value=-2, max_value=12), st.sampled_from([0, 1, 127, 128, 129, 2 ** 20]))
    if tp is float:
        return st.one_of(st.floats(min_value=-0.5, max_value=1.5), st.sampled_from([0.0, 1.0, 1e-9, 1e9]))
    return st.sampled_from(CHOICES)


typed_entries = st.sampled_from(sorted(TYPES)).flatmap(lambda k: st.tuples(st.just(k), plausible(TYPES[k])))
entry = st.one_of(typed_entries, typed_entries, st.tuples(keys, values))
entries = st.lists(entry, max_size=6)

# More cases for a longer search: RNMT_FUZZ_SCALE=10 pytest tests/integration/test_config_fuzz.py
SCALE = int(os.environ.get("RNMT_FUZZ_SCALE", "1"))
CASES = {"loader": 0, "loader ok": 0, "command line": 0, "params exit 0": 0}


def as_tree(pairs):
    tree: dict = {}
    for key, value in pairs:
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    return tree


def as_override(key, value):
    """``key=value`` as a user types it: YAML text for the value, sometimes raw text."""
    text = value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True).strip()
    if text.endswith("\n..."):
        text = text[: -len("\n...")]
    return f"{key}={text}"


def assert_one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message, message


@settings(max_examples=400 * SCALE, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(entries, st.lists(entry, max_size=3))
def test_the_loader_gives_a_config_or_one_line(tmp_path_factory, file_entries, set_entries):
    CASES["loader"] += 1
    overrides = [as_override(k, v) for k, v in set_entries]
    try:
        config_from_dict(as_tree(file_entries), overrides)
        CASES["loader ok"] += 1
    except UserError as exc:
        assert_one_line(str(exc))
    path = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())) / "c.yaml"
    path.write_text(yaml.safe_dump(as_tree(file_entries)), encoding="utf-8")
    try:
        load_config(path, overrides)
    except UserError as exc:
        assert_one_line(str(exc))


def run_cli(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


@settings(max_examples=150 * SCALE, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(entry, min_size=1, max_size=4))
def test_the_command_line_exits_0_or_2_with_one_line(tmp_path_factory, set_entries):
    CASES["command line"] += 1
    root = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp()))
    cfg = root / "c.yaml"
    # A small model, and training data that does not exist: rnmt train can only check and refuse.
    cfg.write_text(yaml.safe_dump({"data": {"train": str(root / "none"), "vocab": {"size": 64}},
                                   "model": {"emb_size": 8, "hidden_size": 8}}), encoding="utf-8")
    # --set=KEY=VALUE: argparse would read a separate argument that starts with '-' as an option
    overrides = [f"--set={as_override(k, v)}" for k, v in set_entries]
    for argv in (["params", str(cfg), *overrides], ["train", str(cfg), "--out", str(root / "run"), *overrides]):
        code, err = run_cli(argv)
        assert code in (0, 2), (argv, err)
        CASES["params exit 0"] += code == 0 and argv[0] == "params"
        if code == 2:
            error = "\n".join(line for line in err.strip().splitlines() if not line.startswith("warning: "))
            assert_one_line(error)
            assert error.startswith("error: "), err
    assert not (root / "run").exists()  # refused before anything was written


def test_report_the_number_of_cases():
    """Runs last in this file: the cases the two properties above tried (pytest -s shows it)."""
    print(f"\nconfig fuzz cases: {CASES}")
