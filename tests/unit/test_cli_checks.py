"""The command-line contract in-process without files: `rnmt params` and one-line errors."""

import json

import pytest

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


@pytest.mark.parametrize("command", [
    ["translate", "--model", "no-model"],
    ["score", "--model", "no-model", "--src", "no-src", "--tgt", "no-tgt"],
    ["align", "--model", "no-model", "--src", "no-src", "--tgt", "no-tgt"],
    ["analyze", "--model", "no-model", "--src", "no-src", "--tgt", "no-tgt", "--out", "no-out"],
    ["bench"],
])
@pytest.mark.parametrize("threads", ["0", "-1"])
def test_threads_below_one_are_refused_in_one_line_before_any_file_is_read(capsys, command, threads):
    # torch.set_num_threads(-1) raised a RuntimeError (a traceback, exit code 1), and 0 meant
    # "torch's default" in four commands but was refused by `rnmt serve`
    assert main([*command, "--threads", threads]) == 2
    assert_one_line(capsys.readouterr().err, f"--threads must be at least 1, got {threads}")


@pytest.mark.parametrize("command", [
    ["translate", "--model", "no-model"],
    ["score", "--model", "no-model", "--src", "no-src", "--tgt", "no-tgt"],
    ["bench"],
    ["serve", "--model", "no-model"],
    ["reproduce", "atr", "--status"],
])
def test_more_threads_than_the_machine_can_make_are_refused_in_one_line(capsys, command):
    # OpenMP ended `rnmt translate --threads 100000` with a segmentation fault (exit 139)
    from rnmt.device import max_threads

    assert main([*command, "--threads", str(max_threads() + 1)]) == 2
    assert_one_line(capsys.readouterr().err, f"--threads must be at most {max_threads()} (8 per CPU")


@pytest.mark.parametrize("threshold", ["-0.1", "1.5", "nan", "inf"])
def test_an_alignment_threshold_outside_0_1_is_refused_before_any_file_is_read(capsys, threshold):
    # the scores it is compared with lie in [0, 1]: NaN or 1.5 linked nothing, -0.1 everything
    assert main(["align", "--model", "no-model", "--src", "no-src", "--tgt", "no-tgt", "--threshold", threshold]) == 2
    assert_one_line(capsys.readouterr().err, "--threshold must be a number in [0, 1]")


@pytest.mark.parametrize("value, message", [("0", "at least 1, got 0"), ("301", "at most 300, got 301")])
def test_analyze_picture_bound_is_checked_before_any_file_is_read(capsys, value, message):
    assert main(["analyze", "--model", "no-model", "--src", "no-src", "--out", "no-out",
                 "--max-picture-tokens", value]) == 2
    assert_one_line(capsys.readouterr().err, f"--max-picture-tokens must be {message}")


def test_the_api_refuses_the_same_thresholds():
    from rnmt.analysis.align import check_threshold
    from rnmt.errors import UserError

    for ok in (None, 0.0, 0.3, 1.0):
        check_threshold(ok)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(UserError, match="threshold must be a number in"):
            check_threshold(bad)


@pytest.mark.parametrize("option, value, low", [("--steps", "0", 1), ("--beam", "0", 1), ("--unit-size", "0", 1),
                                               ("--warmup", "-1", 0), ("--decode-sentences", "-1", 0)])
def test_bench_refuses_counts_out_of_range_before_building_anything(capsys, option, value, low):
    assert main(["bench", "quickstart", option, value]) == 2
    assert_one_line(capsys.readouterr().err, f"{option} must be at least {low}, got {value}")


def test_a_negative_minimum_output_length_is_refused_before_the_model_loads(capsys):
    assert main(["translate", "--model", "no-model", "--min-output-tokens", "-1"]) == 2
    assert_one_line(capsys.readouterr().err, "--min-output-tokens must be at least 0, got -1")


@pytest.mark.parametrize("option, value", [("--max-wait-ms", "inf"), ("--max-wait-ms", "nan"),
                                           ("--timeout", "inf"), ("--timeout", "nan"),
                                           ("--read-timeout", "inf"), ("--shutdown-grace", "nan")])
def test_server_times_must_be_finite(option, value):
    # inf: a lone request waited for a batch that never filled (504); NaN: no timeout ever fired
    from rnmt.errors import UserError
    from rnmt.serve.settings import ServeSettings

    field = {"--max-wait-ms": "max_wait_ms", "--timeout": "request_timeout", "--read-timeout": "read_timeout",
             "--shutdown-grace": "shutdown_grace"}[option]
    with pytest.raises(UserError, match=f"{option} must be a finite number"):
        ServeSettings(**{field: float(value)}).check()


