"""The one interface every translation model implements.

Search, training, analysis and serving talk to models only through these methods, so they
never need to know which paper a model comes from:

* ``encode(src, src_mask) -> memory``: source states, cached attention keys, the mask.
* ``init_state(memory) -> state``: the decoder's initial state.
* ``step(prev_tokens, state, memory) -> (log_probs, state, extras)``: one decoding step;
  ``extras`` may carry attention weights (``"attention"``, [B, S]) or gate values.
* ``step_logits(prev_tokens, state, memory) -> StepLogits`` (models that set
  ``offers_step_logits``): the same step before its normalisation, so that a search can
  choose from the logits in one pass (`rnmt.search.fused_step`).
* ``forward(src, src_mask, tgt_in) -> logits``: teacher-forced scores for all target
  positions at once; agrees with a loop of ``step``.

``memory`` and ``state`` are flat dicts of tensors whose first dimension is the batch, so
beam search reorders and shrinks them with `select` without asking the model. A model whose
``step`` reads the memory only through an attention that takes G queries per sentence
(`AdditiveAttention`, `MultiHeadAdditiveAttention`) sets ``beam_shares_memory``: beam search
then keeps one memory row per sentence for its K hypotheses (state rows b*K .. b*K+K-1)
instead of K copies.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

import torch
from torch import Tensor, nn

from rnmt import cells
from rnmt.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rnmt.models.reports import Reports

TensorDict = Dict[str, Tensor]


class StepLogits(NamedTuple):
    """A decoding step before its normalisation: the model's ``step`` returns
    ``log_softmax(logits)`` with the end of sentence at -inf in the rows ``eos_forbidden``."""

    logits: Tensor  # [R, V]
    state: TensorDict
    extras: TensorDict
    eos_forbidden: Optional[Tensor] = None  # [R] bool: rows where the end of sentence may not follow


def select(tree: TensorDict, index: Tensor) -> TensorDict:
    """Pick batch rows ``index`` from every tensor of a memory or state dict."""
    return {k: v.index_select(0, index) for k, v in tree.items()}


def repeat_rows(tree: TensorDict, times: int) -> TensorDict:
    """Repeat every batch row ``times`` times in place order (row i -> rows i*times..)."""
    return {k: v.repeat_interleave(times, dim=0) for k, v in tree.items()}


class TranslationModel(nn.Module):
    """Base class: subclasses implement encode / init_state / step / forward."""

    pad_id: int = PAD_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID
    beam_shares_memory: bool = False  # step accepts K state rows per memory row (see above)
    offers_step_logits: bool = False  # step_logits is implemented

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        raise NotImplementedError

    def init_state(self, memory: TensorDict) -> TensorDict:
        raise NotImplementedError

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> Tuple[Tensor, TensorDict, TensorDict]:
        raise NotImplementedError

    def step_logits(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> StepLogits:
        raise NotImplementedError

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        raise NotImplementedError

    def target_log_probs(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        """log p(. | y_<j, x) at every target position [B, T, V] by teacher forcing: what
        ``step`` returns position by position (the tests hold every paper config's forward
        to its steps), computed with ``forward``'s all-positions products."""
        return torch.log_softmax(self(src, src_mask, tgt_in).float(), dim=-1)

    compilable_step: bool = False  # teacher forcing's step is one fixed graph (no step loop here)

    def compile_step(self) -> bool:
        """Compile teacher forcing's per-position step (`RecurrentTranslationModel.compile_step`);
        False, compiling nothing, for a model without such a loop."""
        return False

    def step_fused_on_cuda(self) -> bool:
        """Whether teacher forcing's step already runs its units as one fused kernel each on a
        GPU, so that ``train.compile_step: auto`` leaves it eager: on an H200 compiling
        RNNSearch-GRU's step (the fused GRU cell twice) halved its training rate, while ATR's,
        DTMT#1's and DTMT#4's gained 1.2-1.3x (results/gpu/, docs/performance.md "On a GPU")."""
        return False

    def reports(self) -> Reports:
        """What analysis may ask this model for beyond ``step``'s extras (`rnmt.models.reports`);
        a model that reports gates or traces overrides this and the methods it names."""
        return Reports()


