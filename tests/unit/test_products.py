"""fp32 CPU products through oneDNN (rnmt/products.py) against PyTorch's own operations."""

import pytest
import torch

from rnmt import int8, kernels, products
from tests.unit.test_deferred_grads import ARCHS, gradients, tiny_model_and_batch

pytestmark = pytest.mark.skipif(kernels.extension() is None or not torch.backends.mkldnn.is_available(),
                                reason="needs the C++ kernels and PyTorch's oneDNN")


def close(got, want):
    torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-5)


def operands(*shapes):
    g = torch.Generator().manual_seed(sum(sum(s) for s in shapes))
    return [torch.randn(*s, generator=g) for s in shapes]


def test_products_equal_pytorchs_for_every_form_the_step_functions_use():
    a, b, bias, rows = operands((7, 16), (16, 24), (24,), (7, 24))
    with products.use(True):
        assert products.active()
        close(products.mm(a, b), a @ b)
        close(products.mm(a, b.t().contiguous().t()), a @ b)  # a transposed view
        close(products.addmm(bias, a, b), torch.addmm(bias, a, b))
        close(products.addmm(rows, a, b), torch.addmm(rows, a, b))
        out = rows.clone()
        assert products.add_product_(out, a, b) is out
        close(out, rows + a @ b)
        x, w, gbias = operands((3, 7, 16), (3, 16, 24), (3, 1, 24))
        close(products.mm(x, w), torch.bmm(x, w))
        close(products.addmm(gbias, x, w), torch.baddbmm(gbias, x, w))
        buffer = torch.zeros(3, 16, 24)
        products.add_product_(buffer, x.transpose(1, 2), products.mm(x, w))
        close(buffer, torch.bmm(x.transpose(1, 2), torch.bmm(x, w)))
        y, v = operands((2, 3, 5, 16), (2, 3, 16, 4))
        close(products.matmul(y, v), torch.matmul(y, v))
        close(products.matmul(x, b), torch.matmul(x, b))  # rows of any leading shape through one matrix
        empty = products.mm(torch.randn(4, 0), torch.randn(0, 6))
        assert empty.shape == (4, 6) and not empty.any()


def test_what_onednn_does_not_take_goes_to_pytorch_unchanged():
    a, b = operands((5, 8), (8, 6))
    with products.use(True):
        assert products.mm(a.bfloat16(), b.bfloat16()).dtype == torch.bfloat16
        assert torch.equal(products.mm(a.double(), b.double()), a.double() @ b.double())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert products.mm(a, b).dtype == torch.bfloat16  # as autocast would have run torch.mm
        leaf = a.clone().requires_grad_()
        out = products.mm(leaf, b)  # autograd must follow: PyTorch's differentiable mm
        assert out.grad_fn is not None and torch.equal(out, torch.mm(leaf, b))
    with products.use(False):
        assert not products.active()
        assert torch.equal(products.mm(a, b), torch.mm(a, b))


@pytest.mark.parametrize("transposed", [True, False])
def test_linear_gives_pytorchs_values_and_gradients(transposed):
    x, w, bias = operands((2, 5, 8), (6, 8) if transposed else (8, 6), (6,))
    grads = []
    for on in (True, False):
        leaves = [t.clone().requires_grad_() for t in (x, w, bias)]
        with products.use(on):
            y = products.linear(*leaves, transposed=transposed)
        assert (y.grad_fn is not None) and (type(y.grad_fn).__name__ == "_ProductBackward") is on
        (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
        grads.append((y.detach(), *(t.grad for t in leaves)))
    for got, want in zip(*grads):
        close(got, want)


def test_linear_module_is_nn_linear_with_the_same_state_and_can_be_made_plain():
    torch.manual_seed(0)
    layer = products.Linear(8, 6)
    reference = torch.nn.Linear(8, 6)
    reference.load_state_dict(layer.state_dict())
    x = torch.randn(4, 8)
    with products.use(True):
        close(layer(x), reference(x))
    holder = torch.nn.Sequential(layer)
    products.plain_linears(holder)
    assert type(holder[0]) is torch.nn.Linear and holder[0].weight is layer.weight and holder[0].bias is layer.bias


@pytest.mark.parametrize("name", sorted(ARCHS))
def test_model_gradients_with_onednn_are_those_with_the_blas(name):
    """Every architecture's training pass, with deferred weight gradients (the products of all
    steps stacked into one) and with plain autograd, against PyTorch's BLAS products."""
    model, src, mask, tgt = tiny_model_and_batch(name)
    mask[2, 5:] = False
    with products.use(False):
        blas = gradients(model, src, mask, tgt, False)
    with products.use(True):
        for deferred in (True, False):
            got = gradients(model, src, mask, tgt, deferred)
            assert got.keys() == blas.keys()
            for n in blas:
                torch.testing.assert_close(got[n], blas[n], atol=1e-5, rtol=1e-4, msg=n)


def test_int8_quantisation_takes_the_models_linear_layers():
    model, src, mask, _ = tiny_model_and_batch("rnnsearch")
    assert any(type(m) is products.Linear for m in model.modules())
    int8.quantize_for_decoding(model)
    kinds = {type(m).__name__ for m in model.modules()}
    assert "Linear" in kinds and not any(type(m) is products.Linear for m in model.modules())
    assert any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in model.modules())


