"""RNNSearch as built in dl4mt (Bahdanau et al. 2015; Cseq2seq paper section 2; SPEC A1, B4).

Encoder (Cseq2seq eq. 1-2): a bidirectional recurrent layer over the source embeddings,
annotations h_i = [->h_i; <-h_i].

Decoder, one step j (the two-level "conditional" unit of dl4mt; Cseq2seq eq. 3-6):

    s~_j = Unit_1(s_{j-1}, E y_{j-1})                        first level reads the previous word
    e_ji = U_att^T tanh(W_c_att h_i + b_att + W_comb_att s~_j) + c_tt,   alpha_j = softmax(e_j)
    c_j  = sum_i alpha_ji h_i                                 attention queried with s~_j
    s_j  = Unit_2(s~_j, c_j)                                  second level reads the context
    t_j  = tanh(W_1 s_j + b_1 + W_2 E y_{j-1} + b_2 + W_3 c_j + b_3)     readout
    p(y_j | y_<j, x) = softmax(W_o t_j + b_o)

with s_0 = tanh(W_init mean_i(h_i) + b_init) and E y_0 = 0 (the first decoder input is a
zero vector, as in dl4mt). Any unit of `rnmt.cells` can stand in for the GRUs
(``model.cell``), which gives the ATR paper's RNNSearch-GRU/LSTM/RAN/ATR comparison.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from rnmt.config import ModelConfig
from rnmt.models.base import ConditionalDecoderModel, TensorDict, masked_mean
from rnmt.models.encoders import check_recurrent_encoder_keys, source_encoder
from rnmt.models.options import NO_OPTIONS, UNIT_KEYS, NoOptions
from rnmt.models.registry import register
from rnmt.models.units import bidirectional, decoder_unit, dl4mt_cell
from rnmt.modules.attention import AdditiveAttention
from rnmt.modules.token_table import TokenTable


@register("rnnsearch", reads=(*UNIT_KEYS, "encoder", "enc_layers", "encoder_norm", "attention_heads"))
class RNNSearch(ConditionalDecoderModel):
    beam_shares_memory = True  # the step reads the memory only through its attention

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: NoOptions = NO_OPTIONS) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        dec_cell = decoder_unit(cfg)
        check_recurrent_encoder_keys(cfg, "rnnsearch")
        self.source = source_encoder(cfg, src_vocab, self.pad_id)  # a hybrid's Transformer encoder
        # (Modules are created in the same order as before hybrids existed: the uniform
        # initialisation draws them in that order, so a seed gives the same model.)
        if self.source is None:
            self.src_embed = nn.Embedding(src_vocab, E, padding_idx=self.pad_id)
        # The BOS row is the zero vector E y_0 of dl4mt and never trained.
        self.tgt_embed = nn.Embedding(tgt_vocab, E, padding_idx=self.bos_id)
        if self.source is None:
            self.encoder = bidirectional(cfg, E, d, dl4mt_cell)
        ann = 2 * d if self.source is None else self.source.output_size
        self.unit1 = dl4mt_cell(cfg, dec_cell, E, d)  # reads E y_{j-1}
        self.unit2 = dl4mt_cell(cfg, dec_cell, ann, d, conditional=True)  # reads c_j
        self.init_layer = nn.Linear(ann, self.unit1.state_size)  # W_init, b_init
        self.attention = AdditiveAttention(self.unit1.hidden_size, ann)
        self.readout_state = nn.Linear(d, E)  # W_1, b_1 (ff_logit_lstm)
        self.readout_prev = nn.Linear(E, E)  # W_2, b_2 (ff_logit_prev)
        self.readout_ctx = nn.Linear(ann, E)  # W_3, b_3 (ff_logit_ctx)
        self.output = nn.Linear(E, tgt_vocab)  # W_o, b_o (ff_logit)
        if cfg.tie_target_embeddings:
            self.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)
        self._token_table = TokenTable()  # decoding: E y_{j-1}'s products per target word

    # -- encoder -----------------------------------------------------------------------
    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        if self.source is not None:
            annotations = self.source(src, src_mask)
        else:
            annotations = self.encoder(self.encoder_inputs(src), src_mask).outputs
        return {
            "annotations": annotations,
            "keys": self.attention.precompute(annotations),
            "src_mask": src_mask,
        }

    def init_state(self, memory: TensorDict) -> TensorDict:
        mean = masked_mean(memory["annotations"], memory["src_mask"])
        return {"s": torch.tanh(self.init_layer(mean))}

    # -- decoder -----------------------------------------------------------------------
    def target_inputs(self, tokens: Tensor, positions: Tensor) -> TensorDict:
        """Unit 1's projected input and the readout's term ``W_2 E y_{j-1} + b_2``; when
        decoding, looked up in a per-vocabulary table (`rnmt.modules.token_table`)."""
        emb_table = self.tgt_embed.weight
        width = self.unit1.proj_size + self.readout_prev.out_features
        if tokens.dim() > 1 or not TokenTable.applies(self, emb_table, emb_table.size(0), width):
            emb = self.dropout(self.tgt_embed(tokens))
            return {"px1": self.unit1.project_inputs(emb), "prev_term": self.readout_prev(emb)}
        params = [emb_table, *self.unit1.parameters(), *self.readout_prev.parameters()]
        rows = self._token_table.lookup(tokens, params, lambda: torch.cat(
            [self.unit1.project_inputs(emb_table), self.readout_prev(emb_table)], -1))
        px1, prev_term = rows.split([self.unit1.proj_size, self.readout_prev.out_features], -1)
        return {"px1": px1, "prev_term": prev_term}

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        """t_j = tanh(W_1 s_j + b_1 + W_2 E y_{j-1} + b_2 + W_3 c_j + b_3), logits W_o t_j + b_o."""
        t = torch.tanh(self.readout_state(outputs["s"]) + inputs["prev_term"] + self.readout_ctx(outputs["context"]))
        return self.output(self.dropout(t))
