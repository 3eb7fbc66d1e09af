"""Damaged and foreign files a run reads back: a model file with non-finite weights or with
malformed ``meta``, a training state that is empty or not a dict, a corpus cache whose token
ids fall outside the vocabulary. Each is a one-line error naming the file (exit code 2), or,
for the cache, derived data encoded again."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from rnmt.cli import main
from rnmt.errors import UserError
from rnmt.io.checkpoint_files import read_model_file
from tests.support import assert_one_line


def _rewrite(src, dst, tensors=None, **metadata):
    """Copy the checkpoint ``src`` to ``dst`` with some tensors and metadata fields replaced."""
    with safe_open(str(src), framework="pt") as fh:
        meta = dict(fh.metadata())
        stored = {k: fh.get_tensor(k) for k in fh.keys()}
    stored.update(tensors or {})
    meta.update(metadata)
    save_file(stored, str(dst), metadata=meta)
    return dst


def _first_weight(path):
    with safe_open(str(path), framework="pt") as fh:
        return next(k for k in fh.keys() if k.startswith("model.") and fh.get_tensor(k).is_floating_point())


# -- non-finite weights -------------------------------------------------------------------

@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_model_file_with_non_finite_weights_is_refused_naming_the_tensor(tmp_path, tiny_run, value):
    best = tiny_run / "best.safetensors"
    key = _first_weight(best)
    with safe_open(str(best), framework="pt") as fh:
        bad = torch.full_like(fh.get_tensor(key), value)
    path = _rewrite(best, tmp_path / "nan.safetensors", {key: bad})
    with pytest.raises(UserError, match=rf"nan.safetensors: .*'{key[len('model.'):]}' is not finite"):
        read_model_file(path)


def test_translate_with_a_nan_model_is_one_line_exit_2(tmp_path, tiny_run, capsys):
    best = tiny_run / "best.safetensors"
    with safe_open(str(best), framework="pt") as fh:
        bad = {k: torch.full_like(fh.get_tensor(k), float("nan")) for k in fh.keys()
               if k.startswith("model.") and fh.get_tensor(k).is_floating_point()}
    path = _rewrite(best, tmp_path / "nan.safetensors", bad)
    src = tmp_path / "in.es"
    src.write_text("el perro come\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["translate", "--model", str(path), "--input", str(src)]) == 2
    assert_one_line(capsys.readouterr().err, "nan.safetensors", "not finite")


# -- malformed meta -----------------------------------------------------------------------

@pytest.mark.parametrize("meta", ["[1, 2]", '"a string"', "3", "null", '{"step": "x", "epoch": 1}',
                                  '{"step": 1, "epoch": 1, "dev_bleu": "high"}', '{"step": true}',
                                  '{"step": 1, "init_from": [1]}', '{"averaged": "a", "steps": [1]}',
                                  "{not json"])
def test_malformed_meta_is_a_corrupt_checkpoint(tmp_path, tiny_run, meta, capsys):
    path = _rewrite(tiny_run / "best.safetensors", tmp_path / "bad.safetensors", meta=meta)
    with pytest.raises(UserError, match=r"bad.safetensors: corrupt checkpoint metadata"):
        read_model_file(path)
    capsys.readouterr()
    out = tmp_path / "avg.safetensors"
    assert main(["average", str(tiny_run / "best.safetensors"), str(path), "--out", str(out)]) == 2
    assert_one_line(capsys.readouterr().err, "bad.safetensors")
    assert not out.exists()


def test_well_formed_meta_of_every_writer_still_loads(tmp_path, tiny_run):
    ok = {"step": 6, "epoch": 1, "dev_bleu": None, "init_from": {"path": "p.safetensors", "step": 3},
          "averaged": ["a", "b"], "steps": [3, None], "a_key_of_a_later_rnmt": {"x": 1}}
    path = _rewrite(tiny_run / "best.safetensors", tmp_path / "ok.safetensors", meta=json.dumps(ok))
    assert read_model_file(path).meta == ok
    no_meta = tmp_path / "no-meta.safetensors"
    with safe_open(str(tiny_run / "best.safetensors"), framework="pt") as fh:
        meta = {k: v for k, v in fh.metadata().items() if k != "meta"}
        save_file({k: fh.get_tensor(k) for k in fh.keys()}, str(no_meta), metadata=meta)
    assert read_model_file(no_meta).meta == {}


# -- training state -----------------------------------------------------------------------

def _write_empty(path):
    path.write_bytes(b"")


def _write_a_list(path):
    torch.save([1, 2], path)


def _write_garbage(path):
    path.write_bytes(b"\x00" * 7)


@pytest.mark.parametrize("damage", [_write_empty, _write_a_list, _write_garbage])
def test_a_damaged_training_state_is_one_line_on_resume(tmp_path, tiny_run, damage, capsys):
    from rnmt.training.checkpoint import load_train_state

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    damage(run / "train_state.pt")
    with pytest.raises(UserError, match=r"train_state.pt: corrupt or truncated training state"):
        load_train_state(run / "train_state.pt")
    capsys.readouterr()
    assert main(["train", str(run / "config.yaml"), "--out", str(run), "--resume"]) == 2
    err = capsys.readouterr().err  # a warning line may come first (the fixture's run has no config.source.yaml)
    assert "Traceback" not in err
    assert_one_line(err.strip().splitlines()[-1], "train_state.pt", "corrupt or truncated training state")


def test_a_raw_pickle_training_state_is_one_clean_line_on_resume(tmp_path, tiny_run, capsys):
    """issue 66 #9: a train_state.pt written by pickle.dump (not rnmt's torch.save archive):
    one `error: <path>: ...` line, exit 2, none of torch's warning or advice text, nothing run."""
    import pickle

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    state = run / "train_state.pt"
    state.write_bytes(pickle.dumps({"step": 3, "checkpoint": "ckpt-3.safetensors", "rng": [1, 2, 3]}, protocol=4))
    assert main(["train", str(run / "config.yaml"), "--out", str(run), "--resume"]) == 2
    captured = capsys.readouterr()
    # the set-up's progress lines (training pairs, ...) may come first: one error line, the last
    lines = [line for line in captured.err.strip().splitlines() if line.startswith("error") or "warning" in line]
    assert_one_line("\n".join(lines), f"error: {state}: ", "raw pickle", "nothing in it was loaded or run")
    for torch_text in ("weights_only", "UserWarning", "pickle protocol", "torch.load"):
        assert torch_text not in captured.err + captured.out