def test_the_plan_decides_unless_a_block_switches(monkeypatch):
    """`set_choice` (the execution plan's fp32_products) decides for the process; the
    environment variable that did before changes nothing; `use` switches within a block."""
    from rnmt import hardware

    try:
        products.set_choice(False)
        monkeypatch.setenv("RNMT_ONEDNN_PRODUCTS", "1")
        assert not products.active()
        products.set_choice(True)
        assert products.active() == products._available()
        products.set_choice(None)  # back to the CPU rule, whatever the environment says
        assert products.active() == (hardware.onednn_fp32_products(hardware.this_cpu())[0] and products._available())
    finally:
        products.set_choice(None)
    with products.use(False):
        with products.use(True):
            assert products.active()
        assert not products.active()
    with kernels.use(False), products.use(True):
        assert not products.active()  # no kernels, no oneDNN products
        a, b = operands((3, 4), (4, 2))
        assert torch.equal(products.mm(a, b), a @ b)



def test_results_do_not_depend_on_the_thread_count():
    """Long reductions over few outputs, where oneDNN would split the sum between threads,
    stay with the BLAS (bit for bit what it gives: MKL on an Intel Xeon splits those sums too,
    so their thread-count independence is the BLAS's to give); the rest, and a model's
    gradients, give the same bits at 1 and 2 threads."""
    before = torch.get_num_threads()
    long_sums = [(1, 3000, 16), (64, 20000, 64)]
    shapes = long_sums + [(30, 512, 1536), (12, 700, 36), (300, 64, 200)]
    try:
        with products.use(True):
            for m, k, n in shapes:
                a, b = operands((m, k), (k, n))
                got = []
                for threads in (1, 2):
                    torch.set_num_threads(threads)
                    got.append(products.mm(a, b))
                    if (m, k, n) in long_sums:
                        assert torch.equal(got[-1], torch.mm(a, b)), (m, k, n, threads)
                if (m, k, n) not in long_sums:
                    assert torch.equal(*got), (m, k, n)
            model, src, mask, tgt = tiny_model_and_batch("rnnsearch")
            grads = []
            for threads in (1, 2):
                torch.set_num_threads(threads)
                grads.append(gradients(model, src, mask, tgt, True))
            assert all(torch.equal(grads[0][n], grads[1][n]) for n in grads[0])
    finally:
        torch.set_num_threads(before)


def test_timing_the_choice_leaves_the_global_random_numbers_alone():
    """The choice is made at a run's first product, maybe after its seed: it must not move the
    run's random numbers (dropout masks, sampling)."""
    torch.manual_seed(0)
    state = torch.get_rng_state()
    products.speedup.cache_clear()
    assert products.speedup(rows=8, size=32) > 0.0
    assert torch.equal(torch.get_rng_state(), state)


def test_the_log_line_says_where_the_products_go():
    try:
        for on, where in ((False, "PyTorch's BLAS"), (True, "oneDNN")):
            products.set_choice(on)
            assert products.describe() == (where if products._available() else
                                           "PyTorch's BLAS (no C++ kernels or no oneDNN here)")
    finally:
        products.set_choice(None)
