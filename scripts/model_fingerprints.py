"""Fingerprints of every paper config's model, to show that a refactoring changed nothing.

    python scripts/model_fingerprints.py write OUT.json     # at one commit
    python scripts/model_fingerprints.py compare A.json B.json

Each config is built at a tiny size from a fixed seed and run once in training mode with
dropout (so the order of random draws counts), backward, then in eval mode and for two
decoding steps; the fingerprint is a hash of the logits and log-probabilities plus the sum
of squared gradients and a hash of the parameter names. Two commits whose fingerprints are
equal build the same models, draw the same dropout masks and load each other's checkpoints.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
TINY = ["model.emb_size=8", "model.hidden_size=12", "model.dropout=0.3", "model.rnn_dropout=0.2"]


def fingerprint(path: Path) -> dict:
    from rnmt.config import load_config
    from rnmt.models import build_model
    from rnmt.models.base import uniform_init_

    cfg = load_config(path, TINY)
    if cfg.model.arch == "transformer":
        cfg.model.rnn_dropout = 0.0
        cfg.model.emb_size = cfg.model.hidden_size
        cfg.model.options["ffn_size"] = 16
    cfg.model.attention_heads = min(cfg.model.attention_heads, 4)
    torch.manual_seed(0)
    model = build_model(cfg.model, 23, 23 if cfg.model.options.get("tie_all_embeddings") else 19)
    uniform_init_(model, 0.3)
    src = torch.tensor([[4, 5, 6, 7, 3], [8, 9, 10, 3, 0], [11, 12, 3, 0, 0]])
    mask = src != 0
    tgt_in = torch.tensor([[2, 4, 5, 6], [2, 7, 8, 0], [2, 9, 0, 0]])
    model.train()
    torch.manual_seed(1)
    logits = model(src, mask, tgt_in)
    loss = torch.log_softmax(logits.float(), -1).sum()
    loss.backward()
    grads = sum(p.grad.double().pow(2).sum().item() for p in model.parameters() if p.grad is not None)
    model.eval()
    with torch.no_grad():
        teacher = model(src, mask, tgt_in)
        memory = model.encode(src, mask)
        state = model.init_state(memory)
        first, state, _ = model.step(torch.full((3,), 2), state, memory)
        second, _, _ = model.step(first.argmax(-1), state, memory)
    digest = hashlib.sha256()
    for t in (logits.detach(), teacher, first, second):
        digest.update(t.float().contiguous().numpy().tobytes())
    names = hashlib.sha256(" ".join(sorted(model.state_dict())).encode()).hexdigest()[:12]
    return {"outputs": digest.hexdigest(), "loss": loss.item(), "grads": grads, "parameter_names": names}


def main(argv: list) -> int:
    torch.set_num_threads(1)
    if argv[:1] == ["write"] and len(argv) == 2:
        from rnmt.errors import UserError

        prints = {}
        for path in sorted((ROOT / "configs" / "papers").glob("*/*.yaml")):
            try:
                prints[f"{path.parent.name}/{path.stem}"] = fingerprint(path)
            except UserError as exc:  # a config this commit cannot build
                prints[f"{path.parent.name}/{path.stem}"] = {"error": str(exc)}
        Path(argv[1]).write_text(json.dumps(prints, indent=1) + "\n", encoding="utf-8")
        print(f"{len(prints)} configs")
        return 0
    if argv[:1] == ["compare"] and len(argv) == 3:
        a, b = (json.loads(Path(f).read_text(encoding="utf-8")) for f in argv[1:])
        differ = [k for k in a if k in b and a[k] != b[k] and "error" not in a[k] and "error" not in b[k]]
        for k in differ:
            print(f"differs: {k}")
        both = [k for k in a if k in b and "error" not in a[k] and "error" not in b[k]]
        print(f"{len(both) - len(differ)} of {len(both)} configs built by both identical "
              f"({len(set(b) - set(a))} only in the second)")
        return 1 if differ else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