class Foreign:
    """An object no weights-only load accepts (its class is not an allowed global)."""


def test_a_refused_object_in_a_training_state_names_it_in_one_line(tmp_path):
    """A torch.save archive holding an object the weights-only loader refuses: the refused
    global in the one line, not torch's paragraph of advice."""
    from rnmt.training.checkpoint import load_train_state

    path = tmp_path / "train_state.pt"
    torch.save({"step": Foreign()}, path)
    with pytest.raises(UserError) as caught:
        load_train_state(path)
    message = str(caught.value)
    assert "\n" not in message and "test_damaged_files.Foreign" in message
    assert "nothing in it was run" in message and "weights_only" not in message


def test_an_empty_exception_message_still_gives_a_reason(tmp_path, tiny_run, monkeypatch):
    """An exception without a message (EOFError() from a cut file) names its class."""
    def raise_bare(*_a, **_k):
        raise EOFError()

    monkeypatch.setattr("rnmt.io.checkpoint_files.safe_open", raise_bare)
    with pytest.raises(UserError, match=r"corrupt or truncated checkpoint \(EOFError\)"):
        read_model_file(tiny_run / "best.safetensors")


# -- corpus cache ---------------------------------------------------------------------------

LINES_ES = ["el perro come", "la casa grande", "el gato bebe agua", "río verde", "montaña roja"]
LINES_EN = ["the dog eats", "the big house", "the cat drinks water", "green river", "red mountain"]


@pytest.mark.parametrize("name, value", [("src", 10 ** 6), ("tgt", 10 ** 6), ("src", -1), ("tgt", -3)])
def test_cache_ids_outside_the_vocabulary_are_encoded_again(tmp_path, name, value):
    from rnmt.data import encode_corpus, train_spm
    from rnmt.errors import CacheRebuiltWarning

    vocab = train_spm(LINES_ES * 4 + LINES_EN * 4, 60)
    src, tgt = tmp_path / "c.es", tmp_path / "c.en"
    src.write_text("\n".join(LINES_ES) + "\n")
    tgt.write_text("\n".join(LINES_EN) + "\n")
    first = encode_corpus(src, tgt, vocab, vocab, tmp_path / "cache")
    pairs = [tuple(map(tuple, first.pair(i))) for i in range(len(first))]
    entry = first.cache_path
    del first
    ids = np.load(entry / f"{name}.npy")
    np.save(entry / f"{name}.npy", np.full_like(ids, value))  # same shape and dtype
    with pytest.warns(CacheRebuiltWarning, match="outside the vocabulary"):
        again = encode_corpus(src, tgt, vocab, vocab, tmp_path / "cache")
    assert not again.from_cache
    assert [tuple(map(tuple, again.pair(i))) for i in range(len(again))] == pairs


def test_a_vocabulary_that_is_not_sentencepiece_names_the_checkpoint_and_side(tmp_path, tiny_run, capsys):
    # the error said "vocabulary bytes: not a sentencepiece model", naming no file
    bad = _rewrite(tiny_run / "best.safetensors", tmp_path / "bad.safetensors",
                   tensors={"vocab.tgt": torch.frombuffer(bytearray(b"not a model at all"), dtype=torch.uint8)})
    src = tmp_path / "in.es"
    src.write_text("Y dijo Dios\n", encoding="utf-8")
    assert main(["translate", "--model", str(bad), "--input", str(src)]) == 2
    assert_one_line(capsys.readouterr().err, f"{bad}: the tgt vocabulary in the checkpoint: not a sentencepiece model")
