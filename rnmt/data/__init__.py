"""Data pipeline: read and validate corpora, subword vocabularies, encoded caches,
token-budget batches and padded tensors. See docs/data.md."""

from rnmt.data.collate import Batch, collate, pad_sequences
from rnmt.data.corpus import EncodedCorpus, encode_corpus
from rnmt.data.reading import count_lines, iter_lines, iter_parallel, read_lines, read_parallel
from rnmt.data.sampler import TokenBatchSampler
from rnmt.data.translation import make_translation_batches, restore_order
from rnmt.data.vocab import (
    BOS,
    BOS_ID,
    EOS,
    EOS_ID,
    PAD,
    PAD_ID,
    UNK,
    UNK_ID,
    Vocab,
    load_vocab,
    train_spm,
    train_vocabs,
)

__all__ = [
    "Batch", "collate", "pad_sequences",
    "EncodedCorpus", "encode_corpus",
    "count_lines", "iter_lines", "iter_parallel", "read_lines", "read_parallel",
    "TokenBatchSampler",
    "make_translation_batches", "restore_order",
    "BOS", "BOS_ID", "EOS", "EOS_ID", "PAD", "PAD_ID", "UNK", "UNK_ID",
    "Vocab", "load_vocab", "train_spm", "train_vocabs",
]
