"""`rnmt reproduce --jobs 2`: runs side by side in their own processes give the records of one."""

from __future__ import annotations

import json
from pathlib import Path

from rnmt.reproduce import Settings, reproduce_paper
from rnmt.reproduce.spec import repository_root

SAMPLE = repository_root() / "data" / "sample"


def _tiny_corpus(root: Path, name: str = "tiny-es-en", test: bool = True) -> Path:
    """The shortest verses of the sample: fast to train on and to decode."""
    directory = root / name
    directory.mkdir(parents=True)
    splits = {"train": 120, "dev": 8}
    if test:
        splits["test"] = 10
    for split, n in splits.items():
        src = (SAMPLE / f"{split}.es").read_text(encoding="utf-8").splitlines()
        tgt = (SAMPLE / f"{split}.en").read_text(encoding="utf-8").splitlines()
        pairs = sorted(zip(src, tgt), key=lambda p: len(p[0].split()))[:n]
        for lang, lines in (("es", [p[0] for p in pairs]), ("en", [p[1] for p in pairs])):
            (directory / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def _settings(**changes) -> Settings:
    values = dict(updates=3, emb_size=8, hidden_size=16, vocab_size=120, dev_sentences=4,
                  validate_every=2, log_every=1, seeds=[1, 2], threads=1, device="cpu", bootstrap=20)
    values.update(changes)
    return Settings(**values)


class Log(list):
    def __call__(self, msg: str) -> None:
        self.append(msg)


def test_side_by_side_jobs_give_the_records_of_one_process(tmp_path):
    """--jobs 2: each run in its own process, same records (and losses) as one after the other."""
    corpus = _tiny_corpus(tmp_path)
    one = reproduce_paper("cseq2seq", _settings(seeds=[1]), tmp_path / "one", str(corpus),
                          systems=["seq2seq"], log=Log())
    log = Log()
    two = reproduce_paper("cseq2seq", _settings(seeds=[1], jobs=2), tmp_path / "two", str(corpus),
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