class RecurrentTranslationModel(TranslationModel):
    """A model whose decoder is a recurrence over target positions.

    ``forward`` (teacher forcing) and ``step`` (decoding) are written here once, in terms of
    three hooks, so a recurrent architecture's file holds only its own equations:

    * ``target_inputs(tokens, positions) -> inputs``: what the decoder reads of the previous
      words y_{j-1}: tokens [B, T] with positions [B, T] in ``forward`` (every position in
      one product), tokens [B] with the step's position in ``step``; e.g. the embedding and
      its projection for the first unit.
    * ``transition(inputs_j, state, memory) -> (state, outputs, extras)``: one decoder step;
      ``outputs`` are the tensors the readout reads (s_j, c_j, ...), ``extras`` what ``step``
      reports (``attention`` [B, S], gates).
    * ``logits(outputs, inputs) -> logits``: the readout, from the stacked outputs and the
      inputs ([B, T, .] in ``forward``, [B, .] in ``step``).

    The state may carry ``position`` (the target position of the next step) when
    ``target_inputs`` needs it (positional encodings); the transition advances it.
    ``step_inputs`` names the inputs the transition reads (the rest go to the readout only).
    """

    step_inputs: Tuple[str, ...] = ("px1",)
    compilable_step: bool = True  # the transition traces into one graph (a data-dependent one says False)
    _compiled_transition = None  # set by compile_step

    def compile_step(self) -> bool:
        """From now on teacher forcing (``forward``) runs each position's ``transition``
        through ``torch.compile``, one graph for every batch shape (``dynamic=True``).

        On a GPU the eager loop launches a few dozen small kernels per target position and
        the update is bound by those launches (docs/performance.md, "On a GPU"); the compiled
        transition fuses their element-wise work into a few kernels, forward and backward.
        Decoding (``step``) is not compiled: beam search replays CUDA graphs of it
        (`rnmt.search.step_graphs`). Returns False, compiling nothing, for a model whose
        transition cannot be one graph. The compiled step computes the same function; its
        dropout draws another random stream and its sums may round differently.
        """
        if not self.compilable_step:
            return False
        self._compiled_transition = torch.compile(self.transition, dynamic=True)
        return True

    def target_inputs(self, tokens: Tensor, positions: Tensor) -> TensorDict:
        raise NotImplementedError

    def transition(self, inputs: TensorDict, state: TensorDict,
                   memory: TensorDict) -> Tuple[TensorDict, TensorDict, TensorDict]:
        raise NotImplementedError

    def logits(self, outputs: TensorDict, inputs: TensorDict) -> Tensor:
        raise NotImplementedError

    offers_step_logits = True

    def step_logits(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> StepLogits:
        position = state.get("position")
        if position is None:
            position = torch.zeros_like(prev_tokens)
        inputs = self.target_inputs(prev_tokens, position)
        state, outputs, extras = self.transition(inputs, state, memory)
        return StepLogits(self.logits(outputs, inputs), state, extras)

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict):
        logits, state, extras, _ = self.step_logits(prev_tokens, state, memory)
        return torch.log_softmax(logits.float(), dim=-1), state, extras

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        memory = self.encode(src, src_mask)
        state = self.init_state(memory)
        positions = torch.arange(tgt_in.size(1), device=tgt_in.device).expand_as(tgt_in)
        inputs = self.target_inputs(tgt_in, positions)  # every target position at once
        per_step = {k: time_steps(inputs[k]) for k in self.step_inputs}
        transition = self._compiled_transition or self.transition
        collected: Dict[str, list] = {}
        for j in range(tgt_in.size(1)):
            state, outputs, _ = transition({k: v[j] for k, v in per_step.items()}, state, memory)
            for k, v in outputs.items():
                collected.setdefault(k, []).append(v)
        return self.logits({k: torch.stack(v, 1) for k, v in collected.items()}, inputs)


