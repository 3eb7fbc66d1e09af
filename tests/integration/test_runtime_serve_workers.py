"""The runtime's server (`rnmt serve --model EXPORT_DIR`) with ``--threads N``: N batches
translated at once, one onnxruntime thread each; every request gets the answer it gets
from a server translating one batch at a time."""

from __future__ import annotations

import threading

import pytest

from tests.support import GENESIS_LINES, tiny_config_tree, write_corpus

pytest.importorskip("onnxruntime")
pytest.importorskip("fastapi")


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    import rnmt
    from rnmt.export.exporter import export

    root = tmp_path_factory.mktemp("workers")
    tree = tiny_config_tree(write_corpus(root, "train", 120), write_corpus(root, "dev", 6, offset=5000))
    rnmt.train(tree, ["train.max_steps=4", "train.validate_every=4"], out=root / "run", log=lambda *_: None)
    export(root / "run", root / "export")
    return root / "export"


def answers(export_dir, workers: int, bodies):
    from fastapi.testclient import TestClient

    from rnmt_runtime.serving.runtime import create_runtime_app
    from rnmt_runtime.serving.settings import ServeSettings
    from rnmt_runtime.translator import Translator

    app = create_runtime_app(Translator(export_dir, threads=1), ServeSettings(max_wait_ms=20).check(), workers)
    out: dict = {}
    with TestClient(app) as client:
        def post(k, body):
            out[k] = client.post("/translate", json=body).json()

        threads = [threading.Thread(target=post, args=(k, b)) for k, b in enumerate(bodies)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        stats = client.get("/health").json()
        assert app.state.batcher.workers == workers
    return [out[k] for k in range(len(bodies))], stats


def test_several_batches_at_once_answer_as_one_at_a_time(export_dir):
    lines = [line for line in GENESIS_LINES if line] * 6
    bodies = [{"texts": lines[k:k + 3], "beam": 1 + k % 3} for k in range(0, len(lines), 3)]
    one, _ = answers(export_dir, 1, bodies)
    two, stats = answers(export_dir, 2, bodies)
    for a, b in zip(one, two):
        assert [t["text"] for t in a["translations"]] == [t["text"] for t in b["translations"]]
        for x, y in zip(a["translations"], b["translations"]):
            assert abs(x["score"] - y["score"]) < 1e-4
    assert stats["status"] == "ok"


def test_a_request_blocking_repeats_gets_what_the_runtime_translates(export_dir):
    """``no_repeat_ngram`` reaches the runtime's search through the server, as through rnmt serve."""
    import rnmt_runtime

    lines = [line for line in GENESIS_LINES if line][:4]
    (blocked, plain), _ = answers(export_dir, 1, [{"texts": lines, "beam": 3, "no_repeat_ngram": 1},
                                                  {"texts": lines, "beam": 3}])
    translator = rnmt_runtime.load(export_dir)
    want = translator.translate(lines, rnmt_runtime.Options(beam=3, no_repeat_ngram=1))
    assert [t["text"] for t in blocked["translations"]] == [r[0].text for r in want]
    assert [t["text"] for t in blocked["translations"]] != [t["text"] for t in plain["translations"]]


def test_a_request_with_a_coverage_penalty_gets_what_the_runtime_translates(export_dir):
    import rnmt_runtime

    lines = [line for line in GENESIS_LINES if line][:4]
    (covered,), _ = answers(export_dir, 1, [{"texts": lines, "beam": 3, "nbest": 3, "coverage": 1.0}])
    want = rnmt_runtime.load(export_dir).translate(lines, rnmt_runtime.Options(beam=3, nbest=3, coverage=1.0))
    for got, hyps in zip(covered["translations"], want):
        assert [h["text"] for h in got["nbest"]] == [h.text for h in hyps]
        assert all(abs(h["score"] - w.score) < 1e-4 for h, w in zip(got["nbest"], hyps))
