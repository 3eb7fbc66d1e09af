"""benchmarks/studies/init_scale.py: the unigram perplexity it prints as the plateau's reference."""

from __future__ import annotations

import math

import pytest

from rnmt.data import train_vocabs
from tests.support import load_benchmark


def test_unigram_perplexity_counts_pieces_and_end_of_sentence(tmp_path):
    (tmp_path / "a.es").write_text("el perro come\nla casa\n" * 50, encoding="utf-8")
    (tmp_path / "a.en").write_text("the dog eats\nthe house\n" * 50, encoding="utf-8")
    train_vocabs(tmp_path / "a.es", tmp_path / "a.en", tmp_path / "v", src_size=40)
    model = next((tmp_path / "v").glob("*.model"))
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model))
    pieces = sp.encode("the dog eats")
    assert len(set(pieces)) == len(pieces)
    # Every line the same: each distinct piece and </s> equally frequent.
    (tmp_path / "same.en").write_text("the dog eats\n" * 7, encoding="utf-8")
    script = load_benchmark("studies.init_scale")
    assert script.unigram_perplexity(model, tmp_path / "same.en") == pytest.approx(len(pieces) + 1)
    # Two lines sharing "the": a skewed distribution has a lower perplexity than its support.
    ppl = script.unigram_perplexity(model, tmp_path / "a.en")
    assert 1 < ppl < len(set(pieces) | set(sp.encode("the house"))) + 1
    assert math.isfinite(ppl)
