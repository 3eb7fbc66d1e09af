"""Parity: the runtime's n-best lists (rnmt_runtime, numpy + onnxruntime) against rnmt's own
PyTorch search on the same model, for a tiny model of every exportable architecture.

Each model is built at a small size with seeded random weights over the vocabulary of one
tiny training run, saved as a checkpoint, exported with `rnmt.export`, and both sides
translate one batch of lines of mixed lengths (a blank one too) at beam 1 and at beam 4 with
4-best lists and a length penalty. Words must agree and scores within 1e-4; where two
hypotheses tie to within that, either order is accepted (the two searches break exact ties
between equal scores differently).
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.support import SAMPLE, tiny_config_tree, write_corpus

pytest.importorskip("onnxruntime")

TOLERANCE = 1e-4
SIZES = {"emb_size": 16, "hidden_size": 24, "dropout": 0.0}
PER_ARCH = {"transformer": {"attention_heads": 2, "emb_size": 24}, "dtmt": {"attention_heads": 2},
            "luong": {"options": {"attention": "general"}}}


def exportable() -> list:
    from rnmt.models.registry import architectures

    return list(architectures())  # rnmt export takes every one (tests/integration/test_export_architectures.py)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    import rnmt

    root = tmp_path_factory.mktemp("parity")
    tree = tiny_config_tree(write_corpus(root, "train", 120), write_corpus(root, "dev", 10, offset=120))
    tree["train"].update(max_steps=2, validate_every=2)
    rnmt.train(tree, [], out=root / "run", log=lambda *_: None)
    return root


def _checkpoint(base, arch: str):
    import torch

    from rnmt.io.checkpoint_files import read_model_file
    from rnmt.models import build_model
    from rnmt.models.loading import load_model
    from rnmt.training.checkpoint import save_model

    ref = load_model(base / "run")
    model_cfg = dataclasses.replace(ref.config.model, arch=arch, **{**SIZES, **PER_ARCH.get(arch, {})})
    config = dataclasses.replace(ref.config, model=model_cfg)
    torch.manual_seed(7)
    model = build_model(model_cfg, ref.src_vocab.size, ref.tgt_vocab.size)
    for p in model.parameters():  # sharper distributions than the default init: fewer near-ties
        torch.nn.init.uniform_(p, -0.5, 0.5)
    path = base / f"{arch}.safetensors"
    save_model(path, model.eval(), config, read_model_file(ref.path).vocabs)
    return path


def lines() -> list:
    text = (SAMPLE / "test.es").read_text(encoding="utf-8").splitlines()
    return [text[0], text[3][:40], "", text[7], "Dios", text[11] + " " + text[12], text[20][:15]]


def assert_same_nbest(theirs, ours, where: str) -> None:
    assert len(theirs) == len(ours), where
    for k, (t, o) in enumerate(zip(theirs, ours)):
        assert abs(t.score - o.score) <= TOLERANCE, f"{where} hypothesis {k}: {t} != {o}"
        tied = {h.text for h in theirs if abs(h.score - t.score) <= TOLERANCE}
        assert o.text in tied, f"{where} hypothesis {k}: {o.text!r} not among {tied}"


@pytest.mark.parametrize("arch", exportable())
def test_runtime_nbest_equals_pytorch_search(base, tmp_path, arch):
    import rnmt
    import rnmt_runtime
    from rnmt.export.exporter import export

    checkpoint = _checkpoint(base, arch)
    export(checkpoint, tmp_path / "export")
    reference, runtime = rnmt.load(checkpoint), rnmt_runtime.load(tmp_path / "export")
    batch = lines()
    best = reference.translate(batch, beam=1)
    assert [r[0].text for r in runtime.translate(batch, rnmt_runtime.Options(beam=1))] == best
    for alpha in (0.6, 1.0):
        theirs = reference.translate(batch, beam=4, nbest=4, alpha=alpha)
        ours = runtime.translate(batch, rnmt_runtime.Options(beam=4, nbest=4, alpha=alpha))
        for i, (t, o) in enumerate(zip(theirs, ours)):
            assert_same_nbest(t, o, f"{arch} line {i} alpha {alpha}")
    assert any(len({h.text for h in t}) == 4 for t in theirs)  # the lists are real 4-best lists


def test_blocked_repeats_coverage_and_the_exports_defaults_equal_pytorch_search(base, tmp_path):
    """``no_repeat_ngram`` and ``coverage`` in the runtime give rnmt's lists, and an export
    whose search defaults set them applies them without being asked, as rnmt does with the
    checkpoint (an earlier runtime ignored both defaults)."""
    import json

    import rnmt
    import rnmt_runtime
    from rnmt.export.exporter import export

    checkpoint = _checkpoint(base, "rnnsearch")
    export(checkpoint, tmp_path / "export")
    reference, runtime = rnmt.load(checkpoint), rnmt_runtime.load(tmp_path / "export")
    batch = lines()
    for n, beta in ((1, 0.0), (2, 0.0), (0, 0.3), (2, 1.0)):
        theirs = reference.translate(batch, beam=4, nbest=4, no_repeat_ngram=n, coverage=beta)
        ours = runtime.translate(batch, rnmt_runtime.Options(beam=4, nbest=4, no_repeat_ngram=n, coverage=beta))
        for i, (t, o) in enumerate(zip(theirs, ours)):
            assert_same_nbest(t, o, f"no_repeat_ngram {n} coverage {beta} line {i}")
    assert reference.translate(batch, beam=4, no_repeat_ngram=1) != reference.translate(batch, beam=4)  # it blocks
    manifest = tmp_path / "export" / "manifest.json"
    recorded = json.loads(manifest.read_text(encoding="utf-8"))
    recorded["search_defaults"].update(no_repeat_ngram=1, coverage=1.0)
    manifest.write_text(json.dumps(recorded), encoding="utf-8")
    defaults = rnmt_runtime.load(tmp_path / "export")
    assert [r[0].text for r in defaults.translate(batch, rnmt_runtime.Options(beam=4))] == \
        reference.translate(batch, beam=4, no_repeat_ngram=1, coverage=1.0)


def test_batches_searched_side_by_side_give_the_same_lists(base, tmp_path):
    """`parallel_batches` only changes which thread searches a batch: with batches of a few
    source tokens, seven lines make several batches, and two at a time give the lists one at
    a time gives, in the order of the lines."""
    import rnmt_runtime
    from rnmt.export.exporter import export
    from rnmt_runtime.limits import token_batches

    export(_checkpoint(base, "rnnsearch"), tmp_path / "export")
    one, two = rnmt_runtime.load(tmp_path / "export"), rnmt_runtime.load(tmp_path / "export", parallel_batches=2)
    options = rnmt_runtime.Options(beam=3, nbest=3, batch_tokens=12)
    sources = [one.src_vocab.encode(line) for line in lines() if line.strip()]
    assert len(list(token_batches(sources, 12, None, one.model.eos_id, one.model.pad_id))) >= 3
    want, got = one.translate(lines(), options), two.translate(lines(), options)
    assert [[(h.text, h.score) for h in t] for t in got] == [[(h.text, h.score) for h in t] for t in want]


def test_a_batch_that_fails_starts_no_further_batch(base, tmp_path):
    """A search that stops (a server's deadline, Ctrl-C, an error) with batches side by side
    ends the call: the batches not yet started are dropped, not searched first."""
    import rnmt_runtime
    from rnmt.export.exporter import export
    from rnmt_runtime.search import SearchStopped

    export(_checkpoint(base, "rnnsearch"), tmp_path / "export")
    two = rnmt_runtime.load(tmp_path / "export", parallel_batches=2)
    searched = []

    def stopping(*args, **kwargs):
        searched.append(1)
        raise SearchStopped("stopped")

    two._search = stopping
    text = [line for line in lines() if line.strip()] * 4  # 24 lines: many batches of 12 source tokens
    with pytest.raises(SearchStopped):
        two.translate(text, rnmt_runtime.Options(beam=3, batch_tokens=12))
    assert 1 <= len(searched) <= 3


@pytest.fixture(scope="module")
def shortlist_file(base):
    """A lexical shortlist of the base run's vocabulary, from its training pairs."""
    from rnmt.models.loading import load_model
    from rnmt.search.shortlist import build_shortlist

    ref = load_model(base / "run")
    src = (base / "train.es").read_text(encoding="utf-8").splitlines()
    tgt = (base / "train.en").read_text(encoding="utf-8").splitlines()
    pairs = list(zip(ref.src_vocab.encode_batch(src), ref.tgt_vocab.encode_batch(tgt)))
    text, _ = build_shortlist(pairs, ref.src_vocab, ref.tgt_vocab, {}, iterations=3, keep=20, min_prob=0.0)
    path = base / "shortlist.json"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("arch", exportable())
def test_runtime_shortlist_equals_pytorch_shortlist(base, shortlist_file, tmp_path, arch):
    """The export's readout step and output layer, multiplied by a shortlist's rows in numpy,
    give rnmt's PyTorch shortlisted search: the same n-best lists, one batch of every line."""
    import rnmt
    import rnmt_runtime
    from rnmt.export.exporter import export

    checkpoint = _checkpoint(base, arch)
    export(checkpoint, tmp_path / "export", shortlists=True)
    reference, runtime = rnmt.load(checkpoint), rnmt_runtime.load(tmp_path / "export")
    batch = lines()
    for sizes in ((30, 5), (8, 2)):
        reference.use_shortlist(shortlist_file, *sizes)
        runtime.use_shortlist(shortlist_file, *sizes)
        theirs = reference.translate(batch, beam=3, nbest=3, batch_tokens=1000)
        ours = runtime.translate(batch, rnmt_runtime.Options(beam=3, nbest=3, batch_tokens=1000))
        for i, (t, o) in enumerate(zip(theirs, ours)):
            assert_same_nbest(t, o, f"{arch} line {i} sizes {sizes}")


def test_an_export_without_a_readout_step_refuses_a_shortlist(base, shortlist_file, tmp_path):
    import rnmt_runtime
    from rnmt.export.exporter import export
    from rnmt_runtime.errors import ExportError

    export(_checkpoint(base, "rnnsearch"), tmp_path / "export")  # without --shortlists
    assert not (tmp_path / "export" / "step_readout.onnx").exists()
    runtime = rnmt_runtime.load(tmp_path / "export")
    with pytest.raises(ExportError, match="export --shortlists"):
        runtime.use_shortlist(shortlist_file)


def test_an_output_layer_that_does_not_fit_is_one_line(base, shortlist_file, tmp_path):
    """A crafted export whose output layer has the wrong number of rows, or of columns for
    the readout step, is refused with an `ExportError`, not a numpy traceback."""
    import json

    import numpy as np

    import rnmt_runtime
    from rnmt.export.exporter import export
    from rnmt_runtime.errors import ExportError
    from rnmt_runtime.manifest import file_sha256

    export(_checkpoint(base, "rnnsearch"), tmp_path / "export", shortlists=True)
    directory = tmp_path / "export"
    weight, bias = np.load(directory / "output_weight.npy"), np.load(directory / "output_bias.npy")

    def replaced(**arrays):
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        for key, array in arrays.items():
            np.save(directory / f"output_{key}.npy", np.ascontiguousarray(array), allow_pickle=False)
            manifest["files"][f"output_{key}.npy"] = file_sha256(directory / f"output_{key}.npy")
        (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        return rnmt_runtime.load(directory)

    with pytest.raises(ExportError, match="must be fp32 \\[V, d\\] with a bias \\[V\\]"):
        replaced(weight=weight[:-1]).use_shortlist(shortlist_file)
    with pytest.raises(ExportError, match="rows for a target vocabulary"):
        replaced(weight=weight[:-1], bias=bias[:-1]).use_shortlist(shortlist_file)
    runtime = replaced(weight=weight[:, :-1], bias=bias)
    runtime.use_shortlist(shortlist_file)
    with pytest.raises(ExportError, match="do not belong together"):
        runtime.translate(lines(), rnmt_runtime.Options(beam=2))
