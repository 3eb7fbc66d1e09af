"""DTMT: deep transition RNN-based NMT (Meng & Zhang 2019), and its ShallowRNMT baseline.

Three transition modules, each a bottom unit (L-GRU in DTMT; GRU or LAU in Table 3's
variants) followed by L T-GRUs at every time step (``cells.build("transition", ...)``);
depth 0 is the bare bottom unit, which is ShallowRNMT's (GRU) and what Table 4's
ablations put back in place of one module.

Encoder ("Encoder"): x_j = E x_j + b_emb + PE(j)/sqrt(E) (dropout); a bidirectional layer of
encoder transitions of depth L_s; C = {[->h_j,Ls; <-h_j,Ls]} (2d per position).

Decoder ("Decoder"), one step t, with y_{t-1} embedded like the source (PE of the target
position) and the zero vector at t = 1:

    s_{t,0}   = L-GRU(y_{t-1}, s_{t-1})       s_{t,k} = T-GRU(s_{t,k-1}), k <= L_q   query transition
    c_t       = Multihead-Attention(C, s_{t,Lq})                                     (`MultiHeadAdditiveAttention`)
    s_{t,Lq+1} = L-GRU(c_t, s_{t,Lq})          then L_d T-GRUs                        decoder transition
    o_t = tanh(W_r [y_{t-1}; s_t; c_t] + b_r),  p(y_t) = softmax(W_V o_t + b_V)      eq. (1), readout

s_0 = tanh(W_s mean_j(C_j) + b_s). The decoder transition reads the 2d context as in the
paper's equations (SPEC A7, the count that reproduces Table 3); ``options.context_projection:
true`` adds the released code's projection of c_t to d. "Advanced techniques": per-gate
layer normalisation (``layer_norm``), dropout on embeddings and o_t (``dropout``) and on
every candidate activation (``rnn_dropout``), label smoothing (``train.label_smoothing``)
and the scaled positional encoding (``options.positional_encoding``, Table 6's switch).

Per-module units: ``enc_cell``, ``options.query_cell``, ``dec_cell`` (default ``cell``) and
depths ``options.enc_depth``, ``options.query_depth``, ``options.dec_depth``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Optional

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.config import DEPTH, ModelConfig, Range
from rnmt.errors import UserError
from rnmt.models.base import ConditionalDecoderModel, TensorDict, masked_mean
from rnmt.models.encoders import check_recurrent_encoder_keys, source_encoder
from rnmt.models.options import UNIT_KEYS
from rnmt.models.registry import register
from rnmt.models.units import build_cell, decoder_unit, encoder_unit
from rnmt.modules.embedding import Embedding, positional_encoding
from rnmt.modules.multihead import MultiHeadAdditiveAttention


def transition_module(cfg: ModelConfig, bottom: str, depth: int, input_size: int,
                      carry_bias: float = 0.0) -> cells.Cell:
    """A bottom unit followed by ``depth`` T-GRUs (the bare unit when depth is 0)."""
    if depth == 0:
        return build_cell(cfg, bottom, input_size, cfg.hidden_size)
    extra = {"carry_bias": carry_bias} if carry_bias else {}  # the paper's model builds as before
    return cells.build("transition", input_size, cfg.hidden_size, layer_norm=cfg.layer_norm,
                       dropout=cfg.rnn_dropout, bottom=bottom, depth=depth, **extra)


CARRY_BIAS = Range(0, 10)  # 10 already starts z at 5e-5: more is a stray digit


@dataclass(frozen=True)
class DTMTOptions:
    enc_depth: Annotated[int, DEPTH] = 0  # T-GRUs after the bottom unit in the encoder transition
    query_depth: Annotated[int, DEPTH] = 0  # ... in the query transition
    dec_depth: Annotated[int, DEPTH] = 0  # ... in the decoder transition
    positional_encoding: bool = False  # PE(j)/sqrt(E) added to the embeddings (Table 6)
    query_cell: Optional[str] = None  # the query transition's bottom unit (default model.cell)
    context_projection: bool = False  # the released code's projection of c_t to d
    per_head_v: bool = False  # one scoring vector per attention head
    # Not in the paper: every T-GRU's update gate z (eq. 13) starts from LN offset -carry_bias
    # rather than 0, so a deep transition starts closer to carrying its state (z = 0.12 at
    # 2.0 against 0.5). At initialisation four T-GRUs at z = 0.5 pass about 1/16 of the
    # linear path; the remedy docs/results.md measures for DTMT#4's slow start. Needs
    # model.layer_norm.
    carry_bias: Annotated[float, CARRY_BIAS] = 0.0


@register("dtmt", options=DTMTOptions,
          reads=(*UNIT_KEYS, "attention_heads", "encoder", "enc_layers", "encoder_norm"))
class DTMT(ConditionalDecoderModel):
    beam_shares_memory = True  # the step reads the memory only through its attention

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: DTMTOptions) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        enc_cell, query_cell, dec_cell = encoder_unit(cfg), options.query_cell or cfg.cell, decoder_unit(cfg)
        self.positional = options.positional_encoding
        self.pe_scale = 1.0 / math.sqrt(E)  # the paper's 1/sqrt(d_k) scaling
        check_recurrent_encoder_keys(cfg, "dtmt", own=("attention_heads",))
        if options.carry_bias and not cfg.layer_norm:
            raise UserError("model.options.carry_bias offsets the T-GRUs' layer-normalised update gates: it needs "
                            "model.layer_norm: true")
        if cfg.encoder == "transformer" and options.enc_depth:
            raise UserError("model.options.enc_depth is the recurrent encoder's: leave it 0 with "
                            "model.encoder: transformer")
        self.source = source_encoder(cfg, src_vocab, self.pad_id)  # a hybrid's Transformer encoder
        if self.source is None:  # (creation order kept: the initialisation draws in it)
            self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id, bias=True)
        self.tgt_embed = Embedding(tgt_vocab, E, zero_index=self.bos_id, bias=True)
        if self.source is None:
            directions = [transition_module(cfg, enc_cell, options.enc_depth, E, options.carry_bias) for _ in "fb"]
            self.encoder = cells.Bidirectional(*directions)
        ann = self.encoder.hidden_size if self.source is None else self.source.output_size
        self.query_transition = transition_module(cfg, query_cell, options.query_depth, E, options.carry_bias)
        ctx = d if options.context_projection else ann
        self.attention = MultiHeadAdditiveAttention(d, ann, d, cfg.attention_heads,
                                                    per_head_v=options.per_head_v,
                                                    output_size=ctx if ctx != ann else None)
        self.decoder_transition = transition_module(cfg, dec_cell, options.dec_depth, ctx, options.carry_bias)
        self.init_layer = nn.Linear(ann, self.query_transition.state_size)  # W_s, b_s
        self.readout = nn.Linear(E + d + ctx, d)  # W_r, b_r
        self.output = nn.Linear(d, tgt_vocab)  # W_V, b_V
        if cfg.tie_target_embeddings:
            self.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def _embed(self, table: Embedding, tokens: Tensor, positions: Tensor) -> Tensor:
        emb = table(tokens)
        if self.positional:
            emb = emb + (positional_encoding(positions, emb.size(-1)) * self.pe_scale).to(emb.dtype)
            if table.padding_idx is not None:
                emb = emb.masked_fill((tokens == table.padding_idx).unsqueeze(-1), 0.0)
        return self.dropout(emb)

    def encoder_inputs(self, src: Tensor) -> Tensor:
        return self._embed(self.src_embed, src, torch.arange(src.size(1), device=src.device).expand_as(src))

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        if self.source is not None:
            annotations = self.source(src, src_mask)
        else:
            annotations = self.encoder(self.encoder_inputs(src), src_mask).outputs
        return {"annotations": annotations, "keys": self.attention.precompute(annotations),
                "values": self.attention.head_major(annotations), "src_mask": src_mask}

    def init_state(self, memory: TensorDict) -> TensorDict:
        mean = masked_mean(memory["annotations"], memory["src_mask"])
        s0 = torch.tanh(self.init_layer(mean))
        return {"s": s0, "position": torch.zeros(s0.size(0), dtype=torch.long, device=s0.device)}

    # The conditional decoder of the base: Unit_1 is the query transition, Unit_2 the
    # decoder transition, the context the multi-head attention.
    @property
    def first_unit(self) -> cells.Cell:
        return self.query_transition

    @property
    def second_unit(self) -> cells.Cell:
        return self.decoder_transition

    def target_inputs(self, tokens: Tensor, positions: Tensor) -> TensorDict:
        # y_{t-1} sits at target position t-2: the shifted-in zero vector takes position -1.
        emb = self._embed(self.tgt_embed, tokens, (positions - 1).clamp_min(0))
        return {"emb": emb, "px1": self.query_transition.project_inputs(emb)}

    def context(self, query: Tensor, state: TensorDict, memory: TensorDict):
        context, alpha = self.attention(query, memory["keys"], memory["values"], memory["src_mask"])
        return context, {"attention": alpha}

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        """o_t = tanh(W_r [y_{t-1}; s_t; c_t] + b_r), logits W_V o_t + b_V (eq. 1)."""
        o = torch.tanh(self.readout(torch.cat([inputs["emb"], outputs["s"], outputs["context"]], -1)))
        return self.output(self.dropout(o))
