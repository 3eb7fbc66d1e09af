"""Sentencepiece vocabularies: special ids, determinism, serialisation, errors."""

import pickle
import random

import pytest

from rnmt.data import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab, load_vocab, train_spm, train_vocabs
from rnmt.errors import UserError

WORDS_ES = "el la casa perro gato come bebe agua grande pequeño rojo verde río montaña".split()
WORDS_EN = "the house dog cat eats drinks water big small red green river mountain".split()


def corpus(tmp_path, n=200, seed=0):
    rng = random.Random(seed)
    src = tmp_path / "train.es"
    tgt = tmp_path / "train.en"
    src.write_text("".join(" ".join(rng.choices(WORDS_ES, k=rng.randint(2, 8))) + "\n" for _ in range(n)))
    tgt.write_text("".join(" ".join(rng.choices(WORDS_EN, k=rng.randint(2, 8))) + "\n" for _ in range(n)))
    return src, tgt


def test_special_ids_are_fixed(tmp_path):
    src, tgt = corpus(tmp_path)
    vocab, _ = train_vocabs(src, tgt, tmp_path / "v", src_size=60)
    assert (vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2, 3)
    assert (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)
    assert vocab.pieces[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert vocab.size == len(vocab) == 60


@pytest.mark.parametrize("model_type", ["bpe", "unigram", "word", "char"])
def test_training_twice_gives_byte_identical_models(tmp_path, model_type):
    src, tgt = corpus(tmp_path)
    a, _ = train_vocabs(src, tgt, tmp_path / "a", model_type=model_type, src_size=40)
    b, _ = train_vocabs(src, tgt, tmp_path / "b", model_type=model_type, src_size=40)
    assert (tmp_path / "a" / "spm.model").read_bytes() == (tmp_path / "b" / "spm.model").read_bytes()
    assert a == b


def test_sampled_training_is_deterministic_per_seed(tmp_path):
    lines = [" ".join(random.Random(i).choices(WORDS_ES, k=5)) for i in range(300)]
    runs = [train_spm(lines, 40, max_sentences=150, seed=7).to_bytes() for _ in range(2)]
    assert runs[0] == runs[1]


def test_joint_returns_one_vocab_and_separate_writes_two(tmp_path):
    src, tgt = corpus(tmp_path)
    s, t = train_vocabs(src, tgt, tmp_path / "j", joint=True, src_size=60)
    assert s is t and (tmp_path / "j" / "spm.model").is_file()
    s, t = train_vocabs(src, tgt, tmp_path / "s", joint=False, src_size=50, tgt_size=45)
    assert (s.size, t.size) == (50, 45)
    assert load_vocab(tmp_path / "s" / "spm.src.model") == s
    assert load_vocab(tmp_path / "s" / "spm.tgt.model") == t
    assert "perro" not in "".join(t.pieces)


def test_encode_has_no_markers_and_decode_stops_at_eos(tmp_path):
    src, tgt = corpus(tmp_path)
    vocab, _ = train_vocabs(src, tgt, tmp_path / "v", src_size=60)
    ids = vocab.encode("el perro come")
    assert ids and BOS_ID not in ids and EOS_ID not in ids
    assert vocab.decode([BOS_ID] + ids + [EOS_ID] + vocab.encode("agua") + [PAD_ID]) == "el perro come"
    assert vocab.decode([BOS_ID] + ids + [PAD_ID, PAD_ID]) == "el perro come"


def test_bytes_round_trip_and_pickle(tmp_path):
    src, tgt = corpus(tmp_path)
    vocab, _ = train_vocabs(src, tgt, tmp_path / "v", src_size=60)
    again = Vocab.from_bytes(vocab.to_bytes())
    assert again == vocab and again.fingerprint == vocab.fingerprint
    assert again.encode("la casa verde") == vocab.encode("la casa verde")
    assert pickle.loads(pickle.dumps(vocab)).encode("río") == vocab.encode("río")


def test_foreign_special_ids_are_rejected(tmp_path):
    import io

    import sentencepiece as spm

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["a b c d e f g"] * 20), model_writer=out,
                                   vocab_size=12, minloglevel=2)  # sentencepiece defaults: unk=0
    path = tmp_path / "foreign.model"
    path.write_bytes(out.getvalue())
    with pytest.raises(UserError, match=r"foreign\.model: special ids"):
        load_vocab(path)


def test_bad_vocab_files_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="missing.model"):
        load_vocab(tmp_path / "missing.model")
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"not a model")
    with pytest.raises(UserError, match="junk.model"):
        load_vocab(junk)


