"""Behaviour shared by every unit: padding, direction, gradients, options, building by name."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call

from rnmt.cells import CELL_NAMES, Bidirectional, build, run_cell, unit_options
from rnmt.errors import UserError

DX, D = 5, 4


def make(name: str, layer_norm: bool = False, dtype=torch.float64, **options):
    torch.manual_seed(0)
    cell = build(name, DX, D, layer_norm=layer_norm, **options).to(dtype)
    # Non-zero biases and LN offsets so that a misplaced bias cannot hide.
    with torch.no_grad():
        for p in cell.parameters():
            p.add_(torch.rand_like(p) * 0.2 - 0.1)
    return cell.eval()


def padded_batch(lengths, dtype=torch.float64):
    torch.manual_seed(1)
    x = torch.randn(len(lengths), max(lengths), DX, dtype=dtype)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    return x, mask


@pytest.mark.parametrize("layer_norm", [False, True])
@pytest.mark.parametrize("name", CELL_NAMES)
def test_padding_does_not_change_states(name, layer_norm):
    cell = make(name, layer_norm)
    lengths = [5, 3, 1]
    x, mask = padded_batch(lengths)
    x = x.masked_fill(~mask[..., None], 7.0)  # garbage in the padding
    out, last, gates = run_cell(cell, x, mask, return_gates=True)
    for b, n in enumerate(lengths):
        alone, alone_last, alone_gates = run_cell(cell, x[b : b + 1, :n], None, return_gates=True)
        torch.testing.assert_close(out[b, :n], alone[0], rtol=0, atol=1e-12)
        torch.testing.assert_close(last[b], alone_last[0], rtol=0, atol=1e-12)
        assert torch.all(out[b, n:] == 0)
        for k in gates:
            torch.testing.assert_close(gates[k][b, :n], alone_gates[k][0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", CELL_NAMES)
def test_reverse_equals_running_the_flipped_sentence(name):
    cell = make(name)
    lengths = [4, 2]
    x, mask = padded_batch(lengths)
    out, last, _ = run_cell(cell, x, mask, reverse=True)
    for b, n in enumerate(lengths):
        flipped = x[b : b + 1, :n].flip(1)
        alone, alone_last, _ = run_cell(cell, flipped, None)
        torch.testing.assert_close(out[b, :n], alone[0].flip(0), rtol=0, atol=1e-12)
        torch.testing.assert_close(last[b], alone_last[0], rtol=0, atol=1e-12)
        assert torch.all(out[b, n:] == 0)


@pytest.mark.parametrize("name", CELL_NAMES)
def test_initial_state_is_used(name):
    cell = make(name)
    x, mask = padded_batch([3, 2])
    state0 = torch.randn(2, cell.state_size, dtype=torch.float64)
    out0, _, _ = run_cell(cell, x, mask)
    out1, _, _ = run_cell(cell, x, mask, state0=state0)
    assert not torch.allclose(out0[:, 0], out1[:, 0])
    # Step by step by hand gives the same first output.
    first = cell.output(cell.step(cell.project_inputs(x[:, 0]), state0))
    torch.testing.assert_close(out1[:, 0], first)


class _Runner(torch.nn.Module):
    """run_cell as a module, so that torch.func.functional_call can feed it parameters."""

    def __init__(self, cell, mask):
        super().__init__()
        self.cell = cell
        self.mask = mask

    def forward(self, x, state0):
        out, last, _ = run_cell(self.cell, x, self.mask, state0=state0)
        return out, last


@pytest.mark.parametrize("layer_norm", [False, True])
@pytest.mark.parametrize("name", CELL_NAMES)
def test_gradients_pass_gradcheck(name, layer_norm):
    # One T-GRU is enough to check a block's gradients (the depth only repeats it).
    cell = make(name, layer_norm, **({"depth": 1} if name == "transition" else {}))
    x, mask = padded_batch([3, 2])
    runner = _Runner(cell, mask)
    names = [n for n, _ in runner.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for _, p in runner.named_parameters()]
    x.requires_grad_(True)
    state0 = (torch.randn(2, cell.state_size, dtype=torch.float64) * 0.5).requires_grad_(True)

    def fn(x, state0, *params):
        return functional_call(runner, dict(zip(names, params)), (x, state0))

    assert torch.autograd.gradcheck(fn, (x, state0, *params), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("name", CELL_NAMES)
def test_gates_are_returned_per_step_on_request(name):
    cell = make(name)
    x, mask = padded_batch([3, 2])
    out, _, gates = run_cell(cell, x, mask, return_gates=True)
    out_plain, _, none = run_cell(cell, x, mask)
    assert none is None
    torch.testing.assert_close(out, out_plain, rtol=0, atol=0)
    assert set(gates) == set(cell.gate_names)
    assert gates or name == "srnn"  # the Elman unit has no gates
    for value in gates.values():
        assert value.shape == (2, 3, D)


@pytest.mark.parametrize("name", CELL_NAMES)
def test_hidden_size_is_independent_of_input_size(name):
    cell = build(name, 7, 3)
    x = torch.randn(2, 4, 7)
    out, last, _ = run_cell(cell, x, None)
    assert out.shape == (2, 4, 3) and last.shape == (2, cell.state_size)


@pytest.mark.parametrize("name", CELL_NAMES)
def test_dropout_acts_only_in_training(name):
    cell = make(name, dropout=0.5, dtype=torch.float32)
    plain = make(name, dtype=torch.float32)
    x, mask = padded_batch([3, 3], dtype=torch.float32)
    cell.eval()
    torch.testing.assert_close(run_cell(cell, x, mask)[0], run_cell(plain, x, mask)[0])
    cell.train()
    torch.manual_seed(3)
    assert not torch.allclose(run_cell(cell, x, mask)[0], run_cell(plain, x, mask)[0])


def test_bidirectional_concatenates_both_directions():
    fwd, bwd = make("gru"), build("gru", DX, 3).to(torch.float64)
    bi = Bidirectional(fwd, bwd)
    x, mask = padded_batch([4, 2])
    out, last_f, last_b, gates = bi(x, mask, return_gates=True)
    out_f, ref_last_f, _ = run_cell(fwd, x, mask)
    out_b, ref_last_b, _ = run_cell(bwd, x, mask, reverse=True)
    assert out.shape == (2, 4, D + 3) and bi.hidden_size == D + 3
    torch.testing.assert_close(out, torch.cat([out_f, out_b], -1))
    torch.testing.assert_close(last_f, ref_last_f)
    torch.testing.assert_close(last_b, ref_last_b)
    torch.testing.assert_close(last_b, out_b[:, 0])  # backward state at position 0
    assert set(gates) == {"fwd.r", "fwd.z", "bwd.r", "bwd.z"}


def test_unknown_cell_name_is_a_user_error():
    with pytest.raises(UserError, match="unknown cell 'gruu'.*gru"):
        build("gruu", 4, 4)


def test_unknown_option_is_a_user_error_naming_valid_ones():
    with pytest.raises(UserError, match="unknown option 'layernorm'.*layer_norm"):
        build("gru", 4, 4, layernorm=True)


def test_bad_option_values_are_user_errors():
    with pytest.raises(UserError, match="dropout"):
        build("gru", 4, 4, dropout=1.5)
    with pytest.raises(UserError, match="hidden_size"):
        build("gru", 4, 0)


@pytest.mark.parametrize("name", CELL_NAMES)
def test_every_unit_has_the_shared_options(name):
    assert {"layer_norm", "dropout"} <= set(unit_options(name))
