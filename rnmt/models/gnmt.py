"""Deep stacked RNNSearch in the GNMT layout (Wu et al. 2016), as used by the ATR paper for
"GNMT+ATR" (Table 2) and "DeepRNNSearch" (Table 4, 5 layers).

Encoder: layer 1 is bidirectional (E x_i -> [->h; <-h], 2d), layer 2 reads it (2d -> d),
layers 3..L_enc read the layer below (d -> d) with residual connections
x^{l} = x^{l-1} + Unit_l(x^{l-1}). The top layer's states h_i are the annotations.

Decoder, one step j, with L_dec layers:

    layer 1  the conditional unit of RNNSearch:  s~_j = Unit_1(s_{j-1}, E y_{j-1}),
             c_j = Attention(s~_j, h),  x^1_j = Unit_2(s~_j, c_j)
    layer l  x^l_j = Unit_l(x^l_{j-1}, [x^{l-1}_j; c_j])   (+ x^{l-1}_j for l >= 3, residual)
    o_j = tanh(W_o [x^L_j; c_j; E y_{j-1}] + b_o),   p(y_j) = softmax(o_j E_y^T)

so every layer sees the attention context, as in GNMT. Each decoder layer starts from
tanh(W_l mean_i(h_i) + b_l). Embeddings carry a bias and the output matrix is tied to the
target embedding, as in the ATR paper's RNNSearch (`rnmt.models.atr_rnnsearch`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.models.base import RecurrentTranslationModel, TensorDict, masked_mean
from rnmt.models.options import NO_OPTIONS, UNIT_KEYS, NoOptions
from rnmt.models.registry import register
from rnmt.models.units import bidirectional, build_cell, decoder_unit, encoder_unit
from rnmt.modules.attention import AdditiveAttention
from rnmt.modules.embedding import Embedding


@register("deep-rnnsearch", reads=(*UNIT_KEYS, "enc_layers", "dec_layers"))
class DeepRNNSearch(RecurrentTranslationModel):
    beam_shares_memory = True  # the step reads the memory only through its attention

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: NoOptions = NO_OPTIONS) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        if cfg.enc_layers < 1 or cfg.dec_layers < 1:
            raise UserError("deep-rnnsearch: model.enc_layers and model.dec_layers must be at least 1")
        enc_cell, dec_cell = encoder_unit(cfg), decoder_unit(cfg)
        self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id, bias=True)
        self.tgt_embed = Embedding(tgt_vocab, E, zero_index=self.bos_id, bias=True)
        self.bottom_encoder = bidirectional(cfg, E, d)
        self.encoder = nn.ModuleList(build_cell(cfg, enc_cell, 2 * d if k == 0 else d, d)
                                     for k in range(cfg.enc_layers - 1))
        ann = d if cfg.enc_layers > 1 else 2 * d
        self.unit1 = build_cell(cfg, dec_cell, E, d)
        self.attention = AdditiveAttention(d, ann)
        self.unit2 = build_cell(cfg, dec_cell, ann, d)
        self.decoder = nn.ModuleList(build_cell(cfg, dec_cell, d + ann, d) for _ in range(cfg.dec_layers - 1))
        self.init_layers = nn.ModuleList(nn.Linear(ann, cell.state_size)
                                         for cell in [self.unit1, *self.decoder])
        self.readout = nn.Linear(d + ann + E, E)
        self.output = nn.Linear(E, tgt_vocab, bias=False)
        if cfg.tie_target_embeddings:
            self.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        x = self.bottom_encoder(self.dropout(self.src_embed(src)), src_mask).outputs
        for k, cell in enumerate(self.encoder):
            out, _, _ = cells.run_cell(cell, x, src_mask)
            x = x + out if k >= 1 else out  # residual from the third layer on
        return {"annotations": x, "keys": self.attention.precompute(x), "src_mask": src_mask}

    def init_state(self, memory: TensorDict) -> TensorDict:
        mean = masked_mean(memory["annotations"], memory["src_mask"])
        return {f"s{k}": torch.tanh(layer(mean)) for k, layer in enumerate(self.init_layers)}

    def target_inputs(self, tokens: Tensor, positions: Tensor) -> TensorDict:
        emb = self.dropout(self.tgt_embed(tokens))
        return {"emb": emb, "px1": self.unit1.project_inputs(emb)}

    def step_fused_on_cuda(self) -> bool:
        return all(cell.fused_step_on_cuda() for cell in (self.unit1, self.unit2, *self.decoder))

    def transition(self, inputs: TensorDict, state: TensorDict, memory: TensorDict):
        """Layer 1 is the conditional unit with attention; layer l >= 2 reads [x^{l-1}_j; c_j]."""
        s_tilde = self.unit1.step(inputs["px1"], state["s0"])
        context, alpha = self.attention(self.unit1.output(s_tilde), memory["keys"], memory["annotations"],
                                        memory["src_mask"])
        new = {"s0": self.unit2.step(self.unit2.project_inputs(context), s_tilde)}
        x = self.unit2.output(new["s0"])
        for k, cell in enumerate(self.decoder, start=1):
            new[f"s{k}"] = cell.step(cell.project_inputs(torch.cat([self.dropout(x), context], -1)), state[f"s{k}"])
            out = cell.output(new[f"s{k}"])
            x = x + out if k >= 2 else out  # residual from the third layer on
        return new, {"top": x, "context": context}, {"attention": alpha}

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        o = torch.tanh(self.readout(torch.cat([outputs["top"], outputs["context"], inputs["emb"]], -1)))
        return self.output(self.dropout(o))
