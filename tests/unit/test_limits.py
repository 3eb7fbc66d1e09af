"""Bounded translation: the output cap shared by the command line, the API and the server,
and how long source lines are cut into pieces (rnmt/search/limits.py)."""

from __future__ import annotations

import random

import pytest
import torch

from rnmt.search.limits import (
    MAX_OUTPUT_TOKENS,
    MAX_SEARCH_ROWS,
    MAX_SEARCH_SCORES,
    default_input_limit,
    ends_sentence,
    output_limits,
    sentences_per_batch,
    split_source,
)

# -- the rules ---------------------------------------------------------------------------

def test_output_limits_follow_the_source_up_to_the_cap():
    lengths = torch.tensor([1, 10, 100, 1000])
    assert output_limits(lengths, 1.5, 10, None).tolist() == [11, 25, 160, 1510]
    assert output_limits(lengths, 1.5, 10, 256).tolist() == [11, 25, 160, 256]
    assert output_limits(lengths, 0.0, 0, 256).tolist() == [1, 1, 1, 1]  # room for the end mark at least
    # a ratio whose product overflows float32 (1e300 is finite) is the cap, not a limit of 1
    assert output_limits(lengths, 1e300, 10, 256).tolist() == [256] * 4
    assert output_limits(lengths, 1e300, 10, None).tolist() == [2 ** 61] * 4
    assert output_limits(lengths, 1.5, 2 ** 63 - 1, 256).tolist() == [256] * 4  # an offset that wrapped the sum


def test_the_default_piece_is_the_longest_source_the_cap_does_not_cut():
    limit = default_input_limit(1.5, 10, 256)
    assert output_limits(torch.tensor([limit]), 1.5, 10, 256).item() <= 256
    assert output_limits(torch.tensor([limit + 1]), 1.5, 10, None).item() > 256
    assert default_input_limit(0.0, 10, 256) == 256 and default_input_limit(100.0, 10, 256) == 16


def test_a_search_batch_holds_fewer_hypotheses_over_a_larger_vocabulary():
    # an 8k vocabulary: the row bound; 32k: the scores' bound, a quarter of the rows
    assert sentences_per_batch(5, 8000) == MAX_SEARCH_ROWS // 5
    assert sentences_per_batch(1000, 32000) == MAX_SEARCH_SCORES // 32000 // 1000 == 2
    assert sentences_per_batch(1000, 32000) * 1000 * 32000 <= MAX_SEARCH_SCORES
    assert sentences_per_batch(1, 0) == MAX_SEARCH_ROWS  # no vocabulary given: the row bound alone
    assert sentences_per_batch(10**9, 8000) == sentences_per_batch(1, 10**9) == 1  # always one sentence


def test_one_setting_for_the_command_line_the_api_and_the_server():
    from rnmt.cli import build_parser
    from rnmt.serve.settings import ServeSettings

    parser = build_parser()
    translate = parser.parse_args(["translate", "--model", "m"])
    serve = parser.parse_args(["serve", "--model", "m"])
    assert translate.max_output_tokens == serve.max_output_tokens == ServeSettings().max_output_tokens \
        == MAX_OUTPUT_TOKENS


WORDS = ["\u2581a", "b", "c", "\u2581d.", "\u2581e", "f", "\u2581g", "h", "i", "j", "k"]  # piece ids 0..10


def split(ids, size):
    return split_source(ids, size, lambda t: WORDS[t].startswith("\u2581"), lambda t: ends_sentence(WORDS[t]))


def test_split_prefers_a_sentence_end_then_a_word_start_then_any_position():
    assert split([0, 1, 2, 3, 4, 5, 0, 1], 6) == [[0, 1, 2, 3], [4, 5, 0, 1]]  # after 'd.'
    assert split([0, 1, 2, 4, 5, 6, 7], 5) == [[0, 1, 2, 4, 5], [6, 7]]  # before the word 'g'
    assert split([6, 7, 8, 9, 10, 7, 8], 3) == [[6, 7, 8], [9, 10, 7], [8]]  # one word longer than a piece
    ids = [random.Random(0).randrange(len(WORDS)) for _ in range(500)]
    pieces = split(ids, 7)
    assert sum(pieces, []) == ids and all(1 <= len(p) <= 7 for p in pieces)


@pytest.mark.parametrize("piece, ends", [("\u2581Dios.", True), ("?", True), ('."', True), ("\u2581luz", False),
                                         (":", False), ("\u2581(", False)])
def test_sentence_ends(piece, ends):
    assert ends_sentence(piece) is ends
