"""Luong et al. (2015) attentional NMT, global and local-p attention (survey section 2.5).

A stack of ``enc_layers`` units reads the source (reversed by default, as in the paper's
"reverse" setting; ``options.reverse_source``), a stack of ``dec_layers`` units starts from
the encoder's final states and, with input feeding, reads [E y_{t-1}; h~_{t-1}]:

    h_t  = Stack(h_{t-1}, [E y_{t-1}; h~_{t-1}])          top state h_t, h~_0 = 0
    a_t  = align(h_t, h_s)   (`rnmt.modules.luong.LuongAttention`),  c_t = sum_s a_t(s) h_s
    h~_t = tanh(W_c [c_t; h_t])
    p(y_t | y_<t, x) = softmax(W_s h~_t)

``options.attention`` (required): dot | general | concat | local-p (window ``options.window``,
D = 10).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.models.base import RecurrentTranslationModel, TensorDict
from rnmt.models.options import UNIT_KEYS
from rnmt.models.registry import register
from rnmt.models.units import build_cell, decoder_unit, encoder_unit
from rnmt.modules.embedding import Embedding
from rnmt.modules.luong import SCORES, LuongAttention


@dataclass(frozen=True)
class LuongOptions:
    attention: Literal["dot", "general", "concat", "local-p"]  # the score (`rnmt.modules.luong.SCORES`)
    reverse_source: bool = True  # the encoder reads the source reversed
    window: int = 10  # D of local-p attention


@register("luong", options=LuongOptions, reads=(*UNIT_KEYS, "enc_layers", "dec_layers"))
class LuongNMT(RecurrentTranslationModel):
    beam_shares_memory = True  # the step reads the memory only through its attention

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: LuongOptions) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        if cfg.enc_layers != cfg.dec_layers:
            raise UserError("luong: model.enc_layers and model.dec_layers must be equal "
                            "(each decoder layer starts from the matching encoder layer)")
        if options.attention not in SCORES:
            raise UserError(f"luong: model.options.attention must be one of {', '.join(SCORES)}, "
                            f"got {options.attention!r}")
        enc_cell, dec_cell = encoder_unit(cfg), decoder_unit(cfg)
        self.reverse_source = options.reverse_source
        self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id)
        self.tgt_embed = Embedding(tgt_vocab, E, zero_index=self.bos_id)
        self.encoder = nn.ModuleList(build_cell(cfg, enc_cell, E if k == 0 else d, d) for k in range(cfg.enc_layers))
        self.decoder = nn.ModuleList(build_cell(cfg, dec_cell, E + d if k == 0 else d, d)
                                     for k in range(cfg.dec_layers))
        self.attention = LuongAttention(options.attention, d, d, window=options.window)
        self.combine = nn.Linear(2 * d, d, bias=False)  # W_c
        self.output = nn.Linear(d, tgt_vocab)  # W_s
        self.dropout = nn.Dropout(cfg.dropout)

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        x = self.dropout(self.src_embed(src))
        memory: TensorDict = {"src_mask": src_mask}
        for k, cell in enumerate(self.encoder):
            x, last, _ = cells.run_cell(cell, x, src_mask, reverse=self.reverse_source)
            memory[f"final{k}"] = last
            if k + 1 < len(self.encoder):
                x = self.dropout(x)
        memory["states"] = x
        memory["keys"] = self.attention.precompute(x)
        return memory

    def init_state(self, memory: TensorDict) -> TensorDict:
        state = {f"h{k}": memory[f"final{k}"] for k in range(len(self.decoder))}
        state["attentional"] = memory["states"].new_zeros(memory["states"].size(0), self.combine.out_features)
        return state

    step_inputs = ("emb",)

    def target_inputs(self, tokens: Tensor, positions: Tensor) -> TensorDict:
        return {"emb": self.dropout(self.tgt_embed(tokens))}

    def step_fused_on_cuda(self) -> bool:
        return all(cell.fused_step_on_cuda() for cell in self.decoder)

    def transition(self, inputs: TensorDict, state: TensorDict, memory: TensorDict):
        x = torch.cat([inputs["emb"], state["attentional"]], -1)  # input feeding
        new: TensorDict = {}
        for k, cell in enumerate(self.decoder):
            new[f"h{k}"] = cell.step(cell.project_inputs(x), state[f"h{k}"])
            x = cell.output(new[f"h{k}"])
            if k + 1 < len(self.decoder):
                x = self.dropout(x)
        context, weights = self.attention(x, memory["keys"], memory["states"], memory["src_mask"])
        new["attentional"] = torch.tanh(self.combine(torch.cat([context, x], -1)))  # h~_t
        return new, {"attentional": new["attentional"]}, {"attention": weights}

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        return self.output(self.dropout(outputs["attentional"]))
