"""Config files that name a base (``base: dtmt4.yaml``), and the bounds on a config file:
the merged config, nested bases, ``--set`` over both, one-line errors naming the file for
a missing base or a cycle, and a huge weight or file refused before any work."""

from __future__ import annotations

import time

import pytest

from rnmt.cli import main
from rnmt.config import config_from_dict, load_config, read_config_tree
from rnmt.errors import UserError
from rnmt.io.bounded_yaml import MAX_CHARS
from rnmt.resources import configs_dir


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_config_overrides_its_base_key_by_key(tmp_path):
    write(tmp_path / "base.yaml", "model: {arch: dtmt, cell: lgru, hidden_size: 64, emb_size: 32,\n"
          "        options: {enc_depth: 2, positional_encoding: true}}\ntrain: {lr: 0.5, seed: 3}\n")
    child = write(tmp_path / "sub" / "child.yaml",
                  "base: ../base.yaml\nmodel: {options: {positional_encoding: false}}\ntrain: {lr: 0.1}\n")
    cfg = load_config(child)
    assert cfg.model.options == {"enc_depth": 2, "positional_encoding": False}
    assert (cfg.model.hidden_size, cfg.train.lr, cfg.train.seed) == (64, 0.1, 3)
    assert load_config(child, ["train.lr=0.7", "model.options.enc_depth=1"]).train.lr == 0.7  # --set applies last
    assert load_config(child, ["model.options.enc_depth=1"]).model.options["enc_depth"] == 1


def test_bases_nest_and_lists_replace(tmp_path):
    write(tmp_path / "a.yaml", "data: {train: [{prefix: x, weight: 2}, y]}\ntrain: {seed: 1, keep_steps: [5, 6]}\n")
    write(tmp_path / "b.yaml", "base: a.yaml\ntrain: {seed: 2}\n")
    c = write(tmp_path / "c.yaml", "base: b.yaml\ntrain: {keep_steps: [7]}\n")
    cfg = load_config(c)
    assert cfg.train.seed == 2 and cfg.train.keep_steps == [7] and [t.prefix for t in cfg.data.train] == ["x", "y"]
    assert "base" not in read_config_tree(c)[1]


def test_a_deprecated_key_in_a_child_overrides_its_base(tmp_path):
    write(tmp_path / "a.yaml", "model: {arch: dtmt, options: {enc_depth: 2}}\n")
    child = write(tmp_path / "b.yaml", "base: a.yaml\nmodel: {enc_depth: 3}\n")
    with pytest.warns(FutureWarning):
        assert load_config(child).model.options["enc_depth"] == 3


@pytest.mark.parametrize("files, message", [
    ({"a.yaml": "base: missing.yaml\n"}, r"a.yaml: base config not found: missing.yaml"),
    ({"a.yaml": "base: b.yaml\n", "b.yaml": "base: a.yaml\n"},
     r"b.yaml: its bases form a cycle \(.*a.yaml -> .*b.yaml -> .*a.yaml\)"),
    ({"a.yaml": "base: a.yaml\n"}, r"a.yaml: its bases form a cycle"),
    ({"a.yaml": "base: [1, 2]\n"}, r"a.yaml: 'base' must name a config file"),
    ({"a.yaml": "base: b.yaml\n", "b.yaml": "train: [\n"}, r"b.yaml: line \d+ invalid YAML"),
])
def test_bad_bases_are_one_line_errors_naming_the_file(tmp_path, files, message):
    for name, text in files.items():
        write(tmp_path / name, text)
    with pytest.raises(UserError, match=message) as info:
        load_config(tmp_path / "a.yaml")
    assert "\n" not in str(info.value)


def test_the_command_line_reports_a_cycle_in_one_line(tmp_path, capsys):
    write(tmp_path / "a.yaml", "base: b.yaml\n")
    write(tmp_path / "b.yaml", "base: a.yaml\n")
    assert main(["params", str(tmp_path / "a.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cycle" in err and "a.yaml" in err


def test_the_builtin_ablations_name_their_base():
    """The converted ablations are the lines that differ from their base (and still resolve)."""
    children = [p for p in configs_dir().glob("papers/*/*.yaml") if "base:" in p.read_text(encoding="utf-8")]
    assert len(children) >= 10
    for path in children:
        assert len(path.read_text(encoding="utf-8").splitlines()) < 30, path
        load_config(path)


def test_the_reproduction_resolves_a_config_with_a_base(tmp_path):
    """A reproduction reads its paper configs through their bases (rnmt.reproduce.system)."""
    from rnmt.reproduce.spec import load_paper

    spec = load_paper("dtmt")
    for system in spec.systems:
        _, tree = read_config_tree(configs_dir() / system.config.removeprefix("configs/"))
        assert "base" not in tree
        config_from_dict(tree)


def test_the_command_line_refuses_a_huge_weight_before_any_work(tmp_path, capsys):
    config = write(tmp_path / "c.yaml", "data: {train: [{prefix: corpus, weight: 1e308}]}\n")
    started = time.perf_counter()
    assert main(["params", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "weight" in err and "Traceback" not in err
    assert time.perf_counter() - started < 5


def test_a_config_file_over_the_size_limit_is_one_line_naming_it(tmp_path):
    config = write(tmp_path / "big.yaml", "model: {arch: '" + "a" * (MAX_CHARS + 10) + "'}\n")
    with pytest.raises(UserError, match=r"big.yaml: larger than the 1,048,576 bytes"):
        load_config(config)
