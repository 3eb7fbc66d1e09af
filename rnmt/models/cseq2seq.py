"""Cyclic sequence-to-sequence learning (Zhang, Xiong & Su, "Cseq2seq"; SPEC A2, A4).

Both models keep the decoder of the paper's section 2 (eq. 2-4, dl4mt's two-level unit):

    s~_j = GRU_1(s_{j-1}, E y_{j-1})        s_j = GRU_2(s~_j, c_j)            (4)
    p(y_j | y_<j, x) = softmax(W_p tanh(W_1 s_j + W_2 E y_{j-1} + W_3 c_j + b))  (2)

and replace the attention that produces c_j by a recurrent network that re-reads the
source at every target step (`cyclic_context`), so each step costs O(n) sequential unit
steps over the whole batch (and beam) at once.

Cseq2seq-I (section 3.1, ``cseq2seq1``): a GRU_c re-reads the annotations h_i of the
bidirectional encoder (eq. 6), started from the current decoder query:

    c_{j,0} = tanh(V s~_j + b_0),   c_{j,i} = GRU_c(c_{j,i-1}, h_i)               (7)
    c_j = (1/n) sum_i c_{j,i}  (mean-pooling, MP)   or   c_j = c_{j,n}  (last-state, LS)

(``options.context``: ``mean`` or ``last``, for both models)

with s_0 = tanh(W_init mean_i(h_i) + b_init) as in RNNSearch. GRU_c's input projections
of all h_i are computed once per sentence (they do not depend on j).

Cseq2seq-II (section 3.2, ``cseq2seq2``): the SAME encoder GRU that read the source runs
over it again at every step, started from the previous decoder query:

    h_{j,0} = phi(s~_{j-1}),  h_{j,i} = f_enc(h_{j,i-1}, E x_i),  c_j = h_{j,n}  (9)
    s_0 = phi_0(<-h_1),  <-h_i = f_enc(<-h_{i+1}, E x_i)                         (10)

phi and phi_0 are one tanh layer each; s~_0 is taken to be s_0. The encoder's input
projections of E x_i are computed once per sentence. Section 4's sharing:

* SGRU (``options.share_gru``): GRU_1 IS the encoder GRU (theta_GRU -> theta_GRU1);
* SWord (``tie_target_embeddings``): the softmax matrix W_p IS the target embedding E_y.

``options.cyclic_query``: ``previous`` (default, eq. 9: phi(s~_{j-1})) or ``current``
(phi(s~_j), the query of eq. 7) for Cseq2seq-II.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Dict, List, Literal, Optional

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.models.base import ConditionalDecoderModel, TensorDict, masked_mean, time_steps
from rnmt.models.options import UNIT_KEYS
from rnmt.models.registry import register
from rnmt.models.units import bidirectional, decoder_unit, dl4mt_cell, encoder_unit
from rnmt.modules.embedding import Embedding
from rnmt.modules.readout import DeepOutput

ContextMode = Literal["mean", "last"]
CONTEXT_MODES = typing.get_args(ContextMode)


def cyclic_context(cell: cells.Cell, px_src: Tensor, src_mask: Tensor, state: Tensor, mode: str,
                   gate_means: Optional[Dict[str, list]] = None) -> Tensor:
    """Run ``cell`` over all source positions from ``state`` and pool its outputs.

    Args:
        px_src: the unit's input projections of the source, [B, S, proj_size] (cached).
        src_mask: [B, S] True on real tokens; padded positions keep the state, so "last"
            is the state at each sentence's own last token.
        state: initial state [B, state_size] (c_{j,0} or h_{j,0}).
        mode: "mean" (masked mean of the outputs) or "last" (output after the last token).
        gate_means: when given, each gate's mean over hidden units at every source position
            is appended to ``gate_means[name]`` (the r~_{j,i}, z~_{j,i} of section 5.4).

    Returns:
        the context vector c_j, [B, hidden_size].
    """
    if gate_means is None:
        # a unit that runs the whole re-reading in one call (the GRU on a GPU, once
        # accelerated: rnmt/fast/gru_cuda.py) instead of n steps
        context = cell.pooled_run(px_src, src_mask, state, mode)
        if context is not None:
            return context
    if gate_means is None:
        active = _active_rows(src_mask)
        if active is not None:
            return _packed_cyclic_context(cell, px_src, src_mask, state, mode, active)
    total = None
    for i, px_i in enumerate(time_steps(px_src)):
        real = src_mask[:, i].unsqueeze(1)
        if gate_means is None:
            new = cell.step(px_i, state)
        else:
            new, gates = cell.step(px_i, state, return_gates=True)
            for name, value in gates.items():
                gate_means.setdefault(name, []).append(value.mean(-1) * real.squeeze(1))
        state = torch.where(real, new, state)
        if mode == "mean":
            out = cell.output(state) * real
            total = out if total is None else total + out
    if mode == "last":
        return cell.output(state)
    return total / src_mask.sum(1, keepdim=True).clamp_min(1).to(total.dtype)


def _active_rows(src_mask: Tensor) -> Optional[List[int]]:
    """How many rows are still inside their sentence at each source position, when the rows
    are ordered longest first (translation batches are, and beam search keeps their order);
    None otherwise."""
    lengths = src_mask.sum(1)
    positions = torch.arange(src_mask.size(1), device=src_mask.device)
    inside = positions.unsqueeze(0) < lengths.unsqueeze(1)  # [B, S]
    if bool((lengths[1:] > lengths[:-1]).any()) or not torch.equal(inside, src_mask):
        return None  # not longest first, or padding inside a sentence
    return inside.sum(0).tolist()


def _packed_cyclic_context(cell: cells.Cell, px_src: Tensor, src_mask: Tensor, state: Tensor, mode: str,
                           active: List[int]) -> Tensor:
    """`cyclic_context` on rows sorted longest first: at source position i only the first
    ``active[i]`` rows take a step; the others have finished their sentence and keep their
    last state. No work on padding and no per-step masking."""
    done_states, done_totals = [], []  # tail blocks of rows, in the order they finished
    total = state.new_zeros(state.size(0), cell.hidden_size) if mode == "mean" else None
    for i, px_i in enumerate(time_steps(px_src)):
        n = active[i]
        if n == 0:
            break
        if n < state.size(0):
            done_states.append(state[n:])
            state = state[:n]
            if total is not None:
                done_totals.append(total[n:])
                total = total[:n]
        state = cell.step(px_i[:n], state)
        if total is not None:
            total = total + cell.output(state)
    if mode == "last":
        return cell.output(torch.cat([state, *reversed(done_states)]))
    total = torch.cat([total, *reversed(done_totals)])
    return total / src_mask.sum(1, keepdim=True).clamp_min(1).to(total.dtype)


def _context_mode(options) -> str:
    if options.context not in CONTEXT_MODES:
        raise UserError(f"model.options.context must be one of {', '.join(CONTEXT_MODES)}, got {options.context!r}")
    return options.context


class _CyclicDecoder(ConditionalDecoderModel):
    """Shared decoder of both Cseq2seq models: target embedding, GRU_1, GRU_2 reading the
    d-dimensional context, and the deep output layer. Subclasses supply the context."""

    # the re-reading steps only the rows still inside their source (a data-dependent count)
    compilable_step = False

    def _build_decoder(self, cfg: ModelConfig, tgt_vocab: int, unit1: cells.Cell | None = None) -> None:
        E, d = cfg.emb_size, cfg.hidden_size
        dec_cell = decoder_unit(cfg)
        self.tgt_embed = Embedding(tgt_vocab, E, zero_index=self.bos_id)
        self.unit1 = unit1 if unit1 is not None else dl4mt_cell(cfg, dec_cell, E, d)  # GRU_1
        self.unit2 = dl4mt_cell(cfg, dec_cell, d, d, conditional=True)  # GRU_2 reads c_j (d-dim)
        self.readout = DeepOutput(d, E, d, tgt_vocab, kind=cfg.readout, dropout=cfg.dropout)
        if cfg.tie_target_embeddings:  # SWord: W_p -> E_y
            self.readout.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    # Set by analysis (forced decoding) to get the re-reading unit's gates per source
    # position in step's extras; off by default so decoding pays nothing for them.
    report_source_gates: bool = False

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        """Eq. 2: W_p tanh(W_1 s_j + W_2 E y_{j-1} + W_3 c_j + b)."""
        return self.readout(outputs["s"], inputs["emb"], outputs["context"])

    def _gate_log(self) -> Optional[Dict[str, list]]:
        return {} if self.report_source_gates and not self.training else None

    @staticmethod
    def _extras(gates: Optional[Dict[str, list]]) -> TensorDict:
        return {"source_gates": {k: torch.stack(v, 1) for k, v in gates.items()}} if gates else {}


@dataclass(frozen=True)
class Cseq2seqIOptions:
    context: ContextMode = "mean"  # c_j: mean of the re-reading's outputs (MP) or its last (LS)


@register("cseq2seq1", options=Cseq2seqIOptions, reads=(*UNIT_KEYS, "readout"))
class Cseq2seqI(_CyclicDecoder):
    """Cseq2seq-I: an RNN over the annotations replaces the attention (eq. 7)."""

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int,
                 options: Cseq2seqIOptions = Cseq2seqIOptions()) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        self.context_mode = _context_mode(options)
        self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id)
        self.encoder = bidirectional(cfg, E, d, dl4mt_cell)
        ann = self.encoder.hidden_size
        self._build_decoder(cfg, tgt_vocab)
        self.init_layer = nn.Linear(ann, self.unit1.state_size)  # W_init, b_init
        self.reader = dl4mt_cell(cfg, decoder_unit(cfg), ann, d)  # GRU_c of eq. 7
        self.reader_init = nn.Linear(self.unit1.hidden_size, self.reader.state_size)  # V, b_0

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        annotations = self.encoder(self.encoder_inputs(src), src_mask).outputs
        return {
            "annotation_mean": masked_mean(annotations, src_mask),
            "reader_px": self.reader.project_inputs(annotations),  # GRU_c's W h_i, once per sentence
            "src_mask": src_mask,
        }

    def init_state(self, memory: TensorDict) -> TensorDict:
        return {"s": torch.tanh(self.init_layer(memory["annotation_mean"]))}

    def context(self, query: Tensor, state: TensorDict, memory: TensorDict):
        """Eq. 7: c_{j,0} = tanh(V s~_j + b_0), then GRU_c re-reads every h_i."""
        c0 = torch.tanh(self.reader_init(query))
        gates = self._gate_log()
        context = cyclic_context(self.reader, memory["reader_px"], memory["src_mask"], c0, self.context_mode,
                                 gates)
        return context, self._extras(gates)


@dataclass(frozen=True)
class Cseq2seqIIOptions:
    context: ContextMode = "mean"  # c_j: mean of the re-reading's outputs or its last (eq. 9)
    cyclic_query: str = "previous"  # eq. 9's phi(s~_{j-1}), or "current": phi(s~_j)
    share_gru: bool = False  # SGRU: GRU_1 is the encoder GRU

    def __post_init__(self) -> None:
        if self.cyclic_query not in ("previous", "current"):
            raise UserError(f"model.options.cyclic_query must be 'previous' or 'current', got {self.cyclic_query!r}")


@register("cseq2seq2", options=Cseq2seqIIOptions, reads=(*UNIT_KEYS, "readout"))
class Cseq2seqII(_CyclicDecoder):
    """Cseq2seq-II: the encoder itself re-reads the source at every step (eq. 9-10)."""

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: Cseq2seqIIOptions) -> None:
        super().__init__()
        E, d = cfg.emb_size, cfg.hidden_size
        enc_cell = encoder_unit(cfg)
        self.context_mode = _context_mode(options)
        self.cyclic_query = options.cyclic_query
        share_gru = options.share_gru
        self.src_embed = Embedding(src_vocab, E, zero_index=self.pad_id)
        self.encoder = dl4mt_cell(cfg, enc_cell, E, d)  # f_enc, both directions and every re-run
        if share_gru and decoder_unit(cfg) != enc_cell:
            raise UserError("model.options.share_gru needs the same unit in encoder and decoder")
        self._build_decoder(cfg, tgt_vocab, unit1=self.encoder if share_gru else None)
        self.init_layer = nn.Linear(d, self.unit1.state_size)  # phi_0 of eq. 10
        self.phi = nn.Linear(self.unit1.hidden_size, self.encoder.state_size)  # phi of eq. 9

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        x = self.encoder_inputs(src)
        _, backward_last, _ = cells.run_cell(self.encoder, x, src_mask, reverse=True)  # <-h_1, eq. 10
        return {
            "backward_last": self.encoder.output(backward_last),
            "src_px": self.encoder.project_inputs(x),  # W E x_i, once per sentence
            "src_mask": src_mask,
        }

    def init_state(self, memory: TensorDict) -> TensorDict:
        s0 = torch.tanh(self.init_layer(memory["backward_last"]))
        return {"s": s0, "s_tilde": s0}  # s~_0 := s_0

    def _reencode(self, s_tilde: Tensor, memory: TensorDict, gates: Optional[Dict[str, list]] = None) -> Tensor:
        h0 = torch.tanh(self.phi(self.unit1.output(s_tilde)))  # h_{j,0} = phi(s~), eq. 9
        return cyclic_context(self.encoder, memory["src_px"], memory["src_mask"], h0, self.context_mode, gates)

    def transition(self, inputs: TensorDict, state: TensorDict, memory: TensorDict):
        """Eq. 9 with the query of ``options.cyclic_query``: the re-reading starts from
        phi(s~_{j-1}) ("previous") or phi(s~_j) ("current")."""
        gates = self._gate_log()
        if self.cyclic_query == "previous":
            context = self._reencode(state["s_tilde"], memory, gates)
            s_tilde = self.unit1.step(inputs["px1"], state["s"])
        else:
            s_tilde = self.unit1.step(inputs["px1"], state["s"])
            context = self._reencode(s_tilde, memory, gates)
        s = self.unit2.step(self.unit2.project_inputs(context), s_tilde)
        return ({"s": s, "s_tilde": s_tilde}, {"s": self.unit2.output(s), "context": context},
                self._extras(gates))
