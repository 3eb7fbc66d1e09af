"""Every paper config trains through the same `Trainer` (what `rnmt train` runs) at a tiny
size, given only `--set`-style overrides of its dimensions and schedule."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rnmt.config import load_config
from rnmt.data.vocab import train_vocabs
from rnmt.training.trainer import Trainer
from tests.support import REPO

PAPER_CONFIGS = sorted((REPO / "configs" / "papers").glob("*/*.yaml"))


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory):
    """The 40 shortest pairs of the bundled sample corpus and a small joint vocabulary (short
    sentences keep Cseq2seq's O(source x target) sequential steps cheap)."""
    root = tmp_path_factory.mktemp("smoke")
    sample = REPO / "data" / "sample"
    src, tgt = ((sample / f"train.{side}").read_text(encoding="utf-8").splitlines() for side in ("es", "en"))
    pairs = sorted(zip(src, tgt), key=lambda p: len(p[0].split()) + len(p[1].split()))[:40]
    for side, lines in (("es", [p[0] for p in pairs]), ("en", [p[1] for p in pairs])):
        (root / f"train.{side}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    train_vocabs(root / "train.es", root / "train.en", root / "vocab", src_size=120)
    return root


def _overrides(corpus: Path, arch: str) -> list:
    sets = [
        f"data.train={corpus / 'train'}", "data.dev=null", "data.test=null", "data.batch_tokens=120", "data.max_len=24",
        f"data.vocab.model={corpus / 'vocab' / 'spm.model'}", f"data.cache_dir={corpus / 'cache'}",
        "model.emb_size=16", "model.hidden_size=16",
        "train.max_steps=2", "train.log_every=1", "train.progress=false", "train.device=cpu",
        "train.warmup_steps=1", "train.keep_last=1", "train.threads=1",
    ]
    if arch == "transformer":
        sets.append("model.options.ffn_size=32")
    return sets


@pytest.mark.parametrize("amp", ["auto", "bf16"])
@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_paper_config_trains_a_few_steps(path, amp, tiny_corpus, tmp_path):
    """In full precision (train.amp auto on the CPU) and under bf16 autocast, what CUDA runs
    by default: products in bf16, layer norms and the loss in fp32. Units must accept the
    mixed dtypes this gives (e.g. a bf16 state beside an fp32 layer-normalised candidate)."""
    cfg = load_config(path)
    cfg = load_config(path, _overrides(tiny_corpus, cfg.model.arch) + [f"train.amp={amp}"])
    summary = Trainer(cfg, tmp_path / "run", log=lambda *_: None).run()
    assert summary["steps"] == 2
    assert math.isfinite(summary["loss"])
    assert (tmp_path / "run" / "train_state.pt").exists()
