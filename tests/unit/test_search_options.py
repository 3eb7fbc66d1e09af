"""The search options' one definition (rnmt/search/options.py) and its four views: the
command's flags, the Python API's keywords, the server's request schema and ``GET /model``'s
description, plus the config's ``search:`` section. Same names, defaults and bounds."""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing

import pytest

from rnmt.config import SearchConfig, config_from_dict
from rnmt.errors import UserError
from rnmt.search import options as so
from rnmt.search.limits import MAX_SEARCH_ROWS
from rnmt.search.options import API, CLI, SERVER, SearchOptions, TranslateKeywords


def translate_parser() -> argparse.ArgumentParser:
    from rnmt.commands import translate

    parser = argparse.ArgumentParser()
    translate.add_arguments(parser)
    return parser


def pydantic_bounds(field) -> dict:
    """ge/gt/le/lt of a pydantic field's metadata."""
    out = {}
    for item in field.metadata:
        for name in ("ge", "gt", "le", "lt"):
            if getattr(item, name, None) is not None:
                out[name] = getattr(item, name)
    return out


def range_as_pydantic(limits) -> dict:
    if limits is None:
        return {}
    out = {}
    if limits.low is not None:
        out["gt" if limits.low_open else "ge"] = limits.low
    if limits.high is not None:
        out["lt" if limits.high_open else "le"] = limits.high
    return out


def test_the_command_has_one_flag_per_option_with_its_default():
    parser = translate_parser()
    actions = {a.dest: a for a in parser._actions}
    defaults = vars(parser.parse_args(["--model", "m"]))
    for name in so.names(CLI):
        assert name in actions, name
        assert so.flag(name) in actions[name].option_strings
        assert defaults[name] == so.default(name), name
        if so.kind(name) in (int, float):
            assert actions[name].type is so.kind(name)
    assert actions["token_scores"].option_strings == ["--scores"]  # the old spelling kept


def test_the_command_refuses_each_value_out_of_its_bound_by_its_flag():
    parser = translate_parser()
    for name in so.names(CLI):
        limits = so.bound(name)
        if limits is None or limits.high is None or so.kind(name) is not int:
            continue
        args = parser.parse_args(["--model", "m", so.flag(name), str(int(limits.high) + 1)])
        with pytest.raises(UserError, match=f"^{so.flag(name)} must be in "):
            so.from_arguments(args)


def test_the_api_keywords_are_the_options_with_the_same_types():
    hints = typing.get_type_hints(TranslateKeywords)
    assert list(hints) == so.names(API)
    option_hints = typing.get_type_hints(SearchOptions)
    for name in so.names(API):
        if not so.spec(name).per_line:
            assert hints[name] == option_hints[name], name


def test_the_server_schema_has_the_options_bounds_narrowed_by_its_settings():
    from rnmt.serve.schemas import make_translate_request
    from rnmt.serve.settings import ServeSettings

    settings = ServeSettings(max_beam=7, max_output_tokens=99)
    fields = make_translate_request(settings).model_fields
    served = [n for n in so.names(SERVER) if not so.spec(n).per_line]
    assert set(served) <= set(fields) and "constraints" in fields
    for name in served:
        assert fields[name].default == so.default(name), name
        assert pydantic_bounds(fields[name]) == range_as_pydantic(so.server_bound(name, settings)), name
    assert pydantic_bounds(fields["beam"])["le"] == 7 and pydantic_bounds(fields["nbest"])["le"] == 7
    assert pydantic_bounds(fields["min_output_tokens"])["le"] == 99
    assert not set(so.names(SERVER)) - set(fields)  # nothing the server takes is left out of the schema


def test_the_model_description_matches_the_schema():
    from rnmt.serve.settings import ServeSettings

    settings = ServeSettings()
    config = config_from_dict({"search": {"beam": 3, "alpha": 0.2}}).search
    described = {d["name"]: d for d in so.describe(settings, config)}
    assert list(described) == [n for n in so.names(SERVER) if not so.spec(n).per_line]
    assert described["beam"]["default"] == 3 and described["alpha"]["default"] == 0.2  # the model's own
    assert described["beam"]["maximum"] == settings.max_beam and described["beam"]["minimum"] == 1
    assert described["nbest"]["default"] == 1
    for name, entry in described.items():
        limits = so.server_bound(name, settings)
        if limits is not None:
            assert (entry["minimum"], entry["maximum"]) == (limits.low, limits.high)


def test_options_in_the_config_take_its_bounds():
    hints = typing.get_type_hints(SearchConfig, include_extras=True)
    for name in so.names(API):
        if so.kind(name) is str and so.in_config(name):  # a choice: the config's Literal names the same values
            assert so.spec(name).choices == typing.get_args(hints[name]), name
        elif so.in_config(name) and so.spec(name).bound is None:
            assert so.bound(name) in typing.get_args(hints[name])[1:], name
    # a sentence's hypotheses: the rows one search batch holds (rnmt.search.limits)
    assert so.bound("beam").high == so.bound("nbest").high == MAX_SEARCH_ROWS


@pytest.mark.parametrize("name, value, message", [
    ("beam", 2 ** 40, "option 'beam' must be in [1, 8192], got 1099511627776"),
    ("nbest", 1_000_000, "option 'nbest' must be in [1, 8192]"),
    ("nbest", 0, "option 'nbest' must be in [1, 8192]"),
    ("topk", 0, "option 'topk' must be in [1, 1048576]"),
    ("topp", 0.0, "option 'topp' must be in (0, 1]"),
    ("seed", -1, "option 'seed' must be in [0, 4294967295], got -1"),
    ("seed", 2 ** 70, "option 'seed' must be in [0, 4294967295]"),
    ("temperature", math.nan, "option 'temperature' must be a number, got nan"),
    ("temperature", -1.0, "option 'temperature' must be greater than 0"),
    ("epsilon", 1.0, "option 'epsilon' must be in [0, 1), got 1.0"),
    ("epsilon", -0.1, "option 'epsilon' must be in [0, 1)"),
    ("mbr", "ter", "option 'mbr' must be one of chrf, bleu, got 'ter'"),
    ("alpha", math.inf, "option 'alpha' must be a finite number, got inf"),
    ("normalize", "gnmtt", "option 'normalize' must be one of gnmt, length, none"),
    ("greedy", "false", "option 'greedy' must be True or False"),
    ("max_output_tokens", 10 ** 9, "option 'max_output_tokens' must be in [1, 65536]"),
])
def test_each_value_is_checked_against_its_bound(name, value, message):
    with pytest.raises(UserError) as info:
        so.from_keywords({name: value})
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_an_infinite_temperature_is_a_value():
    assert so.from_keywords({"temperature": math.inf, "sample": True}).temperature == math.inf


def test_unknown_keywords_name_the_known_ones():
    with pytest.raises(UserError, match="unknown translate option.s. bem; known: beam, greedy"):
        so.from_keywords({"bem": 3})


def test_every_option_has_help_and_a_known_interface():
    for f in dataclasses.fields(SearchOptions):
        spec = so.spec(f.name)
        assert spec.help and spec.where and spec.where <= {CLI, API, SERVER}, f.name
