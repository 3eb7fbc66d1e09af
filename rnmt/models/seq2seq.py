"""Encoder-decoders with a fixed-length summary of the source (no attention).

``seq2seq`` (Cho et al. 2014; Cseq2seq paper eq. 8, its Table 1 "Seq2seq"; SPEC A3): a
unidirectional encoder reads the source, its last state is the summary c = h_n, and the
decoder sees c at every step. The decoder is the Cseq2seq paper's (eq. 2-4, dl4mt's
two-level unit) with c in place of the attention context:

    h_i  = Unit_enc(h_{i-1}, E x_i),  c = h_n                          (8)
    s_0  = tanh(W_init c + b_init)
    s~_j = Unit_1(s_{j-1}, E y_{j-1})                                   (4)
    s_j  = Unit_2(s~_j, c)                                              (4)
    p(y_j | y_<j, x) = softmax(W_o tanh(W_1 s_j + W_2 E y_{j-1} + W_3 c + b))   (2)

c never changes, so Unit_2's input projection of c is computed once per sentence.

``seq2seq-sutskever`` (Sutskever et al. 2014; SPEC B5): a stack of ``enc_layers`` units
reads the REVERSED source; the decoder stack (``dec_layers``, same count) starts from the
encoder's final state of every layer and reads only E y_{j-1}; the top state is projected
to the vocabulary. With left-aligned padding, walking the source from its last position to
its first with masked state carry-over is exactly reading each reversed sentence.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.models.base import ConditionalDecoderModel, StepLogits, TensorDict, TranslationModel
from rnmt.models.options import NO_OPTIONS, UNIT_KEYS, NoOptions
from rnmt.models.registry import register
from rnmt.models.units import build_cell, decoder_unit, dl4mt_cell, encoder_unit
from rnmt.modules.embedding import Embedding
from rnmt.modules.readout import DeepOutput


@register("seq2seq", reads=(*UNIT_KEYS, "readout"))
class Seq2seq(ConditionalDecoderModel):
    """Cho et al. (2014) encoder-decoder with the dl4mt decoder (Cseq2seq Table 1 "Seq2seq")."""

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: NoOptions = NO_OPTIONS) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        enc_cell, dec_cell = encoder_unit(cfg), decoder_unit(cfg)
        self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id)
        self.tgt_embed = Embedding(tgt_vocab, E, zero_index=self.bos_id)
        self.encoder = dl4mt_cell(cfg, enc_cell, E, d)
        self.unit1 = dl4mt_cell(cfg, dec_cell, E, d)  # reads E y_{j-1}
        self.unit2 = dl4mt_cell(cfg, dec_cell, d, d, conditional=True)  # reads the summary c
        self.init_layer = nn.Linear(d, self.unit1.state_size)  # W_init, b_init
        self.readout = DeepOutput(d, E, d, tgt_vocab, kind=cfg.readout, dropout=cfg.dropout)
        if cfg.tie_target_embeddings:
            self.readout.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        _, last, _ = cells.run_cell(self.encoder, self.encoder_inputs(src), src_mask)
        summary = self.encoder.output(last)  # c = h_n, eq. 8
        return {"summary": summary, "summary_px": self.unit2.project_inputs(summary), "src_mask": src_mask}

    def init_state(self, memory: TensorDict) -> TensorDict:
        return {"s": torch.tanh(self.init_layer(memory["summary"]))}

    def context(self, query: Tensor, state: TensorDict, memory: TensorDict):
        return memory["summary"], {}  # c = h_n at every step

    def second_input(self, context: Tensor, memory: TensorDict) -> Tensor:
        return memory["summary_px"]  # Unit_2's projection of c, once per sentence

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        return self.readout(outputs["s"], inputs["emb"], outputs["context"])


@register("seq2seq-sutskever", reads=(*UNIT_KEYS, "enc_layers", "dec_layers"))
class SutskeverSeq2seq(TranslationModel):
    """Sutskever et al. (2014): stacked units, reversed source, decoder started from the
    encoder's final states, softmax over the top decoder state.

    Not a `RecurrentTranslationModel`: nothing feeds back from one layer's step into the
    recurrence, so teacher forcing runs each decoder layer over all positions before the
    next one (one sequence run per layer) instead of a step loop over the whole stack."""

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: NoOptions = NO_OPTIONS) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        if cfg.enc_layers != cfg.dec_layers:
            raise UserError("seq2seq-sutskever: model.enc_layers and model.dec_layers must be equal "
                            "(each decoder layer starts from the matching encoder layer's final state)")
        enc_cell, dec_cell = encoder_unit(cfg), decoder_unit(cfg)
        self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id)
        self.tgt_embed = Embedding(tgt_vocab, E, zero_index=self.bos_id)
        self.encoder = nn.ModuleList(build_cell(cfg, enc_cell, E if k == 0 else d, d) for k in range(cfg.enc_layers))
        self.decoder = nn.ModuleList(build_cell(cfg, dec_cell, E if k == 0 else d, d) for k in range(cfg.dec_layers))
        for enc, dec in zip(self.encoder, self.decoder):
            if enc.state_size != dec.state_size:
                raise UserError("seq2seq-sutskever: encoder and decoder units must carry the same state size")
        self.output = nn.Linear(d, tgt_vocab)
        if cfg.tie_target_embeddings:
            self.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        x = self.dropout(self.src_embed(src))
        memory: TensorDict = {"src_mask": src_mask}
        for k, cell in enumerate(self.encoder):
            x, last, _ = cells.run_cell(cell, x, src_mask, reverse=True)  # reversed source
            memory[f"final{k}"] = last
        return memory

    def init_state(self, memory: TensorDict) -> TensorDict:
        return {f"s{k}": memory[f"final{k}"] for k in range(len(self.decoder))}

    offers_step_logits = True

    def step_logits(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> StepLogits:
        x = self.dropout(self.tgt_embed(prev_tokens))
        new = {}
        for k, cell in enumerate(self.decoder):
            new[f"s{k}"] = cell.step(cell.project_inputs(x), state[f"s{k}"])
            x = cell.output(new[f"s{k}"])
        return StepLogits(self.output(self.dropout(x)), new, {})

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict):
        logits, new, extras, _ = self.step_logits(prev_tokens, state, memory)
        return torch.log_softmax(logits.float(), dim=-1), new, extras

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        memory = self.encode(src, src_mask)
        x = self.dropout(self.tgt_embed(tgt_in))
        # No feedback from the output into the recurrence: each layer runs over all target
        # positions before the next one.
        for k, cell in enumerate(self.decoder):
            x, _, _ = cells.run_cell(cell, x, None, state0=memory[f"final{k}"])
        return self.output(self.dropout(x))
