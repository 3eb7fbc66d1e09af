"""Every architecture and unit exports (rnmt.export.survey.CASES: each rnnsearch unit, ATR's
CA encoder, deep RNNSearch, RNNSearch-minus, seq2seq, both Cseq2seq models, Luong's
attentions, DTMT, the Transformer-encoder hybrids, the Transformer): onnxruntime runs the
three graphs to the PyTorch model's outputs on batch sizes, lengths and beams not traced."""

from __future__ import annotations

import pytest

from rnmt.export.survey import CASES, case_id, measure
from rnmt.models.registry import architectures

TOLERANCE = 1e-5


def test_the_cases_cover_every_registered_architecture():
    from rnmt.export.survey import tiny_model

    covered = {type(tiny_model(*case)) for case in CASES}
    from rnmt.models.registry import ARCHITECTURES

    assert {ARCHITECTURES.get(name).target for name in architectures()} <= covered


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_step_parity_through_onnxruntime(case, tmp_path):
    row = measure(case, tmp_path)
    assert max(row[g] for g in ("encoder", "init", "step")) < TOLERANCE, row
