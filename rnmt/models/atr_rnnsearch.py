"""RNNSearch as built for the ATR paper (Zhang et al. 2018, appendix A.1; SPEC A5, A6, B2).

Encoder (eq. 11): h_i = [->h_i; <-h_i] from a bidirectional layer of any unit over the
embeddings E x_i + b_emb. Decoder (eq. 12-13), one step j:

    s~_j = Unit_1(s_{j-1}, E y_{j-1})                                      (13)
    e_ji = v^T tanh(W_q s~_j + b_q + U_a m_i) + b_v,  alpha_j = softmax(e_j)
    c_j  = sum_i alpha_ji m_i,    m_i = tanh(h_i)  (the paper's {tanh(h_i)})
    s_j  = Unit_2(s~_j, c_j)                                               (13)
    o_j  = tanh(W_o [tanh(s_j); c_j; E y_{j-1}] + b_o)                      (12)
    p(y_j | y_<j, x) = softmax(o_j E_y^T)      (output matrix tied to E_y, no bias)

with s_0 = tanh(W_0 [->h_n; <-h_1] + b_0), the encoder's final states (for an LSTM this
produces both h and c). ATR states are unbounded, hence the paper's tanh(h_i) and
tanh(s_j); ``options.tanh_states: false`` gives the authors' code form (raw states), and
the GRU/LSTM/RAN rows of Table 4 use it (their states are bounded or were reported so).

``options.context_aware: true`` swaps in the context-aware (CA) encoder of Zhang et al.
(2017) used by "RNNSearch+ATR+CA": a forward pass ->h_i = Unit(->h_{i-1}, E x_i), then a
backward pass with two units per position,

    u_i  = Unit_a(<-h_{i+1}, E x_i),    <-h_i = Unit_b(u_i, ->h_i),

whose states <-h_i (d-dimensional) are the annotations, and s_0 = tanh(W_0 <-h_1 + b_0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.config import ModelConfig
from rnmt.models.base import ConditionalDecoderModel, TensorDict, time_steps
from rnmt.models.options import UNIT_KEYS
from rnmt.models.registry import register
from rnmt.models.reports import Reports
from rnmt.models.units import bidirectional, build_cell, decoder_unit, encoder_unit
from rnmt.modules.attention import AdditiveAttention
from rnmt.modules.embedding import Embedding


class ContextAwareEncoder(nn.Module):
    """Zhang et al. (2017) CA encoder: the backward pass also reads the forward states."""

    def __init__(self, cfg: ModelConfig, cell: str, emb_size: int, hidden_size: int) -> None:
        super().__init__()
        self.forward_unit = build_cell(cfg, cell, emb_size, hidden_size)
        self.backward_word = build_cell(cfg, cell, emb_size, hidden_size)  # Unit_a reads E x_i
        self.backward_context = build_cell(cfg, cell, hidden_size, hidden_size)  # Unit_b reads ->h_i
        self.hidden_size = hidden_size

    def forward(self, x: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor]:
        """Returns the annotations <-h_i [B, S, d] (zero at padding) and <-h_1 [B, d]."""
        forward_states, _, _ = cells.run_cell(self.forward_unit, x, mask)
        px_word = self.backward_word.project_inputs(x)
        px_ctx = self.backward_context.project_inputs(forward_states)
        state = self.backward_context.init_state(x.size(0), px_word)
        outputs = [None] * x.size(1)
        word_steps, ctx_steps = time_steps(px_word), time_steps(px_ctx)
        for i in range(x.size(1) - 1, -1, -1):  # padded positions keep the state (SPEC 0)
            real = mask[:, i].unsqueeze(1)
            u = self.backward_word.step(word_steps[i], state)
            state = torch.where(real, self.backward_context.step(ctx_steps[i], u), state)
            outputs[i] = self.backward_context.output(state) * real
        return torch.stack(outputs, 1), self.backward_context.output(state)


@dataclass(frozen=True)
class ATROptions:
    tanh_states: bool = False  # attention over tanh(h_i), readout of tanh(s_j) (appendix eq. 12)
    context_aware: bool = False  # the CA encoder of "RNNSearch+ATR+CA"


@register("atr-rnnsearch", options=ATROptions, reads=UNIT_KEYS)
class ATRRNNSearch(ConditionalDecoderModel):
    beam_shares_memory = True  # the step reads the memory only through its attention

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: ATROptions) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        dec_cell = decoder_unit(cfg)
        self.tanh_states = options.tanh_states
        self.context_aware = options.context_aware
        self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id, bias=True)
        self.tgt_embed = Embedding(tgt_vocab, E, zero_index=self.bos_id, bias=True)
        if self.context_aware:
            self.encoder = ContextAwareEncoder(cfg, encoder_unit(cfg), E, d)
            ann = d
        else:
            self.encoder = bidirectional(cfg, E, d)
            ann = 2 * d
        self.unit1 = build_cell(cfg, dec_cell, E, d)  # reads E y_{j-1}
        self.unit2 = build_cell(cfg, dec_cell, ann, d)  # reads c_j
        self.init_layer = nn.Linear(ann, self.unit1.state_size)  # W_0, b_0
        self.attention = AdditiveAttention(d, ann)  # U_a (+ b_q), W_q, v, b_v
        self.readout = nn.Linear(d + ann + E, E)  # W_o, b_o
        self.output = nn.Linear(E, tgt_vocab, bias=False)
        if cfg.tie_target_embeddings:
            self.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        x = self.encoder_inputs(src)
        if self.context_aware:
            annotations, final = self.encoder(x, src_mask)
        else:
            annotations, last_f, last_b, _ = self.encoder(x, src_mask)
            final = torch.cat([self.encoder.fwd.output(last_f), self.encoder.bwd.output(last_b)], -1)
        if self.tanh_states:
            annotations = torch.tanh(annotations)
        return {"annotations": annotations, "keys": self.attention.precompute(annotations),
                "final": final, "src_mask": src_mask}

    def init_state(self, memory: TensorDict) -> TensorDict:
        return {"s": torch.tanh(self.init_layer(memory["final"]))}

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        """o_j = tanh(W_o [tanh(s_j); c_j; E y_{j-1}] + b_o) (eq. 12), logits o_j E_y^T."""
        s_out = torch.tanh(outputs["s"]) if self.tanh_states else outputs["s"]
        o = torch.tanh(self.readout(torch.cat([s_out, outputs["context"], inputs["emb"]], -1)))
        return self.output(self.dropout(o))

    # -- analysis: the context-aware encoder's backward pass is a two-unit chain per
    # position, so only its forward unit is reported.
    def reports(self) -> Reports:
        reports = super().reports()
        if self.context_aware:
            reports.encoder = {"fwd": self.encoder.forward_unit.unit_name}
        return reports

    def encoder_gates(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        if not self.context_aware:
            return super().encoder_gates(src, src_mask)
        _, _, gates = cells.run_cell(self.encoder.forward_unit, self.encoder_inputs(src), src_mask, return_gates=True)
        return {f"fwd.{k}": v for k, v in gates.items()}
