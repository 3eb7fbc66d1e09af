"""The papers' parameter tables, reproduced from the shipped configs (built on the meta device).

Cseq2seq Table 1 within 0.01M, ATR Table 4 within 0.1M, DTMT Tables 1/3 as differences
within 0.2M (SPEC Part A derives each number).
"""

from __future__ import annotations

import pytest
import torch

from rnmt.config import load_config
from rnmt.models import build_model, count_parameters
from tests.support import REPO

PAPERS = REPO / "configs" / "papers"


def params(name: str, *overrides: str) -> int:
    cfg = load_config(PAPERS / f"{name}.yaml", overrides)
    with torch.device("meta"):
        model = build_model(cfg.model)
    return count_parameters(model)["total"]


CSEQ2SEQ_TABLE_1 = {
    "seq2seq": 74.19,
    "rnnsearch": 89.67,
    "cseq2seq1-mp": 90.05,
    "cseq2seq1-ls": 90.05,
    "cseq2seq2": 75.19,
    "cseq2seq2-sgru": 70.32,
    "cseq2seq2-sword": 56.59,
    "cseq2seq2-sgru-sword": 51.72,
}


@pytest.mark.parametrize("name,millions", CSEQ2SEQ_TABLE_1.items())
def test_cseq2seq_table_1(name, millions):
    assert abs(params(f"cseq2seq/{name}") / 1e6 - millions) <= 0.005 + 1e-9


def test_dl4mt_rnnsearch_is_exact():
    assert params("cseq2seq/rnnsearch") == 89_673_261


def test_rnnsearch_minus_is_within_a_tenth_of_a_million_of_the_paper():
    # 84.35M in the paper; the Bahdanau et al. decoder with maxout l=500 gives 84.45M
    # (docs/models.md explains the gap).
    assert params("cseq2seq/rnnsearch-minus") == 84_447_001


def test_cseq2seq_sharing_prunes_what_section_5_2_says():
    base = params("cseq2seq/cseq2seq2")
    for name, pruned in (("sgru", 4.87), ("sword", 18.6), ("sgru-sword", 23.47)):
        assert abs((base - params(f"cseq2seq/cseq2seq2-{name}")) / 1e6 - pruned) <= 0.01


ATR_TABLE_4 = {"gru": 83.5, "lstm": 93.3, "ran": 79.5, "atr": 67.8, "atr-ca": 63.1}


@pytest.mark.parametrize("name,millions", ATR_TABLE_4.items())
def test_atr_table_4(name, millions):
    assert abs(params(f"atr/rnnsearch-{name}") / 1e6 - millions) <= 0.1


DTMT_DIFFERENCES = [
    ("shallow-rnmt-lgru", "shallow-rnmt", 14.7),  # Table 3: 157.9M - 143.2M
    ("shallow-rnmt-lau", "shallow-rnmt", 14.7),  # Table 3: LAU has L-GRU's parameter count
    ("dtmt1", "shallow-rnmt-lgru", 12.6),  # Table 1/3: 170.5M - 157.9M
    ("dtmt4", "dtmt1", 37.9),  # Table 1: 208.4M - 170.5M
    ("dtmt1", "dtmt1-gru", 14.7),  # Table 3: 170.5M - 155.8M
    ("dtmt4", "dtmt4-gru", 14.7),  # Table 3: 208.4M - 193.7M
    ("dtmt1-lau", "dtmt1-gru", 14.7),
]


@pytest.mark.parametrize("bigger,smaller,millions", DTMT_DIFFERENCES)
def test_dtmt_table_differences(bigger, smaller, millions):
    assert abs((params(f"dtmt/{bigger}") - params(f"dtmt/{smaller}")) / 1e6 - millions) <= 0.2


def test_dtmt_positional_encoding_adds_no_parameters():
    assert params("dtmt/dtmt4") == params("dtmt/dtmt4", "model.options.positional_encoding=false")


def test_every_paper_config_builds_on_meta():
    for path in sorted(PAPERS.glob("*/*.yaml")):
        name = f"{path.parent.name}/{path.stem}"
        assert params(name) > 0, name