@pytest.mark.parametrize("name", ["", " ", "a b"])
def test_an_allowed_host_that_no_header_can_match_is_refused(name):
    # the server started and answered every request with 400
    from rnmt.errors import UserError
    from rnmt.serve.settings import ServeSettings

    with pytest.raises(UserError, match="--allowed-host must be a host name"):
        ServeSettings(allowed_hosts=["localhost", name]).check()
    ServeSettings(allowed_hosts=["localhost", "example.org"]).check()


def test_greedy_search_with_an_nbest_list_is_refused(capsys):
    assert main(["translate", "--model", "no-model", "--greedy", "--nbest", "3"]) == 2
    assert_one_line(capsys.readouterr().err, "--nbest 3 needs beam search: --greedy gives one hypothesis")


@pytest.mark.parametrize("search", [["--greedy"], ["--beam", "1"], ["--sample"]])
def test_a_coverage_penalty_without_beam_search_is_refused(capsys, search):
    assert main(["translate", "--model", "no-model", *search, "--coverage", "0.2"]) == 2
    assert_one_line(capsys.readouterr().err, "--coverage ranks the finished hypotheses of beam search")


def test_a_minimum_output_length_at_the_maximum_is_refused(capsys):
    assert main(["translate", "--model", "no-model", "--min-output-tokens", "5", "--max-output-tokens", "5"]) == 2
    assert_one_line(capsys.readouterr().err, "--min-output-tokens (5) must be below --max-output-tokens (5)")


def test_bench_with_nothing_to_time_says_so(capsys):
    assert main(["bench"]) == 2
    assert_one_line(capsys.readouterr().err, "rnmt bench needs a CONFIG to time, --units, or both")


@pytest.mark.parametrize("device", ["meta", "mps", "CPU", "cuda:x", "gpu"])
def test_devices_rnmt_does_not_run_on_are_refused_by_name(device):
    # torch knows meta and mps: a model loaded there failed later with a traceback
    from rnmt.device import pick_device
    from rnmt.errors import UserError

    with pytest.raises(UserError, match=f"device must be auto, cpu, cuda or cuda:N, got '{device}'"):
        pick_device(device)


def test_an_absurd_schedule_length_is_refused_before_anything_is_computed(capsys):
    assert main(["lr-schedule", "quickstart", "--steps", str(10 ** 12)]) == 2
    assert_one_line(capsys.readouterr().err, "--steps must be at most 2,000,000")


@pytest.mark.parametrize("command", [["align", "--src", "s", "--tgt", "t"], ["analyze", "--src", "s", "--out", "o"],
                                     ["serve"]])
def test_a_second_model_is_refused_where_one_is_read(capsys, command):
    # argparse kept the last --model silently; translate and score take several (an ensemble)
    assert main([command[0], "--model", "a", "--model", "b", *command[1:]]) == 2
    assert_one_line(capsys.readouterr().err, "--model given twice: this command reads one")


def test_search_options_with_forced_targets_are_refused(capsys):
    assert main(["analyze", "--model", "m", "--src", "s", "--tgt", "t", "--out", "o", "--beam", "7"]) == 2
    assert_one_line(capsys.readouterr().err, "with --tgt the given targets are force-decoded instead")


@pytest.mark.parametrize("seeds, bad", [("-1", "-1"), ("1,4294967296", "4294967296")])
def test_reproduce_refuses_seeds_outside_train_seed_range_before_any_run(capsys, seeds, bad):
    assert main(["reproduce", "atr", "--seeds", seeds, "--status"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: --seeds must be integers from 0 to 4294967295, got {bad}"


def test_reproduce_refuses_a_bootstrap_too_large_to_draw_before_any_run(capsys):
    assert main(["reproduce", "atr", "--bootstrap", "1000000", "--status"]) == 2
    assert capsys.readouterr().err.strip() == "error: --bootstrap must be at most 100,000, got 1000000"


@pytest.mark.parametrize("argv, needle", [
    (["translate", "--beam", "abc"], "argument --beam: invalid int value: 'abc' (see rnmt translate --help)"),
    (["frob"], "invalid choice: 'frob'"),
    ([], "the following arguments are required: COMMAND"),
])
def test_argument_mistakes_are_one_line_with_status_2(argv, needle, capsys):
    from rnmt.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1
