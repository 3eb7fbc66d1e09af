"""An encoded corpus built in memory has the cached arrays' layout."""

from rnmt.data import EOS_ID, EncodedCorpus


def test_in_memory_corpus_matches_the_layout():
    corpus = EncodedCorpus.from_id_lists([[5, 6], [7]], [[8], [9, 10, 11]])
    assert corpus.pair(0)[0].tolist() == [5, 6, EOS_ID] and corpus.pair(1)[1].tolist() == [9, 10, 11]
    assert corpus.src_lens.tolist() == [3, 2] and corpus.tgt_lens.tolist() == [2, 4]
