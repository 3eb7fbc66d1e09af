"""Study. Question: Why do the survey's hybrids (a Transformer encoder under a recurrent decoder) not learn to
read their source at the reproductions' learning rate?
Measured at: cbbca0f.
Answer: the six-layer post-norm stack: on a reversal task it ends at loss 1.417 where one post-norm
layer reaches 0.227, six pre-norm layers 0.357 and the recurrent encoder 0.242; the hybrid
configs use pre-norm (`model.encoder_norm`; docs/models.md, "Hybrids: a Transformer encoder under a recurrent
decoder").

Does a model learn to read its source? A reversal task for the hybrids' encoders.

Each model learns to write a random sequence of 10-29 tokens (vocabulary 20) backwards,
300 Adam updates of 32 sentences at the reproductions' family recipe (lr 2e-3, U(±0.15),
clipping 5), and prints its final training loss (ln 20 = 3.0 is knowing nothing about the
source). It compares RNNSearch's own recurrent encoder with Transformer encoders of 1 and 6
post-norm layers and 6 pre-norm layers, at width 64:

    python -m benchmarks.studies.encoder_depth [--steps 300] [--width 64]

It is the measurement behind ``model.encoder_norm`` (docs/models.md, "Hybrids"): a deep
post-norm stack does not learn at this learning rate without a long warm-up.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt.models.base import uniform_init_

VOCAB, BATCH = 24, 32  # ids 0-3 are reserved (padding, unknown, BOS, EOS)


def reversal_batch(g: torch.Generator, bos: int, eos: int, pad: int):
    lengths = torch.randint(10, 30, (BATCH,), generator=g)
    width = int(lengths.max())
    src = torch.full((BATCH, width), pad, dtype=torch.long)
    tgt_in = torch.full((BATCH, width + 1), pad, dtype=torch.long)
    tgt_out = torch.full((BATCH, width + 1), pad, dtype=torch.long)
    tgt_in[:, 0] = bos
    for b, n in enumerate(lengths.tolist()):
        seq = torch.randint(4, VOCAB, (n,), generator=g)
        src[b, :n] = seq
        tgt_in[b, 1:n + 1] = seq.flip(0)
        tgt_out[b, :n] = seq.flip(0)
        tgt_out[b, n] = eos
    return src, src.ne(pad), tgt_in, tgt_out


def final_loss(cfg: ModelConfig, steps: int) -> float:
    torch.manual_seed(0)
    model = build_model(cfg, VOCAB, VOCAB)
    uniform_init_(model, 0.15)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(1)
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        src, mask, tgt_in, tgt_out = reversal_batch(g, model.bos_id, model.eos_id, model.pad_id)
        logits = model(src, mask, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt_out.reshape(-1), ignore_index=model.pad_id)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
    return float(loss.detach())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = dict(arch="rnnsearch", emb_size=args.width, hidden_size=args.width, dropout=0.0)
    variants = [
        ("recurrent encoder (bi-GRU)", ModelConfig(**base)),
        ("Transformer encoder, 1 post-norm layer", ModelConfig(**base, encoder="transformer", enc_layers=1,
                                                                attention_heads=4)),
        ("Transformer encoder, 6 post-norm layers", ModelConfig(**base, encoder="transformer", enc_layers=6,
                                                                 attention_heads=4)),
        ("Transformer encoder, 6 pre-norm layers", ModelConfig(**base, encoder="transformer", enc_layers=6,
                                                                attention_heads=4, encoder_norm="pre")),
    ]
    print(f"reversal, {args.steps} updates, width {args.width}: final training loss (ln 20 = 3.00 knows nothing)")
    for name, cfg in variants:
        print(f"  {name:42s} {final_loss(cfg, args.steps):.3f}", flush=True)


if __name__ == "__main__":
    main()
