"""Every architecture and unit exported at tiny sizes, with onnxruntime's largest difference
from PyTorch per graph: the table of docs/deploy.md, and the cases its test checks.

    python -m rnmt.export.survey          # prints the table (Markdown)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import torch

from rnmt import cells
from rnmt.config import load_config
from rnmt.models.base import TranslationModel, uniform_init_
from rnmt.models.registry import build_model

SRC_V, TGT_V = 23, 19
TINY = ("model.emb_size=8", "model.hidden_size=12", "model.dropout=0.0", "model.rnn_dropout=0.0")
PAPERS = Path(__file__).resolve().parents[2] / "configs" / "papers"

# (paper config under configs/papers, overrides): one per architecture and variant whose
# graphs differ (encoders, attentions, re-reading contexts, deep transitions, hybrids)
CASES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    *(("cseq2seq/rnnsearch.yaml", (f"model.cell={unit}",)) for unit in cells.registered_names()),
    ("atr/rnnsearch-atr.yaml", ()),
    ("atr/rnnsearch-atr-ca.yaml", ()),
    ("atr/gnmt-atr.yaml", ()),
    ("cseq2seq/rnnsearch-minus.yaml", ()),
    ("cseq2seq/seq2seq.yaml", ()),
    ("cseq2seq/cseq2seq1-mp.yaml", ()),
    ("cseq2seq/cseq2seq1-ls.yaml", ()),
    ("cseq2seq/cseq2seq2.yaml", ()),
    ("cseq2seq/cseq2seq2-sgru-sword.yaml", ()),
    ("survey/seq2seq-sutskever.yaml", ()),
    ("survey/luong-dot.yaml", ()),
    ("survey/luong-concat.yaml", ()),
    ("survey/luong-local-p.yaml", ()),
    ("dtmt/dtmt4.yaml", ()),
    ("dtmt/dtmt1-lau.yaml", ()),
    ("dtmt/shallow-rnmt.yaml", ()),
    ("survey/hybrid-transformer-rnnsearch.yaml", ()),
    ("survey/hybrid-transformer-dtmt.yaml", ()),
    ("survey/transformer-base.yaml", ()),
)


def case_id(case: Tuple[str, Sequence[str]]) -> str:
    path, overrides = case
    return path.removesuffix(".yaml") + "".join(f"[{o.split('=')[1]}]" for o in overrides)


def tiny_model(path: str, overrides: Sequence[str] = ()) -> TranslationModel:
    """The paper config's model at tiny sizes, plain PyTorch, uniformly initialised, eval mode."""
    cfg = load_config(PAPERS / path, [*TINY, *overrides])
    cfg.model.attention_heads = min(cfg.model.attention_heads, 4)
    if cfg.model.arch == "transformer":  # d_model = E, a small FFN
        cfg.model.emb_size = cfg.model.hidden_size
        cfg.model.options["ffn_size"] = 16
    torch.manual_seed(0)
    model = build_model(cfg.model, SRC_V, SRC_V if cfg.model.options.get("tie_all_embeddings") else TGT_V,
                        accelerated=False)
    uniform_init_(model, 0.3)
    return model.eval()


def measure(case: Tuple[str, Sequence[str]], directory: Path) -> Dict[str, Any]:
    """Export ``case`` into ``directory`` and compare: the row of the table."""
    from rnmt.export.parity import max_differences
    from rnmt.export.writing import write_graphs

    model = tiny_model(*case)
    start = time.perf_counter()
    sig = write_graphs(model, directory, SRC_V, TGT_V, opset=17)
    seconds = time.perf_counter() - start
    worst = max_differences(model, sig, directory, SRC_V, TGT_V)
    return {"case": case_id(case), "arch": type(model).__name__, "state": list(sig.state),
            "beam_shares_memory": sig.beam_shares_memory, "seconds": seconds, **worst}


def main(argv: List[str]) -> int:
    print("| config | model | state | shared memory | encoder | init | step | export s |")
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            row = measure(case, Path(tmp))
        print(f"| {row['case']} | {row['arch']} | {', '.join(row['state'])} | {row['beam_shares_memory']} | "
              f"{row['encoder']:.1e} | {row['init']:.1e} | {row['step']:.1e} | {row['seconds']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
