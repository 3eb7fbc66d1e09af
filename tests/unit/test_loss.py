"""Label-smoothed cross-entropy: values and gradients against the plain expression."""

import pytest
import torch

from rnmt.training.loss import label_smoothed_nll
from tests.support import needs_kernel


def reference(logits, target, mask, eps):
    lprobs = torch.log_softmax(logits, -1)
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    V = logits.size(-1)
    off = eps / (V - 1)
    gold_prob = torch.nn.functional.one_hot(target, V).to(logits.dtype)
    smoothed = gold_prob * (1 - eps) + (1 - gold_prob) * off  # the papers' code: eps / (V - 1) elsewhere
    loss = -(smoothed * lprobs).sum(-1)
    w = mask.to(logits.dtype)
    return (loss * w).sum(), (nll * w).sum()


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_values_and_gradients_match_the_plain_expression(eps):
    g = torch.Generator().manual_seed(int(eps * 10))
    logits = (torch.randn(3, 4, 7, generator=g, dtype=torch.float64) * 3)
    target = torch.randint(0, 7, (3, 4), generator=g)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[2, 2:] = False
    a, b = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    loss, nll = label_smoothed_nll(a, target, mask, eps)
    ref_loss, ref_nll = reference(b, target, mask, eps)
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(nll, ref_nll)
    (2 * loss + 0.5 * nll).backward()
    (2 * ref_loss + 0.5 * ref_nll).backward()
    torch.testing.assert_close(a.grad, b.grad)
    assert a.grad[2, 2:].abs().max() == 0  # padding gets no gradient


def test_gradcheck_and_low_precision_logits():
    g = torch.Generator().manual_seed(5)
    logits = torch.randn(2, 3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, 5, (2, 3), generator=g)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    assert torch.autograd.gradcheck(lambda x: label_smoothed_nll(x, target, mask, 0.1), (logits,))
    half = logits.detach().to(torch.bfloat16).requires_grad_()
    loss, _ = label_smoothed_nll(half, target, mask, 0.1)
    loss.backward()
    assert loss.dtype == torch.float32 and half.grad.dtype == torch.bfloat16


@needs_kernel
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_float32_kernel_matches_the_pytorch_passes_and_the_plain_expression(eps, monkeypatch):
    from rnmt.training import loss as loss_module

    g = torch.Generator().manual_seed(7)
    logits = torch.randn(4, 6, 300, generator=g) * 4
    target = torch.randint(0, 300, (4, 6), generator=g)
    mask = torch.rand(4, 6, generator=g) > 0.2
    results = []
    for use_kernel in (True, False):
        if not use_kernel:
            monkeypatch.setattr(loss_module, "_kernel", lambda x: None)
        x = logits.clone().requires_grad_()
        loss, nll = label_smoothed_nll(x, target, mask, eps)
        (2 * loss + 0.5 * nll).backward()
        results.append((loss, nll, x.grad))
    ref = logits.double().requires_grad_()
    ref_loss, ref_nll = reference(ref, target, mask, eps)
    (2 * ref_loss + 0.5 * ref_nll).backward()
    for loss, nll, grad in results:
        torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(nll.double(), ref_nll, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(grad.double(), ref.grad, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(results[0][2], results[1][2], rtol=1e-5, atol=1e-7)


@needs_kernel
def test_float32_kernel_rejects_a_target_outside_the_vocabulary():
    with pytest.raises(RuntimeError, match="out of range"):
        label_smoothed_nll(torch.randn(2, 5), torch.tensor([1, 5]), torch.ones(2, dtype=torch.bool), 0.1)


@needs_kernel
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_bf16_scores_read_by_the_kernel_equal_a_float32_copy_exactly(eps):
    """Under CPU bf16 autocast the output layer's scores are bf16: the kernel reads them as
    they are, and loss and gradient equal those of the float32 copy bit for bit (the copy,
    the float32 kernel, the gradient cast back to bf16, as before)."""
    g = torch.Generator().manual_seed(11)
    logits = (torch.randn(5, 7, 1000, generator=g) * 4).to(torch.bfloat16)
    target = torch.randint(0, 1000, (5, 7), generator=g)
    mask = torch.rand(5, 7, generator=g) > 0.2
    direct = logits.clone().requires_grad_()
    loss, nll = label_smoothed_nll(direct, target, mask, eps)
    (2 * loss + 0.5 * nll).backward()
    copied = logits.clone().requires_grad_()
    ref_loss, ref_nll = label_smoothed_nll(copied.float(), target, mask, eps)  # a float32 tensor: no bf16 path
    (2 * ref_loss + 0.5 * ref_nll).backward()
    assert direct.grad.dtype == torch.bfloat16 and loss.dtype == torch.float32
    assert torch.equal(loss, ref_loss) and torch.equal(nll, ref_nll)
    assert torch.equal(direct.grad, copied.grad)
