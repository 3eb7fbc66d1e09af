"""The GRU on a GPU through PyTorch's fused CUDA cell and cuDNN's recurrent layer.

On a GPU the time loop's cost is the number of kernels launched, not arithmetic: at the
peer size an RNNSearch-GRU update launched about 7,000 kernels and kept the H100 busy 5%
of the time (results/gpu/, docs/performance.md "On a GPU"). rnmt's GRU (`rnmt.cells.gru`)
is the unit cuDNN implements, reset gate on the recurrent product included
(DTMT eq. 7), so two of PyTorch's own GPU paths compute it exactly:

* one step: ``aten::_thnn_fused_gru_cell`` (what ``nn.GRUCell`` runs on CUDA) takes the
  step's projected input and recurrent product and does eq. 6-9's element-wise part in one
  kernel, and its backward in one;
* a bidirectional encoder layer: ``torch._VF.gru`` over a packed batch (what ``nn.GRU``
  runs; cuDNN on CUDA), both directions in one call;
* the cyclic models' re-reading of the source at every target step (Cseq2seq eq. 7, 9):
  the same call, one direction, from the decoder's query.

The one difference is a mirrored update gate: cuDNN writes ``h' = (1 - u) * n + u * h``,
rnmt ``h' = (1 - z) * h + z * h~`` (DTMT eq. 6), so ``u = 1 - z = sigma(-a_z)``: the
z-blocks of the pre-activations (and of the matrices and bias feeding them) enter with
their sign flipped. Biases go where the unit has them: inside the reset with the
recurrent product (``reset_bias``, the DTMT form) or with the input projection (dl4mt's
``gru_layer``). Packed sequences reproduce rnmt's padding rule (SPEC section 0): each
sentence's forward direction stops at its last token, the backward one starts there from
zero, outputs at padded positions are zero.

Where they apply: a CUDA tensor, no gate layer norm, no int8 twins, no candidate dropout
in training, and for the encoder a prefix mask without empty sentences; both run in fp32
with autocast off (the CPU's fused kernel does the same), so the state stays fp32 under
bf16 autocast as in the PyTorch expressions. cuDNN's fp32 follows
``torch.backends.cudnn.allow_tf32`` (PyTorch's default allows TF32 there). On the CPU
nothing changes: the C++ kernels of `rnmt.kernels` stay the fast path and every result is
as before. ``with gru_cuda.use(False): ...`` turns both paths off (for comparisons);
``use("everywhere")`` runs them on the CPU too, the step through a PyTorch expression of
cuDNN's convention, which is how the sign and bias mapping is tested without a GPU.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Tuple, Union

import torch
from torch import Tensor
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from rnmt.fast import host_reads

_mode: Union[bool, str] = True  # True: on CUDA tensors; False: never; "everywhere": CPU too


@contextmanager
def use(mode: Union[bool, str]) -> Iterator[None]:
    """Within the block the GPU paths are on (True, the default), off (False), or also taken
    on the CPU ("everywhere", for tests). Restored on exit; process-wide."""
    global _mode
    if mode not in (True, False, "everywhere"):
        raise ValueError(f"gru_cuda.use: True, False or 'everywhere', got {mode!r}")
    before, _mode = _mode, mode
    try:
        yield
    finally:
        _mode = before


def _device_ok(t: Tensor) -> bool:
    return (_mode is True and t.is_cuda) or _mode == "everywhere"


def _unit_ok(cell) -> bool:
    return (getattr(cell, "gate_norm", True) is None and cell.int8_h is None and cell.int8_x is None
            and (cell.dropout == 0.0 or not cell.training))


def fuses(cell) -> bool:
    """The fused CUDA step will run ``cell``'s steps on a GPU as it is configured now
    (training mode included): for the choice of ``train.compile_step: auto``."""
    return _mode is not False and _unit_ok(cell)


def step_applies(cell, px: Tensor, state: Tensor) -> bool:
    """The fused CUDA step computes ``cell.step(px, state)`` here."""
    return fuses(cell) and _device_ok(state)


_SIGNS: Dict[Tuple[int, torch.device], Tensor] = {}


def _signs(cell, device: torch.device) -> Tensor:
    """fp32 [1 (r), -1 (z), 1 (h)] blocks of the unit's width on ``device`` (made once per
    width and device: a step must not launch kernels to build it)."""
    d = cell.hidden_size
    signs = _SIGNS.get((d, device))
    if signs is None:
        signs = torch.ones(3 * d, device=device)
        signs[d:2 * d] = -1.0
        _SIGNS[(d, device)] = signs
    return signs


def fused_step(cell, px: Tensor, rec: Tensor, state: Tensor) -> Tensor:
    """h' (DTMT eq. 6-9) from the step's projected input ``px`` and recurrent product ``rec``
    (each [N, 3d], the unit's bias already in one of them) and ``h`` [N, d], in fp32."""
    signs = _signs(cell, state.device)
    with _autocast_off(state):
        gates_x = px.float() * signs
        gates_h = rec.float() * signs
        h = state.float().contiguous()
        if h.is_cuda:
            return torch.ops.aten._thnn_fused_gru_cell(gates_x, gates_h, h)[0]
        return _cudnn_convention(gates_x, gates_h, h)


def _cudnn_convention(gates_x: Tensor, gates_h: Tensor, h: Tensor) -> Tensor:
    """The fused cell's arithmetic as PyTorch expressions (the CPU stand-in for tests):
    r, u = sigma(x_ru + h_ru); n = tanh(x_n + r * h_n); h' = n + u * (h - n)."""
    d = h.size(-1)
    x_ru, x_n = gates_x.split((2 * d, d), -1)
    h_ru, h_n = gates_h.split((2 * d, d), -1)
    r, u = torch.sigmoid(x_ru + h_ru).chunk(2, -1)
    n = torch.tanh(x_n + r * h_n)
    return n + u * (h - n)


def bidirectional_applies(fwd, bwd, x: Tensor) -> bool:
    """Both directions of a bidirectional layer are plain GRUs of one size on ``x``'s device."""
    from rnmt.fast.cells import FastGRU

    return (_mode is not False and host_reads.allowed() and _device_ok(x) and type(fwd) is FastGRU
            and type(bwd) is FastGRU
            and _unit_ok(fwd) and _unit_ok(bwd) and fwd.hidden_size == bwd.hidden_size
            and x.dim() == 3 and x.size(0) > 0 and x.size(1) > 0)


def _layer_weights(cell, signs: Tensor) -> List[Tensor]:
    """One direction's [W_ih, W_hh, b_ih, b_hh] in cuDNN's layout ([3d, in] matrices, gates
    in the order r, u, n), the z-blocks negated."""
    w_ih = (cell.weight_x.float() * signs).t().contiguous()  # cuDNN views each weight as one block
    w_hh = (cell.weight_h.float() * signs).t().contiguous()
    bias = cell.bias.float() * signs
    zero = torch.zeros_like(bias)
    return [w_ih, w_hh, bias, zero] if cell.input_bias else [w_ih, w_hh, zero, bias]


def prefix_lengths(mask: Tensor) -> Optional[Tensor]:
    """The sentence lengths of a [B, T] boolean mask, on the host (packing wants them there),
    or None where cuDNN cannot run it: a mask that is not a prefix of each row, or an empty
    sentence."""
    lengths_dev = mask.sum(1)
    prefix = torch.arange(mask.size(1), device=mask.device) < lengths_dev.unsqueeze(1)
    lengths = lengths_dev.cpu()
    if bool((lengths == 0).any()) or not torch.equal(prefix, mask):
        return None
    return lengths


def run_bidirectional(fwd, bwd, x: Tensor, mask: Optional[Tensor]) -> Optional[Tuple[Tensor, Tensor, Tensor]]:
    """(outputs [B, T, 2d], the forward unit's last state, the backward unit's last state) as
    `rnmt.cells.runner.Bidirectional` computes them, in one cuDNN call; None where the mask
    is not a prefix mask or a sentence is empty (then the time loop runs)."""
    batch, length, _ = x.shape
    if mask is None:
        lengths = torch.full((batch,), length, dtype=torch.long)
    else:
        lengths = prefix_lengths(mask.to(torch.bool))
        if lengths is None:
            return None
    signs = _signs(fwd, x.device)
    weights = _layer_weights(fwd, signs) + _layer_weights(bwd, signs)
    with _autocast_off(x):
        packed = pack_padded_sequence(x.float(), lengths, batch_first=True, enforce_sorted=False)
        h0 = x.new_zeros(2, batch, fwd.hidden_size, dtype=torch.float32)
        with warnings.catch_warnings():
            # the weights are built per call, so cuDNN copies them into its own buffer
            warnings.filterwarnings("ignore", message="RNN module weights are not part")
            data, h_n = torch._VF.gru(packed.data, packed.batch_sizes, h0, weights, True, 1, 0.0,
                                      torch.is_grad_enabled(), True)
    out, _ = pad_packed_sequence(PackedSequence(data, packed.batch_sizes, packed.sorted_indices,
                                                packed.unsorted_indices), batch_first=True, total_length=length)
    h_n = h_n.index_select(1, packed.unsorted_indices)
    return out, h_n[0], h_n[1]


class _SourceOrder:
    """What packing a source mask needs, computed once per mask: its lengths sorted longest
    first on the host, and the row order to and from that on the device."""

    def __init__(self, mask: Tensor) -> None:
        lengths = prefix_lengths(mask)
        self.ok = lengths is not None
        if lengths is None:
            return
        self.lengths, order = torch.sort(lengths, descending=True)
        self.sorted = order.to(mask.device)
        self.unsorted = torch.empty_like(self.sorted)
        self.unsorted[self.sorted] = torch.arange(len(order), device=mask.device)


# The last source mask `run_over_source` saw and its order, one tuple so that threads (a
# server decoding in several) replace it whole. The cyclic models pass the same mask at
# every target step: reading its lengths back from the GPU each time would synchronise, and
# a step recorded into a CUDA graph must not copy to or from the host at all.
_last_order: Tuple[Optional[Tensor], Optional[_SourceOrder]] = (None, None)


def _source_order(mask: Tensor) -> _SourceOrder:
    global _last_order
    cached_mask, cached = _last_order
    if cached_mask is mask and cached is not None:
        return cached
    order = _SourceOrder(mask)
    _last_order = (mask, order)
    return order


def source_applies(cell, px_src: Tensor) -> bool:
    """``cell`` is a plain GRU on ``px_src``'s device (the cyclic models' re-reading unit)."""
    from rnmt.fast.cells import FastGRU

    return (_mode is not False and host_reads.allowed() and _device_ok(px_src) and type(cell) is FastGRU
            and _unit_ok(cell)
            and px_src.dim() == 3 and px_src.size(0) > 0 and px_src.size(1) > 0)


def run_over_source(cell, px_src: Tensor, src_mask: Tensor, state: Tensor, mode: str) -> Optional[Tensor]:
    """The Cseq2seq re-reading (`rnmt.models.cseq2seq.cyclic_context`) in one cuDNN call: the
    unit run over every source position from ``state`` ([B, d]), each row stopping at its
    sentence's last token, then the mean of its outputs ("mean") or its last state ("last").
    None where the mask is not a prefix mask or a sentence is empty (the loop runs then).

    The inputs are the cached projections ``px_src`` [B, S, 3d] (the input bias already in
    them where the unit has it there), so cuDNN's input matrix is the identity with the
    z-block negated, and only the recurrent bias (DTMT eq. 7's form) is passed."""
    if src_mask.dtype != torch.bool:
        src_mask = src_mask.to(torch.bool)
    order = _source_order(src_mask)
    if not order.ok:
        return None
    signs = _signs(cell, px_src.device)
    w_ih = torch.diag(signs)  # [3d, 3d]: cuDNN reads px as its input
    w_hh = (cell.weight_h.float() * signs).t().contiguous()
    zero = torch.zeros_like(signs)
    b_hh = zero if cell.input_bias else cell.bias.float() * signs
    with _autocast_off(px_src):
        x = px_src.float().index_select(0, order.sorted)
        data, batch_sizes = torch._VF._pack_padded_sequence(x, order.lengths, True)
        h0 = state.float().index_select(0, order.sorted).unsqueeze(0).contiguous()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="RNN module weights are not part")
            data, h_n = torch._VF.gru(data, batch_sizes, h0, [w_ih, w_hh, zero, b_hh], True, 1, 0.0,
                                      torch.is_grad_enabled(), False)
    if mode == "last":
        return h_n[0].index_select(0, order.unsorted)
    out, _ = torch._VF._pad_packed_sequence(data, batch_sizes, True, 0.0, px_src.size(1))
    return out.sum(1).index_select(0, order.unsorted) / src_mask.sum(1, keepdim=True).to(out.dtype)


@contextmanager
def _autocast_off(like: Tensor) -> Iterator[None]:
    if torch.is_autocast_enabled(like.device.type):
        with torch.autocast(like.device.type, enabled=False):
            yield
    else:
        yield
