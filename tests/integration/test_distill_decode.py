"""The teacher's chunked decoding (rnmt.distill.decode) with a stand-in model, in files: chunks written
whole, kept across starts, never translated twice; n-best chosen by chrF."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import List, Tuple

import pytest

from rnmt.distill.decode import best_by_chrf, chunk_path, cross_entropy, decode_all, read_chunks
from rnmt.distill.setup import claim_out_dir
from rnmt.errors import UserError


@dataclass
class Hyp:
    text: str
    score: float = 0.0
    pieces: Tuple[str, ...] = ()
    token_log_probs: Tuple[float, ...] = ()


class Upper:
    """Translates a line into its upper case, with nbest variants; records every call."""

    def __init__(self) -> None:
        self.calls: List[List[str]] = []

    def translate(self, lines, beam, nbest, token_scores):
        self.calls.append(list(lines))
        out = []
        for line in lines:
            hyps = [Hyp(line.upper() + "!" * k, token_log_probs=(-1.0, -2.0) if line else ()) for k in range(nbest)]
            out.append(hyps if nbest > 1 else hyps[0])
        return out


SOURCES = [f"line {i}" for i in range(11)] + [""]


def test_chunks_hold_every_line_once_in_order(tmp_path):
    model = Upper()
    decode_all(model, SOURCES, SOURCES, tmp_path, 5, beam=2, nbest=1, log=lambda *_: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == [chunk_path(tmp_path, k).name for k in range(3)]
    decoded = read_chunks(tmp_path, len(SOURCES), 5)
    assert [h for h, _ in decoded] == [s.upper() for s in SOURCES]
    assert decoded[0][1] == pytest.approx(1.5) and decoded[-1][1] is None  # blank line: no subwords
    assert [len(c) for c in model.calls] == [5, 5, 2]


def test_a_second_start_keeps_finished_chunks_and_decodes_only_the_rest(tmp_path):
    decode_all(Upper(), SOURCES[:10], SOURCES[:10], tmp_path, 5, 2, 1, lambda *_: None)  # as if killed after 2 chunks
    chunk_path(tmp_path, 1).write_text('{"hyp": "KEPT", "ce": 0.0}\n' * 5, encoding="utf-8")
    (tmp_path / ".chunk-000002.jsonl.abc.tmp").write_text("half a chunk", encoding="utf-8")  # a killed write
    model, log = Upper(), []
    decode_all(model, SOURCES, SOURCES, tmp_path, 5, 2, 1, log.append)
    assert model.calls == [SOURCES[10:]]  # only the missing chunk
    assert [h for h, _ in read_chunks(tmp_path, len(SOURCES), 5)][5:10] == ["KEPT"] * 5
    assert not list(tmp_path.glob(".*.tmp"))
    assert "2 of 3 chunks already done, kept; decoding 1" in log[0]
    assert "ETA" in log[-1] and "lines/s" in log[-1]


def test_nbest_keeps_the_hypothesis_closest_to_the_reference_by_chrf(tmp_path):
    hyps = [Hyp("the cat sat"), Hyp("a dog ran away"), Hyp("the dog ran away")]
    assert best_by_chrf(hyps, "the dog ran away").text == "the dog ran away"
    assert best_by_chrf([Hyp("x"), Hyp("x")], "y") is not None
    model = Upper()
    decode_all(model, ["abc"], ["ABC!"], tmp_path, 4, beam=3, nbest=3, log=lambda *_: None)
    assert read_chunks(tmp_path, 1, 4)[0][0] == "ABC!"  # the second of the n-best, nearest the reference


def test_cross_entropy_is_the_mean_negative_log_probability():
    assert cross_entropy([-1.0, -3.0]) == 2.0 and cross_entropy([]) is None


def test_out_dir_holding_something_else_is_refused(tmp_path):
    record = {"format": 1, "teacher": {"sha256": ["a"]}, "students": {}, "options": {"beam": 5}}
    assert claim_out_dir(tmp_path / "new", record) is False
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(UserError, match="not empty and holds no distillation"):
        claim_out_dir(tmp_path / "other", record)
    held = tmp_path / "held"
    held.mkdir()
    (held / "distill.json").write_text(json.dumps(record), encoding="utf-8")
    assert claim_out_dir(held, record) is True
    with pytest.raises(UserError, match=r"holds another distillation \(its settings differ: beam: 5 there, 4 now"):
        claim_out_dir(held, {**record, "options": {"beam": 4}})
