"""The C++ kernels against the PyTorch expressions they replace.

Kernel tests skip only on a machine without a C++ compiler; where there is one, a kernel
build that fails makes them fail (`test_the_kernels_build_where_there_is_a_compiler`).
"""

import sys

import pytest
import torch

from rnmt import kernels
from rnmt.fast import accelerate
from rnmt.fast.scores import _FusedAdditiveScores, additive_scores
from rnmt.modules.attention import AdditiveAttention
from rnmt.modules.multihead import MultiHeadAdditiveAttention
from tests.support import HAVE_COMPILER, needs_kernel

# the kernels against their fallbacks, whatever the execution plan would choose
pytestmark = pytest.mark.usefixtures("kernels_on")


@needs_kernel
def test_the_kernels_build_where_there_is_a_compiler():
    assert HAVE_COMPILER
    assert kernels.extension() is not None, "a C++ compiler is present but the kernels did not build (see stderr)"


def reference(keys, query, v, heads):
    B, S, A = keys.shape
    hidden = torch.tanh(keys + query.unsqueeze(1)).view(B, S, heads, A // heads)
    return (hidden * v.view(heads, A // heads)).sum(-1)


def run_both(keys, query, v, heads, grad):
    results = []
    for fused in (True, False):
        leaves = [t.detach().clone().requires_grad_() for t in (keys, query, v)]
        out = (_FusedAdditiveScores.apply(*leaves, heads) if fused else reference(*leaves, heads))
        out.backward(grad)
        results.append((out.detach(), [t.grad for t in leaves]))
    return results


@needs_kernel
@pytest.mark.parametrize("heads", [1, 2, 4])
def test_fused_scores_match_pytorch_values_and_gradients(heads):
    g = torch.Generator().manual_seed(heads)
    B, S, A = 3, 5, 16
    keys = torch.randn(B, S, A, generator=g) * 2  # reaches the saturated part of tanh
    query, v = torch.randn(B, A, generator=g), torch.randn(A, generator=g)
    grad = torch.randn(B, S, heads, generator=g)
    (fused, fused_grads), (ref, ref_grads) = run_both(keys, query, v, heads, grad)
    assert fused.shape == (B, S, heads)
    torch.testing.assert_close(fused, ref, atol=1e-5, rtol=1e-5)
    for a, b in zip(fused_grads, ref_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@needs_kernel
@pytest.mark.parametrize("heads", [1, 2])
def test_grouped_queries_match_repeated_keys(heads):
    """G queries per sentence (beam search) score against that sentence's keys: the same
    values and gradients as repeating every key row G times."""
    g = torch.Generator().manual_seed(10 + heads)
    B, G, S, A = 3, 4, 5, 8
    keys = torch.randn(B, S, A, generator=g) * 2
    query, v = torch.randn(B * G, A, generator=g), torch.randn(A, generator=g)
    grad = torch.randn(B * G, S, heads, generator=g)
    grouped = [t.detach().clone().requires_grad_() for t in (keys, query, v)]
    out = _FusedAdditiveScores.apply(*grouped, heads)
    out.backward(grad)
    repeated = [t.detach().clone().requires_grad_() for t in (keys, query, v)]
    ref = reference(repeated[0].repeat_interleave(G, 0), repeated[1], repeated[2], heads)
    ref.backward(grad)
    assert out.shape == (B * G, S, heads)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    for a, b in zip(grouped, repeated):
        torch.testing.assert_close(a.grad, b.grad, atol=1e-5, rtol=1e-5)


@needs_kernel
def test_fused_scores_are_exact_at_large_inputs():
    keys = torch.tensor([[[30.0, -30.0, 0.0, 1e-4]]])
    out = additive_scores(keys, torch.zeros(1, 4), torch.ones(4))
    torch.testing.assert_close(out, torch.tanh(keys).sum(-1, keepdim=True), atol=1e-6, rtol=0)
    assert torch.isfinite(out).all()


@needs_kernel
def test_attention_modules_give_the_same_result_with_and_without_kernels():
    torch.manual_seed(0)
    B, S = 4, 6
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 4:] = False
    for module in (accelerate(AdditiveAttention(8, 12)), accelerate(MultiHeadAdditiveAttention(8, 12, 12, heads=3))):
        memory, query = torch.randn(B, S, 12), torch.randn(B, 8)
        outs = []
        for on in (True, False):
            with kernels.use(on):
                context, weights = module(query, module.precompute(memory), memory, mask)
            outs.append((context, weights))
        torch.testing.assert_close(outs[0][0], outs[1][0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(outs[0][1], outs[1][1], atol=1e-5, rtol=1e-5)
        assert float(outs[0][1][1, 4:].detach().abs().sum()) == 0.0


@pytest.mark.parametrize("on", [True, False])
def test_attention_modules_share_keys_across_query_groups(on):
    """K queries per sentence against one memory row give what K copies of the row give."""
    with kernels.use(on):
        _check_shared_keys()


def _check_shared_keys():
    torch.manual_seed(1)
    B, K, S = 3, 4, 6
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[2, 3:] = False
    for module in (accelerate(AdditiveAttention(8, 12)), accelerate(MultiHeadAdditiveAttention(8, 12, 12, heads=3))):
        memory, query = torch.randn(B, S, 12), torch.randn(B * K, 8)
        keys = module.precompute(memory)
        shared = module(query, keys, memory, mask)
        copied = module(query, keys.repeat_interleave(K, 0), memory.repeat_interleave(K, 0),
                        mask.repeat_interleave(K, 0))
        for a, b in zip(shared, copied):
            assert a.shape == b.shape
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_kernels_can_be_switched_off():
    before = kernels.extension()
    with kernels.use(False):
        assert kernels.extension() is None
        keys, query, v = torch.randn(2, 3, 4), torch.randn(2, 4), torch.randn(4)
        torch.testing.assert_close(additive_scores(keys, query, v), reference(keys, query, v, 1))
        with kernels.use(True):
            assert kernels.extension() is before
    assert kernels.extension() is before


def test_fallback_keeps_other_dtypes_out_of_the_kernel():
    keys, query, v = (torch.randn(2, 3, 4, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64),
                      torch.randn(4, dtype=torch.float64))
    out = additive_scores(keys, query, v)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, reference(keys, query, v, 1))


@needs_kernel
@pytest.mark.parametrize("arch", ["rnnsearch", "dtmt"])
def test_model_gradients_agree_with_and_without_kernels(arch):
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    options = dict(attention_heads=2, cell="lgru", options={"enc_depth": 2, "query_depth": 2, "dec_depth": 2}) \
        if arch == "dtmt" else {}
    torch.manual_seed(0)
    model = build_model(ModelConfig(arch=arch, emb_size=8, hidden_size=12, **options), 30, 30)
    g = torch.Generator().manual_seed(3)
    src, tgt = torch.randint(4, 30, (3, 7), generator=g), torch.randint(4, 30, (3, 5), generator=g)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[2, 5:] = False
    grads = []
    for on in (True, False):
        model.zero_grad(set_to_none=True)
        with kernels.use(on):
            logits = model(src, mask, tgt)
            torch.nn.functional.cross_entropy(logits.reshape(-1, 30), tgt.reshape(-1)).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 5
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], atol=1e-5, rtol=1e-4, msg=name)


@needs_kernel
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernels are built with OpenMP on Linux only")
def test_kernel_loops_use_the_threads_torch_is_given():
    """Built without OpenMP, at::parallel_for would run every kernel loop on one thread
    whatever torch.set_num_threads says."""
    module, before = kernels.extension(), torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert module.parallel_threads() == 2
        torch.set_num_threads(1)
        assert module.parallel_threads() == 1
    finally:
        torch.set_num_threads(before)


@needs_kernel
def test_kernel_results_do_not_depend_on_the_thread_count():
    g = torch.Generator().manual_seed(3)
    B, G, S, A = 7, 3, 11, 32
    keys = torch.randn(B, S, A, generator=g)
    query, v = torch.randn(B * G, A, generator=g), torch.randn(A, generator=g)
    grad = torch.randn(B * G, S, 1, generator=g).contiguous()
    module, before, results = kernels.extension(), torch.get_num_threads(), []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append([module.scores_forward(keys, query, v, 1), *module.scores_backward(grad, keys, query, v, 1)])
    finally:
        torch.set_num_threads(before)
    for one, two in zip(*results):
        assert torch.equal(one, two)


@needs_kernel
def test_fused_gru_inference_step_matches_the_pytorch_step():
    from rnmt import cells

    torch.manual_seed(4)
    cell = accelerate(cells.GRU(8, 16)).eval()
    with torch.no_grad():
        cell.bias.uniform_(-1, 1)
        px = cell.project_inputs(torch.randn(5, 7, 8) * 3)[:, 2]  # one time step: strided rows
        state = torch.randn(5, 16)
        fused = cell.step(px, state)
        reference = cell.step(px, state, return_gates=True)[0]  # gates requested: PyTorch expression
    assert px.stride(0) != px.size(1)
    torch.testing.assert_close(fused, reference, atol=1e-6, rtol=1e-6)


@needs_kernel
def test_gru_sweeps_without_a_mask_equal_those_with_a_mask_of_ones():
    # The unmasked sweeps read no mask (a null one once cost a fault-suppression assist per
    # vector, benchmarks/gates_kernel.py); their results must be the masked sweeps' exactly.
    ext = kernels.extension()
    torch.manual_seed(5)
    px, rec, state, grad = torch.randn(9, 48), torch.randn(9, 48), torch.randn(9, 16), torch.randn(9, 16)
    ones = torch.ones(9, 16)
    assert torch.equal(ext.gru_gates_inference(px, rec, state, None), ext.gru_gates_inference(px, rec, state, ones))
    new, saved = ext.gru_gates_forward(px, rec, state, None)
    new_ones, saved_ones = ext.gru_gates_forward(px, rec, state, ones)
    assert torch.equal(new, new_ones) and torch.equal(saved, saved_ones)
    for plain, masked in zip(ext.gru_gates_backward(grad, state, saved, None),
                             ext.gru_gates_backward(grad, state, saved, ones)):
        assert torch.equal(plain, masked)


@needs_kernel
def test_gru_sweeps_read_bf16_projections_as_their_exact_float32_values():
    # Under CPU bf16 autocast the products come as bf16; the sweeps read them directly, with
    # the same results as on their float32 copies, and autograd hands back bf16 gradients
    # that are the float32 ones rounded (what the cast's backward gave before).
    from rnmt.fast.cells import _FusedGates

    ext = kernels.extension()
    torch.manual_seed(6)
    px16, rec16 = torch.randn(7, 7, 48).bfloat16()[:, 3], torch.randn(7, 48).bfloat16()  # px: strided rows
    state, grad = torch.randn(7, 16), torch.randn(7, 16)
    for p, r in ((px16, rec16), (px16, rec16.float()), (px16.float(), rec16)):
        assert torch.equal(ext.gru_gates_inference(p, r, state, None),
                           ext.gru_gates_inference(p.float(), r.float(), state, None))
        new, saved = ext.gru_gates_forward(p, r, state, None)
        new32, saved32 = ext.gru_gates_forward(p.float(), r.float(), state, None)
        assert torch.equal(new, new32) and torch.equal(saved, saved32)
    px, rec = px16.clone().requires_grad_(), rec16.clone().requires_grad_()
    _FusedGates.apply(px, rec, state, None).backward(grad)
    px32, rec32 = px16.float().requires_grad_(), rec16.float().requires_grad_()
    _FusedGates.apply(px32, rec32, state, None).backward(grad)
    assert px.grad.dtype == rec.grad.dtype == torch.bfloat16
    assert torch.equal(px.grad, px32.grad.bfloat16()) and torch.equal(rec.grad, rec32.grad.bfloat16())
    with pytest.raises(RuntimeError, match="float32 or bfloat16 projections"):
        ext.gru_gates_inference(px16.half(), rec16, state, None)


@needs_kernel
def test_layer_norm_sweep_refuses_a_linear_term_without_three_gates():
    ext = kernels.extension()
    d = 4
    px, rec, state = torch.randn(3, 4 * d), torch.randn(3, 3 * d), torch.randn(3, d)
    gain, offset, bias = torch.ones(2 * d), torch.zeros(2 * d), torch.zeros(d)
    with pytest.raises(RuntimeError, match="linear term needs the projected input and 3 gates"):
        ext.ln_gates_forward(px, rec, state, gain, offset, bias, 2, True, 1.0, 0, 0)


def test_fused_gru_step_is_left_out_where_it_does_not_apply():
    from rnmt import cells

    cell = accelerate(cells.GRU(4, 6))
    px, state = torch.randn(2, 18), torch.randn(2, 6)
    assert accelerate(cells.GRU(4, 6, layer_norm=True))._fused_applies(px, state) is False
    assert not cell._fused_applies(px.double(), state.double())
    assert not cell._fused_applies(torch.randn(18, 2).t(), state)  # rows not dense
    assert not cell._fused_applies(px.bfloat16(), state)  # bf16 only under autocast (cast up there)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert cell._fused_applies(px.bfloat16(), state.bfloat16()) == (kernels.extension() is not None)
    assert cell._fused_applies(px, state) == (kernels.extension() is not None)


def _pytorch_gru_step(cell, px, state):
    """The cell's PyTorch expression (asking for the gates takes that path)."""
    return cell.step(px, state, return_gates=True)[0]


@needs_kernel
def test_fused_gru_training_step_matches_pytorch_values_and_gradients():
    from rnmt import cells

    torch.manual_seed(5)
    cell = accelerate(cells.GRU(8, 16)).train()
    with torch.no_grad():
        cell.bias.uniform_(-1, 1)
    x = (torch.randn(5, 7, 8) * 2).requires_grad_()
    state0 = torch.randn(5, 16, requires_grad=True)
    grads, outs = [], []
    for fused in (True, False):
        px = cell.project_inputs(x)[:, 2]  # strided rows of one time step
        state = state0 * 1.0
        for _ in range(3):  # the state's gradient flows through the recurrent product too
            state = cell.step(px, state) if fused else _pytorch_gru_step(cell, px, state)
        loss = (state * torch.linspace(-1, 1, 16)).sum()
        outs.append(state.detach())
        grads.append(torch.autograd.grad(loss, [x, state0, cell.weight_x, cell.weight_h, cell.bias]))
    torch.testing.assert_close(outs[0], outs[1], atol=1e-6, rtol=1e-6)
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-5)


@needs_kernel
def test_fused_gru_training_step_applies_candidate_dropout_like_the_pytorch_step():
    from rnmt import cells

    torch.manual_seed(6)
    cell = accelerate(cells.GRU(8, 16, dropout=0.5)).train()
    px = torch.randn(4, 48, requires_grad=True)
    state = torch.randn(4, 16, requires_grad=True)
    torch.manual_seed(7)
    fused = cell.step(px, state)
    torch.manual_seed(7)
    mask = torch.empty(4, 16).bernoulli_(0.5).div_(0.5)  # the draw the fused step makes
    with torch.no_grad():
        assert cell._fused_applies(px, state)
    d = 16
    rec = state @ cell.weight_h + cell.bias
    r = torch.sigmoid(px[:, :d] + rec[:, :d])
    z = torch.sigmoid(px[:, d:2 * d] + rec[:, d:2 * d])
    candidate = torch.tanh(px[:, 2 * d:] + r * rec[:, 2 * d:]) * mask
    reference = (1 - z) * state + z * candidate
    torch.testing.assert_close(fused, reference, atol=1e-6, rtol=1e-6)
    assert 0 < int((mask == 0).sum()) < mask.numel()  # some units dropped, some kept
    g = torch.randn(4, 16)
    a = torch.autograd.grad(fused, [px, state, cell.weight_h], g)
    b = torch.autograd.grad(reference, [px, state, cell.weight_h], g)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, atol=2e-5, rtol=1e-5)
    with torch.no_grad():  # train mode without autograd still drops
        torch.manual_seed(7)
        torch.testing.assert_close(cell.step(px, state), reference, atol=1e-6, rtol=1e-6)


