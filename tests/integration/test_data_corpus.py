"""Encoding a parallel corpus into cached arrays."""

import os

import numpy as np
import pytest

from rnmt.data import EOS_ID, encode_corpus, train_spm
from rnmt.errors import UserError

LINES_ES = ["el perro come", "la casa grande", "el gato bebe agua", "río verde", "montaña roja"]
LINES_EN = ["the dog eats", "the big house", "the cat drinks water", "green river", "red mountain"]


@pytest.fixture(scope="module")
def vocab():
    return train_spm(LINES_ES * 4 + LINES_EN * 4, 60)


@pytest.fixture()
def files(tmp_path):
    src, tgt = tmp_path / "c.es", tmp_path / "c.en"
    src.write_text("\n".join(LINES_ES) + "\n")
    tgt.write_text("\n".join(LINES_EN) + "\n")
    return src, tgt


def test_pairs_round_trip_with_eos_on_source_only(files, vocab, tmp_path):
    corpus = encode_corpus(*files, vocab, vocab, tmp_path / "cache", max_len=None)
    assert len(corpus) == 5 and corpus.n_empty == 0 and corpus.n_too_long == 0
    for i in range(5):
        src, tgt = corpus.pair(i)
        assert src[-1] == EOS_ID and EOS_ID not in tgt
        assert vocab.decode(src) == LINES_ES[i] and vocab.decode(tgt) == LINES_EN[i]
    assert corpus.src_lens.tolist() == [len(vocab.encode(s)) + 1 for s in LINES_ES]
    assert corpus.tgt_lens.tolist() == [len(vocab.encode(t)) + 1 for t in LINES_EN]
    assert corpus.src.dtype == np.int32 and corpus.src_offsets.dtype == np.int64


def test_arrays_are_memory_mapped_npy(files, vocab, tmp_path):
    corpus = encode_corpus(*files, vocab, vocab, tmp_path / "cache")
    assert isinstance(corpus.src, np.memmap) and isinstance(corpus.tgt_offsets, np.memmap)
    assert sorted(p.name for p in corpus.cache_path.iterdir()) == [
        "line_numbers.npy", "meta.json", "src.npy", "src_offsets.npy", "tgt.npy", "tgt_offsets.npy"]


def test_too_long_pairs_are_dropped_and_counted(files, vocab, tmp_path):
    limit = sorted(len(vocab.encode(t)) + 1 for t in LINES_ES + LINES_EN)[4]
    corpus = encode_corpus(*files, vocab, vocab, tmp_path / "cache", max_len=limit)
    kept = [i for i in range(5) if max(len(vocab.encode(LINES_ES[i])), len(vocab.encode(LINES_EN[i]))) + 1 <= limit]
    assert 0 < len(kept) < 5
    assert corpus.line_numbers.tolist() == kept and corpus.n_too_long == 5 - len(kept)
    assert max(corpus.src_lens.max(), corpus.tgt_lens.max()) <= limit


def test_blank_pairs_are_skipped_and_line_numbers_kept(tmp_path, vocab):
    src, tgt = tmp_path / "s", tmp_path / "t"
    src.write_text("el perro\n\nla casa\nrío\n")
    tgt.write_text("the dog\nthe house\n \ngreen river\n")
    corpus = encode_corpus(src, tgt, vocab, vocab, tmp_path / "cache")
    assert corpus.n_empty == 2 and corpus.line_numbers.tolist() == [0, 3]


def test_cache_is_reused_for_the_same_inputs(files, vocab, tmp_path):
    first = encode_corpus(*files, vocab, vocab, tmp_path / "cache")
    second = encode_corpus(*files, vocab, vocab, tmp_path / "cache")
    assert not first.from_cache and second.from_cache
    assert second.cache_path == first.cache_path
    assert np.array_equal(first.src, second.src) and np.array_equal(first.tgt_offsets, second.tgt_offsets)


def test_cache_is_invalidated_by_corpus_vocab_or_max_len(files, vocab, tmp_path):
    cache = tmp_path / "cache"
    base = encode_corpus(*files, vocab, vocab, cache, max_len=100)
    assert encode_corpus(*files, vocab, vocab, cache, max_len=50).cache_path != base.cache_path
    other = train_spm(LINES_ES * 4 + LINES_EN * 4, 50)
    assert encode_corpus(*files, other, vocab, cache, max_len=100).cache_path != base.cache_path
    files[1].write_text("\n".join(LINES_EN[::-1]) + "\n")
    os.utime(files[1], ns=(0, 0))
    changed = encode_corpus(*files, vocab, vocab, cache, max_len=100)
    assert not changed.from_cache and changed.cache_path != base.cache_path
    assert vocab.decode(changed.pair(0)[1]) == LINES_EN[-1]


def test_unequal_corpus_leaves_no_cache_entry(tmp_path, vocab):
    src, tgt = tmp_path / "s", tmp_path / "t"
    src.write_text("a\nb\n")
    tgt.write_text("a\n")
    with pytest.raises(UserError, match="2 lines.*1"):
        encode_corpus(src, tgt, vocab, vocab, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_corpus_file_is_named(tmp_path, vocab):
    (tmp_path / "s").write_text("a\n")
    with pytest.raises(UserError, match="absent.en"):
        encode_corpus(tmp_path / "s", tmp_path / "absent.en", vocab, vocab, tmp_path / "cache")


def _cut_short(entry):
    data = (entry / "src.npy").read_bytes()
    (entry / "src.npy").write_bytes(data[: len(data) - 8])


def _garbage_meta(entry):
    (entry / "meta.json").write_text("{not json")


def _offsets_of_another_corpus(entry):
    offsets = np.load(entry / "tgt_offsets.npy")
    np.save(entry / "tgt_offsets.npy", offsets[:-1])  # one pair fewer than the other arrays


def _empty_array_file(entry):
    (entry / "line_numbers.npy").write_bytes(b"")


@pytest.mark.parametrize("damage", [_cut_short, _garbage_meta, _offsets_of_another_corpus, _empty_array_file])
def test_an_unreadable_cache_entry_is_encoded_again_with_a_warning(files, vocab, tmp_path, damage):
    from rnmt.errors import CacheRebuiltWarning

    first = encode_corpus(*files, vocab, vocab, tmp_path / "cache")
    pairs = [tuple(map(tuple, first.pair(i))) for i in range(len(first))]
    entry = first.cache_path
    del first  # the arrays are memory-mapped: let go before the files change
    damage(entry)
    with pytest.warns(CacheRebuiltWarning, match="corpus cache entry unreadable .*encoding the corpus again"):
        again = encode_corpus(*files, vocab, vocab, tmp_path / "cache")
    assert not again.from_cache and again.cache_path == entry
    assert [tuple(map(tuple, again.pair(i))) for i in range(len(again))] == pairs
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [entry.name]  # nothing left aside
    assert encode_corpus(*files, vocab, vocab, tmp_path / "cache").from_cache  # and it is a good entry again