def test_too_large_vocab_size_is_a_user_error(tmp_path):
    src, tgt = corpus(tmp_path, n=20)
    with pytest.raises(UserError, match=r"joint vocabulary of .*train\.es, .*train\.en: .*(?i:vocabulary size).*\d"):
        train_vocabs(src, tgt, tmp_path / "v", src_size=5000)


def test_a_file_without_text_is_named(tmp_path):
    src, tgt = corpus(tmp_path, n=20)
    tgt.write_text("\n \n")
    with pytest.raises(UserError, match=r"train\.en: no text to train the vocabulary on"):
        train_vocabs(src, tgt, tmp_path / "v", src_size=40, joint=False)


def test_invalid_utf8_in_training_data_names_the_line(tmp_path):
    src, tgt = corpus(tmp_path, n=20)
    tgt.write_bytes(tgt.read_bytes() + b"caf\xe9\n")
    with pytest.raises(UserError, match=r"train\.en: line 21 is not valid UTF-8"):
        train_vocabs(src, tgt, tmp_path / "v", src_size=40)


def test_a_word_vocabulary_keeps_text_segmented_beforehand(tmp_path):
    """``type: word`` takes every whitespace token as it is (e.g. subword-nmt BPE with its
    ``@@`` markers); the size is a maximum: the corpus has 29 distinct tokens, 4 ids are special."""
    src, tgt = tmp_path / "train.es", tmp_path / "train.en"
    src.write_text("".join(f"{' '.join(WORDS_ES)} cas@@ as\n" for _ in range(3)))
    tgt.write_text("".join(f"{' '.join(WORDS_EN)} hous@@ es\n" for _ in range(3)))
    vocab, _ = train_vocabs(src, tgt, tmp_path / "v", model_type="word", src_size=8000)
    assert vocab.size == 4 + len(WORDS_ES) + len(WORDS_EN) + 4 - len(set(WORDS_ES) & set(WORDS_EN))
    text = "the cas@@ as big hous@@ es"
    assert vocab.encode_pieces(text) == ["▁the", "▁cas@@", "▁as", "▁big", "▁hous@@", "▁es"]
    assert vocab.decode(vocab.encode(text)) == text
    assert vocab.encode("unseen") == [vocab.unk_id]
    small, _ = train_vocabs(src, tgt, tmp_path / "small", model_type="word", src_size=10)
    assert small.size == 10  # the 6 most frequent tokens


def test_a_character_vocabulary_spells_every_seen_character(tmp_path):
    src, tgt = corpus(tmp_path)
    vocab, _ = train_vocabs(src, tgt, tmp_path / "v", model_type="char", src_size=8000)
    pieces = vocab.encode_pieces("the red río")
    assert all(len(p) == 1 for p in pieces) and "".join(pieces).replace("▁", " ").strip() == "the red río"
    assert vocab.size < 60  # the characters of the corpus and the specials, not 8,000


def test_a_run_on_text_segmented_beforehand_translates_into_its_tokens(tmp_path, tiny_corpus):
    """The workflow of a corpus segmented by another tool (here: every word cut after its
    third letter, subword-nmt style): `data.vocab.type: word` trains and translates in those
    tokens, which the user joins again (``sed 's/@@ //g'``)."""
    import rnmt
    from tests.support import tiny_config_tree

    def segment(line):
        return " ".join(w if len(w) <= 3 else f"{w[:3]}@@ {w[3:]}" for w in line.split())

    data = tmp_path / "bpe"
    data.mkdir()
    for split in ("train", "dev"):
        for lang in ("es", "en"):
            lines = open(f"{tiny_corpus[split]}.{lang}", encoding="utf-8").read().splitlines()
            (data / f"{split}.{lang}").write_text("".join(segment(x) + "\n" for x in lines), encoding="utf-8")
    tree = tiny_config_tree(str(data / "train"), str(data / "dev"))
    tree["data"]["vocab"] = {"type": "word", "size": 5000}
    rnmt.train(tree, out=tmp_path / "run")
    model = rnmt.load(tmp_path / "run", device="cpu")
    pieces = model.loaded.tgt_vocab.pieces
    assert len(pieces) < 5000 and any(p.endswith("@@") for p in pieces)
    [hyp] = model.translate([segment("Y dijo Dios: Sea la luz.")], greedy=True, token_scores=True)
    assert all(p in pieces for p in hyp.pieces)  # whole tokens of the segmented text, never cut further
