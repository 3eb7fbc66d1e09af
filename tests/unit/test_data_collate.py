"""Padded batch tensors for training and translation."""

import torch

from rnmt.data import BOS_ID, EOS_ID, PAD_ID, EncodedCorpus, collate, make_translation_batches, restore_order


def test_collate_pads_right_and_frames_targets():
    corpus = EncodedCorpus.from_id_lists([[5, 6, 7], [8]], [[9], [10, 11, 12]])
    batch = collate(corpus, [0, 1])
    assert batch.src.tolist() == [[5, 6, 7, EOS_ID], [8, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.src_mask.tolist() == [[True] * 4, [True, True, False, False]]
    assert batch.src_lens.tolist() == [4, 2]
    assert batch.tgt_in.tolist() == [[BOS_ID, 9, PAD_ID, PAD_ID], [BOS_ID, 10, 11, 12]]
    assert batch.tgt_out.tolist() == [[9, EOS_ID, PAD_ID, PAD_ID], [10, 11, 12, EOS_ID]]
    assert batch.tgt_mask.tolist() == [[True, True, False, False], [True] * 4]
    assert batch.indices == [0, 1] and batch.ntokens == 6 and batch.size == 2
    assert batch.src.dtype == torch.long and batch.src_mask.dtype == torch.bool


def test_collate_follows_the_given_index_order():
    corpus = EncodedCorpus.from_id_lists([[5], [6], [7]], [[8], [9], [10]])
    batch = collate(corpus, [2, 0])
    assert batch.src[:, 0].tolist() == [7, 5] and batch.indices == [2, 0]


def test_batch_to_moves_every_tensor():
    corpus = EncodedCorpus.from_id_lists([[5]], [[6]])
    batch = collate(corpus, [0], device="meta")
    assert batch.src.device.type == "meta" and batch.tgt_mask.device.type == "meta"
    assert batch.indices == [0] and batch.ntokens == 2


def test_translation_batches_respect_budget_and_restore_order():
    sentences = [[4] * n for n in (3, 0, 9, 1, 5, 9, 2)]
    batches = list(make_translation_batches(sentences, max_tokens=20))
    assert sorted(i for idx, _, _ in batches for i in idx) == list(range(7))
    widths = [src.shape[1] for _, src, _ in batches]
    assert widths == sorted(widths, reverse=True)  # longest first
    for idx, src, mask in batches:
        assert src.numel() <= 20 and mask.sum().item() == sum(len(sentences[i]) + 1 for i in idx)
        assert all(src[k, len(sentences[i])].item() == EOS_ID for k, i in enumerate(idx))
    lengths = restore_order([idx for idx, _, _ in batches], [m.sum(1).tolist() for _, _, m in batches])
    assert lengths == [len(s) + 1 for s in sentences]


def test_translation_keeps_empty_inputs_as_eos_only():
    (idx, src, mask), = make_translation_batches([[]], max_tokens=10)
    assert idx == [0] and src.tolist() == [[EOS_ID]] and mask.tolist() == [[True]]
