"""`rnmt.fast.accelerate`: the plain models (nn.Linear, the papers' step equations) and the
same models with their fast variants swapped in compute the same function, and the swap
reaches modules written without knowing of it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from rnmt import cells, products
from rnmt.config import ModelConfig
from rnmt.fast import accelerate, is_accelerated, plain
from rnmt.fast.cells import FastCell, FastGRU
from rnmt.models import build_model
from tests.unit.test_deferred_grads import ARCHS


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def _pass(model, src, mask, tgt):
    model.zero_grad(set_to_none=True)
    logits = model(src, mask, tgt)
    torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1)).backward()
    return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", sorted(ARCHS))
def test_a_plain_model_and_its_accelerated_self_give_the_same_outputs_and_gradients(name):
    options = {"arch": "rnnsearch", **ARCHS[name]}
    torch.manual_seed(0)
    model = build_model(ModelConfig(emb_size=8, hidden_size=12, **options), 30, 30, accelerated=False).train()
    assert not is_accelerated(model)
    assert not any(type(m) is products.Linear for m in model.modules())
    g = torch.Generator().manual_seed(3)
    src, tgt = torch.randint(4, 30, (3, 7), generator=g), torch.randint(4, 30, (3, 5), generator=g)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[2, 5:] = False
    keys = list(model.state_dict())
    slow_out, slow_grads = _pass(model, src, mask, tgt)

    accelerate(model)
    assert is_accelerated(model) and list(model.state_dict()) == keys  # checkpoints load either way
    assert all(isinstance(m, FastCell) for m in model.modules() if isinstance(m, cells.Cell))
    fast_out, fast_grads = _pass(model, src, mask, tgt)
    torch.testing.assert_close(fast_out, slow_out, atol=1e-5, rtol=1e-5)
    assert fast_grads.keys() == slow_grads.keys() and len(fast_grads) > 5
    for n in slow_grads:
        torch.testing.assert_close(fast_grads[n], slow_grads[n], atol=1e-5, rtol=1e-4, msg=n)

    plain(model)  # and back: the same plain classes, no training-pass hooks left
    assert not is_accelerated(model) and not model._forward_pre_hooks
    again_out, _ = _pass(model, src, mask, tgt)
    torch.testing.assert_close(again_out, slow_out, atol=0, rtol=0)


def test_build_model_accelerates_and_accelerating_twice_changes_nothing_more():
    model = build_model(ModelConfig(arch="rnnsearch", emb_size=8, hidden_size=12), 30, 30)
    assert is_accelerated(model)
    hooks = (len(model._forward_pre_hooks), len(model._forward_hooks))
    classes = [type(m) for m in model.modules()]
    accelerate(model)
    assert [type(m) for m in model.modules()] == classes
    assert (len(model._forward_pre_hooks), len(model._forward_hooks)) == hooks == (1, 1)


class _Scorer(nn.Module):
    """A module written in plain PyTorch, knowing nothing of rnmt's fast variants."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(6, 4)
        self.unit = cells.GRU(4, 5)
        self.kept = nn.modules.linear.NonDynamicallyQuantizableLinear(4, 4)  # a subclass: not swapped


def test_plain_layers_written_by_anyone_get_the_fast_products():
    module = _Scorer()
    weight = module.proj.weight
    accelerate(module)
    assert type(module.proj) is products.Linear and module.proj.weight is weight  # the same parameter
    assert type(module.unit) is FastGRU
    assert type(module.kept) is nn.modules.linear.NonDynamicallyQuantizableLinear
    x = torch.randn(3, 6)
    torch.testing.assert_close(module.proj(x), nn.functional.linear(x, module.proj.weight, module.proj.bias))
    plain(module)
    assert type(module.proj) is nn.Linear and type(module.unit) is cells.GRU


def test_a_unit_that_redefines_a_replaced_method_keeps_its_own():
    class Doubled(cells.SRNN):
        def recurrent_product(self, state, bias=None):
            return 2 * super().recurrent_product(state, bias)

    class Named(cells.SRNN):
        pass

    unit, other = accelerate(Doubled(3, 4)), accelerate(Named(3, 4))
    assert type(unit) is Doubled  # FastCell's product would have dropped the doubling
    assert isinstance(other, FastCell) and isinstance(other, Named)
