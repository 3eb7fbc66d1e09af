"""`rnmt reproduce --jobs 2`: runs side by side in their own processes give the records of one."""

from __future__ import annotations

import json

from rnmt.reproduce import reproduce_paper
from tests.support import MessageLog, tiny_reproduction_corpus, tiny_reproduction_settings


def test_side_by_side_jobs_give_the_records_of_one_process(tmp_path):
    """--jobs 2: each run in its own process, same records (and losses) as one after the other."""
    corpus = tiny_reproduction_corpus(tmp_path)
    one = reproduce_paper("cseq2seq", tiny_reproduction_settings(seeds=[1]), tmp_path / "one", str(corpus),
                          systems=["seq2seq"], log=MessageLog())
    log = MessageLog()
    two = reproduce_paper("cseq2seq", tiny_reproduction_settings(seeds=[1], jobs=2), tmp_path / "two", str(corpus),
                          systems=["seq2seq"], log=log)
    assert sum("started in its own process" in m for m in log) == 2
    assert (tmp_path / "two" / "cseq2seq" / "runs" / "seq2seq.log").is_file()
    for name in ("seq2seq", "rnnsearch"):
        a, b = one["systems"][name][0], two["systems"][name][0]
        assert (a["test_bleu"], a["steps"]) == (b["test_bleu"], b["steps"])
        one_losses, two_losses = ([json.loads(line).get("loss") for line in
                                   (tmp_path / d / "cseq2seq" / "runs" / name / "log.jsonl").read_text().splitlines()]
                                  for d in ("one", "two"))
        assert one_losses == two_losses and any(loss is not None for loss in one_losses)
    record = json.loads((tmp_path / "two" / "cseq2seq" / "rnnsearch.json").read_text())
    assert record["machine"]["jobs"] == 2
