"""Source encoders that an attentional recurrent decoder can read in place of its own.

The survey's section 3.1 (Chen et al. 2018; Domhan 2018) combines the encoder of one
family with the decoder of another: a self-attentional Transformer encoder under a
recurrent decoder keeps most of the Transformer's quality. ``model.encoder: transformer``
gives RNNSearch or DTMT such an encoder: ``enc_layers`` layers of ``attention_heads`` heads
over scaled embeddings plus sinusoidal positions (Vaswani et al. 2017), width ``emb_size``;
its top layer's states are the annotations the decoder's attention and initial state read.
``encoder_norm``: ``post`` (the paper's LN(x + Sublayer(x))) or ``pre`` (x + Sublayer(LN(x))
and a final LN, the form of tensor2tensor and Sockeye, whose encoders Chen et al. and Domhan
built their hybrids from). A deep post-norm stack needs a long warm-up: on a reversal task,
six post-norm layers did not learn in 300 updates at lr 2e-3 where one layer did.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor, nn

from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.modules.embedding import Embedding, positional_encoding

ENCODERS = ("recurrent", "transformer")
ENCODER_NORMS = ("post", "pre")


class TransformerEncoder(nn.Module):
    """Token ids [B, S] -> annotations [B, S, d] (zero at padding), d = ``emb_size``."""

    def __init__(self, cfg: ModelConfig, src_vocab: int, pad_id: int, ffn_size: Optional[int] = None) -> None:
        super().__init__()
        from rnmt.models.transformer import EncoderLayer  # the Transformer's own layers

        d, heads = cfg.emb_size, cfg.attention_heads
        if d % heads:
            raise UserError(f"model.encoder transformer: {heads} attention heads do not divide emb_size {d}")
        self.output_size = d
        self.embed = Embedding(src_vocab, d, zero_index=pad_id)
        self.layers = nn.ModuleList(EncoderLayer(d, heads, ffn_size or 4 * d, cfg.dropout)
                                    for _ in range(cfg.enc_layers))
        self.dropout = nn.Dropout(cfg.dropout)
        if cfg.encoder_norm not in ENCODER_NORMS:
            raise UserError(f"model.encoder_norm must be one of {', '.join(ENCODER_NORMS)}, got {cfg.encoder_norm!r}")
        self.final_norm = nn.LayerNorm(d) if cfg.encoder_norm == "pre" else None

    def forward(self, src: Tensor, src_mask: Tensor) -> Tensor:
        from rnmt.models.transformer import encoder_stack, padding_bias

        positions = torch.arange(src.size(1), device=src.device).expand_as(src)
        x = self.embed(src) * math.sqrt(self.output_size)
        x = self.dropout(x + positional_encoding(positions, self.output_size).to(x.dtype))
        x = encoder_stack(self.layers, x, padding_bias(src_mask, x.dtype), self.dropout, self.final_norm is not None)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x * src_mask.unsqueeze(-1).to(x.dtype)


def source_encoder(cfg: ModelConfig, src_vocab: int, pad_id: int) -> Optional[TransformerEncoder]:
    """The encoder ``model.encoder`` asks for, or None for the architecture's own."""
    if cfg.encoder not in ENCODERS:
        raise UserError(f"model.encoder must be one of {', '.join(ENCODERS)}, got {cfg.encoder!r}")
    if cfg.encoder == "recurrent":
        return None
    return TransformerEncoder(cfg, src_vocab, pad_id)


def check_recurrent_encoder_keys(cfg: ModelConfig, arch: str, own: tuple = ()) -> None:
    """With its own recurrent encoder an architecture does not read the Transformer
    encoder's keys (unless it reads them itself, ``own``)."""
    if cfg.encoder == "recurrent":
        defaults = ModelConfig()
        for key in ("enc_layers", "attention_heads", "encoder_norm"):
            if key not in own and getattr(cfg, key) != getattr(defaults, key):
                raise UserError(f"model.{key} is read by arch '{arch}' only with model.encoder: transformer")