class ConditionalDecoderModel(RecurrentTranslationModel):
    """The two-level conditional decoder that dl4mt's RNNSearch, the ATR paper's RNNSearch,
    both Cseq2seq models and DTMT share (Cseq2seq eq. 3-6, ATR eq. 13, DTMT's query and
    decoder transitions):

        s~_j = Unit_1(s_{j-1}, y_{j-1})      the first unit reads the previous word
        c_j  = context(s~_j, memory)          attention, a re-reading RNN, a fixed summary
        s_j  = Unit_2(s~_j, c_j)              the second unit reads the context

    A subclass supplies ``context`` (attention by default). ``target_inputs`` gives ``emb`` (the dropped-out
    ``tgt_embed`` of y_{j-1}) and ``px1``, the first unit's projection of it; a model that
    embeds differently overrides it. ``outputs`` are ``s`` (Unit_2's output) and ``context``.
    """

    def target_inputs(self, tokens: Tensor, positions: Tensor) -> TensorDict:
        emb = self.dropout(self.tgt_embed(tokens))
        return {"emb": emb, "px1": self.first_unit.project_inputs(emb)}

    @property
    def first_unit(self) -> nn.Module:
        return self.unit1

    @property
    def second_unit(self) -> nn.Module:
        return self.unit2

    def context(self, query: Tensor, state: TensorDict, memory: TensorDict) -> Tuple[Tensor, TensorDict]:
        """c_j and the step's extras from s~_j's output. By default the model's ``attention``
        over the memory's ``keys`` and ``annotations``, which reports alpha_j as ``attention``."""
        context, alpha = self.attention(query, memory["keys"], memory["annotations"], memory["src_mask"])
        return context, {"attention": alpha}

    def step_fused_on_cuda(self) -> bool:
        return self.first_unit.fused_step_on_cuda() and self.second_unit.fused_step_on_cuda()

    def second_input(self, context: Tensor, memory: TensorDict) -> Tensor:
        """Unit_2's projected input: the projection of c_j (a model whose context is fixed
        per sentence returns a cached one)."""
        return self.second_unit.project_inputs(context)

    def transition(self, inputs: TensorDict, state: TensorDict, memory: TensorDict):
        unit1, unit2 = self.first_unit, self.second_unit
        s_tilde = unit1.step(inputs["px1"], state["s"])
        context, extras = self.context(unit1.output(s_tilde), state, memory)
        s = unit2.step(self.second_input(context, memory), s_tilde)
        return self.next_state(state, s), {"s": unit2.output(s), "context": context}, extras

    def decoder_trace(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> TensorDict:
        """Teacher-forced decoder internals, for analysis (`rnmt.models.reports`): the
        computation of `forward` with every intermediate kept.

        Returns ``s0`` [B, d_state] (the initial state), and for ``u`` in unit1, unit2:
        ``u.p`` (the unit's projected inputs), ``u.state`` (its state after each step) and
        ``u.<gate>`` (its gates), all [B, J, .]; plus the context's extras per step (e.g.
        ``attention`` [B, J, S]). Unit 1 at step j reads y_{j-1}, unit 2 the context c_j.
        """
        unit1, unit2 = self.first_unit, self.second_unit
        memory = self.encode(src, src_mask)
        state = self.init_state(memory)
        trace = {"s0": state["s"]}
        positions = torch.arange(tgt_in.size(1), device=tgt_in.device).expand_as(tgt_in)
        px1 = self.target_inputs(tgt_in, positions)["px1"]
        rows = []
        for px1_j in time_steps(px1):
            s_tilde, gates1 = unit1.step(px1_j, state["s"], True)
            context, extras = self.context(unit1.output(s_tilde), state, memory)
            px2 = self.second_input(context, memory)
            s, gates2 = unit2.step(px2, s_tilde, True)
            state = self.next_state(state, s)
            row = {"unit1.state": s_tilde, "unit2.p": px2, "unit2.state": s, **extras}
            row.update({f"unit1.{k}": v for k, v in gates1.items()})
            row.update({f"unit2.{k}": v for k, v in gates2.items()})
            rows.append(row)
        for key in (rows[0] if rows else {}):
            trace[key] = torch.stack([r[key] for r in rows], 1)
        trace["unit1.p"] = px1
        return trace

    # -- analysis (`rnmt.models.reports`; not used by training or search) ----------------
    def reports(self) -> Reports:
        """Both directions of a bidirectional recurrent ``encoder`` (none otherwise) and the
        two decoder units."""
        encoder = getattr(self, "encoder", None)
        directions = ({"fwd": encoder.fwd.unit_name, "bwd": encoder.bwd.unit_name}
                      if isinstance(encoder, cells.Bidirectional) else {})
        return Reports(encoder=directions,
                       decoder={"unit1": self.first_unit.unit_name, "unit2": self.second_unit.unit_name})

    def encoder_inputs(self, src: Tensor) -> Tensor:
        """The vectors the encoder units read, as `encode` computes them: the source
        embeddings [B, S, E] (dropout applies in training mode only)."""
        return self.dropout(self.src_embed(src))

    def encoder_gates(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        """Gates of both directions of the encoder in `reports`, [B, S, d] each, keyed
        ``fwd.<gate>`` and ``bwd.<gate>`` (``fwd.i``, ``fwd.f`` for ATR); zero at padding."""
        return self.encoder(self.encoder_inputs(src), src_mask, return_gates=True).gates

    @staticmethod
    def next_state(state: TensorDict, s: Tensor) -> TensorDict:
        """The new state: s_j, and the position advanced when the state keeps one."""
        if "position" in state:
            return {"s": s, "position": state["position"] + 1}
        return {"s": s}


@torch.no_grad()
def reports_attention(model: nn.Module, device: torch.device | str = "cpu") -> bool:
    """Whether ``model``'s decoder step reports attention weights (``extras["attention"]``),
    which alignments and the coverage penalty read: one step on a one-subword source. Seq2seq
    and the cyclic models report none (a re-reading RNN replaces the attention)."""
    was_training = model.training
    model.eval()
    try:
        src = torch.tensor([[model.eos_id]], device=device)
        memory = model.encode(src, torch.ones_like(src, dtype=torch.bool))
        _, _, extras = model.step(torch.tensor([model.bos_id], device=device), model.init_state(memory), memory)
    finally:
        model.train(was_training)
    return "attention" in extras


def time_steps(x: Tensor) -> Tuple[Tensor, ...]:
    """Split [B, T, D] into T tensors [B, D] for a step loop.

    Use this instead of ``x[:, t]`` in a loop that is differentiated: indexing makes the
    backward pass allocate and zero-fill a full-size gradient for every step (quadratic in
    T), while ``unbind``'s backward stacks the step gradients once.
    """
    return x.transpose(0, 1).unbind(0)


def masked_mean(states: Tensor, mask: Tensor) -> Tensor:
    """Mean over real positions: states [B, T, D], mask [B, T] -> [B, D]."""
    m = mask.unsqueeze(-1).to(states.dtype)
    return (states * m).sum(1) / m.sum(1).clamp_min(1.0)


def uniform_init_(module: nn.Module, scale: float) -> None:
    """Uniform initialisation in [-scale, scale] of every parameter (as in the papers' code);
    layer normalisations keep their identity start (gain 1, offset 0) and padding rows of
    embeddings stay zero."""
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(-scale, scale)
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                if m.weight is not None:
                    nn.init.ones_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif hasattr(m, "reset_norm_parameters"):
                m.reset_norm_parameters()
            if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                m.weight[m.padding_idx].zero_()
