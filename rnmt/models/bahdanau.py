"""RNNSearch with a single recurrent layer in the decoder ("RNNSearch-" of the Cseq2seq
paper's Table 1; the decoder of Bahdanau et al. 2015 and of the survey's section 2.5).

    e_ji = v_a^T tanh(W_a s_{j-1} + U_a h_i),  alpha_j = softmax(e_j),  c_j = sum_i alpha_ji h_i
    s_j  = Unit(s_{j-1}, [E y_{j-1}; c_j])
    p(y_j | y_<j, x) = softmax(W_o g(s_{j-1}, E y_{j-1}, c_j))

The deep output reads the state the attention was queried with, s_{j-1}, as in Bahdanau
et al.'s appendix A.2.2 (t~_j = U_o s_{j-1} + V_o E y_{j-1} + C_o c_j): the prediction of
y_j and the new state s_j are computed side by side from the same s_{j-1}.

The attention is queried with the previous state s_{j-1} (there is no first-level unit
that reads y_{j-1} before attending, which is what dl4mt's two-level decoder adds). The
encoder, the initial state s_0 = tanh(W_init mean_i(h_i) + b_init) and the attention
network are dl4mt's, as for RNNSearch in the same table. g is the deep output layer:
``readout: maxout`` with ``options.readout_size`` l (Bahdanau et al.: l = 500) or dl4mt's
``tanh`` (l = E).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor, nn

from rnmt.config import ModelConfig
from rnmt.models.base import RecurrentTranslationModel, TensorDict, masked_mean
from rnmt.models.options import UNIT_KEYS
from rnmt.models.registry import register
from rnmt.models.units import bidirectional, build_cell, decoder_unit
from rnmt.modules.attention import AdditiveAttention
from rnmt.modules.embedding import Embedding
from rnmt.modules.readout import DeepOutput


@dataclass(frozen=True)
class RNNSearchMinusOptions:
    readout_size: Optional[int] = None  # l of the maxout deep output (Bahdanau et al.: 500); default E


@register("rnnsearch-minus", options=RNNSearchMinusOptions, reads=(*UNIT_KEYS, "readout"))
class RNNSearchMinus(RecurrentTranslationModel):
    beam_shares_memory = True  # the step reads the memory only through its attention

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: RNNSearchMinusOptions) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id)
        self.tgt_embed = Embedding(tgt_vocab, E, zero_index=self.bos_id)
        self.encoder = bidirectional(cfg, E, d)
        ann = self.encoder.hidden_size
        self.unit = build_cell(cfg, decoder_unit(cfg), E + ann, d)  # reads [E y_{j-1}; c_j]
        self.init_layer = nn.Linear(ann, self.unit.state_size)
        self.attention = AdditiveAttention(d, ann)
        self.readout = DeepOutput(d, E, ann, tgt_vocab, kind=cfg.readout,
                                  hidden_size=options.readout_size, dropout=cfg.dropout)
        if cfg.tie_target_embeddings:
            self.readout.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        annotations = self.encoder(self.dropout(self.src_embed(src)), src_mask).outputs
        return {"annotations": annotations, "keys": self.attention.precompute(annotations), "src_mask": src_mask}

    def init_state(self, memory: TensorDict) -> TensorDict:
        return {"s": torch.tanh(self.init_layer(masked_mean(memory["annotations"], memory["src_mask"])))}

    step_inputs = ("emb",)

    def target_inputs(self, tokens: Tensor, positions: Tensor) -> TensorDict:
        return {"emb": self.dropout(self.tgt_embed(tokens))}

    def step_fused_on_cuda(self) -> bool:
        return self.unit.fused_step_on_cuda()

    def transition(self, inputs: TensorDict, state: TensorDict, memory: TensorDict):
        s_prev = state["s"]
        query = self.unit.output(s_prev)  # attention and readout both read s_{j-1}
        context, alpha = self.attention(query, memory["keys"], memory["annotations"], memory["src_mask"])
        s = self.unit.step(self.unit.project_inputs(torch.cat([inputs["emb"], context], -1)), s_prev)
        return {"s": s}, {"s": query, "context": context}, {"attention": alpha}

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        return self.readout(outputs["s"], inputs["emb"], outputs["context"])