def _bidirectional_both_ways(bi, x, mask, scope):
    """(outputs, last states, gradients) with the directions in lockstep and one after the other."""
    from rnmt.deferred_grads import deferred_weight_grads

    results = []
    unit = type(bi.fwd)
    for lockstep in (True, False):
        original = unit.lockstep
        if not lockstep:
            unit.lockstep = lambda self, other, like: None
        try:
            with deferred_weight_grads(scope):
                out, last_f, last_b, _ = bi(x, mask)
            loss = out.pow(2).sum() + (last_f * torch.linspace(-1, 1, last_f.size(1))).sum() + 2 * last_b.sum()
            grads = torch.autograd.grad(loss, [x, *bi.parameters()])
        finally:
            unit.lockstep = original
        results.append((out, last_f, last_b, grads))
    return results


BIDIRECTIONAL_UNITS = [("gru", {}), ("gru", {"layer_norm": True}),
                       ("transition", {"layer_norm": True, "bottom": "lgru", "depth": 2})]  # DTMT's encoder


@needs_kernel
@pytest.mark.parametrize("scope", [False, True])
@pytest.mark.parametrize("name,options", BIDIRECTIONAL_UNITS)
def test_bidirectional_lockstep_equals_the_two_directions_one_after_the_other(scope, name, options):
    from rnmt import cells

    torch.manual_seed(8)
    bi = accelerate(cells.Bidirectional(cells.build(name, 6, 8, **options), cells.build(name, 6, 8, **options)))
    with torch.no_grad():
        for p in bi.parameters():  # away from the initial values, so every term matters
            p.add_(torch.randn_like(p) * 0.3)
    assert bi.fwd.lockstep(bi.bwd, torch.zeros(1)) is not None
    x = torch.randn(3, 5, 6, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]], dtype=torch.bool)
    (out, last_f, last_b, grads), (out2, last_f2, last_b2, grads2) = _bidirectional_both_ways(bi, x, mask, scope)
    torch.testing.assert_close(out, out2, atol=1e-6, rtol=1e-6)
    assert torch.all(out[2, 2:] == 0)  # padding stays zero in both directions
    torch.testing.assert_close(last_f, last_f2, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(last_b, last_b2, atol=1e-6, rtol=1e-6)
    for a, b in zip(grads, grads2):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    with torch.no_grad():  # decoding's encoder: the inference sweep, same values
        torch.testing.assert_close(bi(x, mask)[0], out2, atol=1e-6, rtol=1e-6)


def test_lockstep_is_left_to_units_that_can_share_a_step():
    from rnmt import cells

    x = torch.randn(2, 3, 4)
    assert accelerate(cells.GRU(4, 6)).lockstep(accelerate(cells.GRU(4, 7)), x) is None  # sizes differ
    assert accelerate(cells.GRU(4, 6)).lockstep(accelerate(cells.GRU(4, 6, layer_norm=True)), x) is None
    assert accelerate(cells.GRU(4, 6, layer_norm=True)).lockstep(accelerate(cells.GRU(4, 6)), x) is None
    assert accelerate(cells.TGRU(6, 6, layer_norm=True)).lockstep(accelerate(cells.TGRU(6, 6)), x) is None
    deep = [accelerate(cells.build("transition", 4, 6, layer_norm=True, depth=k)) for k in (1, 2)]
    assert deep[0].lockstep(deep[1], x) is None  # depths differ
    shallow = [accelerate(cells.build("transition", 4, 6, depth=1)) for _ in range(2)]
    assert shallow[0].lockstep(shallow[1], x) is None
    assert accelerate(cells.GRU(4, 6)).lockstep(accelerate(cells.GRU(4, 6, dropout=0.1)), x) is None
    assert accelerate(cells.GRU(4, 6)).lockstep(accelerate(cells.GRU(4, 6)), x.double()) is None
    assert cells.LSTM(4, 6).lockstep(cells.LSTM(4, 6), x) is None  # no lockstep step (the default)


LN_UNITS = [("gru", 48), ("tgru", 0), ("lgru", 80)]  # unit, projected input width (d = 16)


def _ln_unit(name, dropout=0.0):
    from rnmt import cells

    cell = accelerate(cells.build(name, 8, 16, layer_norm=True, dropout=dropout)).train()
    with torch.no_grad():  # away from the initial values, so every term matters
        cell.bias.uniform_(-1, 1)
        cell.gate_norm.gain.uniform_(0.5, 1.5)
        cell.gate_norm.offset.uniform_(-0.5, 0.5)
    return cell


def _step_and_grads(cell, px, state, fused, mask=None):
    """The unit's step and the gradients of a weighted sum of it, through the C++ sweep or
    the PyTorch expression (optionally with a given candidate dropout mask)."""
    from rnmt.fast import ln_gates

    applies, drop = ln_gates.applies, cell.drop_candidate
    if not fused:
        ln_gates.applies = lambda *args: False
        if mask is not None:
            cell.drop_candidate = lambda candidate: candidate * mask
    try:
        new = cell.step(px, state)
        inputs = [t for t in (px, state, *cell.parameters()) if t.requires_grad]
        grads = torch.autograd.grad((new * torch.linspace(-1, 1, new.size(1))).sum(), inputs, allow_unused=True)
    finally:
        ln_gates.applies, cell.drop_candidate = applies, drop
    return new, grads


@needs_kernel
@pytest.mark.parametrize("name,width", LN_UNITS)
def test_layer_normalised_units_fused_step_matches_pytorch(name, width):
    torch.manual_seed(9)
    cell = _ln_unit(name)
    px = torch.randn(5, width, requires_grad=width > 0)
    state = torch.randn(5, 16, requires_grad=True)
    new, grads = _step_and_grads(cell, px, state, fused=True)
    ref, ref_grads = _step_and_grads(cell, px, state, fused=False)
    torch.testing.assert_close(new, ref, atol=1e-6, rtol=1e-6)
    for a, b in zip(grads, ref_grads):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    with torch.no_grad():  # decoding: the same sweep without the autograd node
        torch.testing.assert_close(cell.eval().step(px, state), ref, atol=1e-6, rtol=1e-6)


@needs_kernel
@pytest.mark.parametrize("name,width", LN_UNITS)
def test_layer_norm_sweeps_read_bf16_products_as_their_exact_float32_values(name, width):
    # As the GRU's sweeps (above): under CPU bf16 autocast the projected input and the
    # recurrent product come as bf16 and are read widened, with the float32 copies' results
    # (dropout included: the backward draws the same hashed mask), and autograd hands back
    # bf16 gradients that are the float32 ones rounded.
    from rnmt.fast.ln_gates import ln_gates

    torch.manual_seed(12)
    cell = _ln_unit(name, dropout=0.3)
    gates = cell.gate_norm.num_gates
    px16 = torch.randn(6, 2, width).bfloat16()[:, 1] if width else None  # strided rows
    rec16 = torch.randn(6, (gates + 1) * 16).bfloat16()
    state, grad = torch.randn(6, 16), torch.randn(6, 16)
    linear = name == "lgru"

    def run(px, rec):
        leaves = [t.clone().requires_grad_() for t in (px, rec) if t is not None]
        torch.manual_seed(13)  # the dropout seed
        new = ln_gates(cell, leaves[0] if px is not None else None, leaves[-1], state, linear)
        new.backward(grad)
        return new.detach(), [t.grad for t in leaves]

    new16, grads16 = run(px16, rec16)
    new32, grads32 = run(None if px16 is None else px16.float(), rec16.float())
    assert torch.equal(new16, new32)
    for g16, g32 in zip(grads16, grads32):
        assert g16.dtype == torch.bfloat16 and torch.equal(g16, g32.bfloat16())
    with torch.no_grad():  # decoding's sweep, without the autograd node
        torch.manual_seed(13)
        assert torch.equal(ln_gates(cell, px16, rec16, state, linear), new32)
    # the kernel itself takes the bf16 tensors (no float32 copy made on the way)
    norm, ext = cell.gate_norm, kernels.extension()
    args = (state, norm.gain, norm.offset, cell.bias, gates, linear, 0.7, 5, 0)
    for a16, a32 in zip(ext.ln_gates_forward(px16, rec16, *args),
                        ext.ln_gates_forward(None if px16 is None else px16.float(), rec16.float(), *args)):
        assert torch.equal(a16, a32)


@needs_kernel
@pytest.mark.parametrize("name,width", LN_UNITS)
def test_layer_normalised_units_hashed_dropout_is_a_scaled_bernoulli_mask(name, width):
    """From a zero state h' = z * m * h~, so the mask is h' (dropout) / h' (none)."""
    torch.manual_seed(10)
    cell = _ln_unit(name, dropout=0.3)
    px = torch.randn(64, width, requires_grad=width > 0)
    state = torch.zeros(64, 16, requires_grad=True)
    torch.manual_seed(11)
    dropped, grads = _step_and_grads(cell, px, state, fused=True)
    torch.manual_seed(11)
    again, _ = _step_and_grads(cell, px, state, fused=True)
    other, _ = _step_and_grads(cell, px, state, fused=True)  # the generator has moved on
    cell.dropout = 0.0
    full, _ = _step_and_grads(cell, px, state, fused=True)
    cell.dropout = 0.3
    mask = (dropped / full).detach()
    kept = mask != 0
    torch.testing.assert_close(mask[kept], torch.full_like(mask[kept], 1 / 0.7))
    assert abs(1 - kept.float().mean().item() - 0.3) < 0.05  # 1,024 units
    assert torch.equal(dropped, again) and not torch.equal(dropped, other)
    # The backward sweep draws the same mask again: gradients equal PyTorch's with that mask.
    _, ref_grads = _step_and_grads(cell, px, state, fused=False, mask=mask)
    for a, b in zip(grads, ref_grads):
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    with torch.no_grad():  # evaluation mode never drops
        torch.testing.assert_close(cell.eval().step(px, state), full, atol=1e-6, rtol=1e-6)
