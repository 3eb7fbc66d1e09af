"""The command-line contract in-process without files: `rnmt params` and one-line errors."""

import json

from rnmt.cli import main
from tests.support import REPO, assert_one_line


def _params_total(capsys, *args):
    assert main(["params", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["total"]


def test_params_takes_vocab_sizes_from_the_data_vocab(capsys):
    # The quickstart names no model vocab sizes: its joint 4,000-piece vocabulary decides.
    explicit = _params_total(capsys, "configs/quickstart.yaml", "--set", "model.src_vocab_size=4000",
                             "--set", "model.tgt_vocab_size=4000")
    assert _params_total(capsys, "configs/quickstart.yaml") == explicit
    separate = ["--set", "data.vocab.joint=false", "--set", "data.vocab.src_size=1000",
                "--set", "data.vocab.tgt_size=2000"]
    assert _params_total(capsys, "configs/quickstart.yaml", *separate) == _params_total(
        capsys, "configs/quickstart.yaml", "--set", "model.src_vocab_size=1000", "--set", "model.tgt_vocab_size=2000")


def test_a_huge_unit_depth_is_refused_not_built(capsys):
    args = ["params", "quickstart", "--set", "model.cell=transition", "--set", "model.cell_options={depth: 100000}"]
    assert main(args) == 2  # before, building 100,000 T-GRUs (even on the meta device) took hours
    assert_one_line(capsys.readouterr().err, "option 'depth' must be an integer in [0, 128]")


def test_an_error_quoting_a_line_break_stays_one_line(capsys):
    """Found by the property test: a key with a line break in it was quoted as is."""
    code = main(["params", str(REPO / "configs" / "quickstart.yaml"), "--set", "model.options.\n0=1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and err.startswith("error: model.options.\\n0")


def test_a_key_with_any_line_break_or_control_character_stays_on_one_line(capsys):
    # str.splitlines breaks at \x1c-\x1e, \x85, \u2028 and more besides \n and \r: each is escaped
    for char in ["\n", "\r", "\x0b", "\x0c", "\x1c", "\x1e", "\x85", "\u2028", "\u2029", "\x00", "\x1b"]:
        assert main(["params", "quickstart", "--set", f"model.options.{char}0=1"]) == 2
        err = capsys.readouterr().err
        assert_one_line(err, "model.options." + char.encode("unicode_escape").decode("ascii") + "0")
