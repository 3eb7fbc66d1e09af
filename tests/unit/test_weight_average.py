"""The weights' exponential moving average (train.ema_decay): its arithmetic, and the model
holding the average only inside `WeightAverage.applied`."""

import pytest
import torch
from torch import nn

from rnmt.errors import UserError
from rnmt.training.weight_average import WeightAverage, effective_decay, load_weights


def test_the_decay_warms_up_then_holds():
    assert effective_decay(0.99, 1) == pytest.approx(2 / 11)
    assert effective_decay(0.99, 80) == pytest.approx(0.9)
    assert effective_decay(0.99, 890) == pytest.approx(0.99)  # (10 d - 1) / (1 - d)
    assert effective_decay(0.99, 10_000) == 0.99


def test_each_update_moves_the_average_by_one_minus_the_decay():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    average = WeightAverage(model, 0.9)
    expected = {n: p.detach().clone() for n, p in model.named_parameters()}
    for step in range(1, 40):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        average.update(step)
        d = effective_decay(0.9, step)
        expected = {n: d * expected[n] + (1 - d) * p.detach() for n, p in model.named_parameters()}
    for (name, p), avg in zip(model.named_parameters(), average.average):
        assert torch.allclose(avg, expected[name], atol=1e-5), name
        assert not torch.allclose(avg, p, atol=1e-2), name  # an average, not the weights


def test_the_model_holds_the_average_only_inside_the_block():
    model = nn.Linear(3, 2)
    average = WeightAverage(model, 0.9)
    with torch.no_grad():
        model.weight.add_(1.0)
    trained = model.weight.detach().clone()
    storage, version = model.weight.data_ptr(), model.weight._version
    with average.applied() as training:
        assert torch.equal(model.weight, average.average[0])
        assert torch.equal(training["weight"], trained)  # the copy it restores, for train_state.pt
        # copied in place: the same storage, and a new version for caches keyed on it
        assert model.weight.data_ptr() == storage and model.weight._version > version
    assert torch.equal(model.weight, trained)
    with pytest.raises(RuntimeError, match="inside"), average.applied():
        raise RuntimeError("inside")
    assert torch.equal(model.weight, trained)  # restored after an error too


def test_a_shared_weight_is_averaged_once():
    emb, out = nn.Embedding(5, 4), nn.Linear(4, 5, bias=False)
    out.weight = emb.weight
    average = WeightAverage(nn.ModuleDict({"emb": emb, "out": out}), 0.5)
    assert len(average.average) == 1


def test_saved_training_weights_must_fit_the_model():
    named = dict(nn.Linear(3, 2).named_parameters())
    with pytest.raises(UserError, match=r"^s.pt: the saved training weights do not fit the model "
                                        r"\(no 'bias'; 1 missing, 0 unknown, 0 of another shape\)$"):
        load_weights(named, {"weight": torch.zeros(2, 3)}, "s.pt")
    with pytest.raises(UserError, match=r"\('weight' has shape \(3, 3\), the model \(2, 3\);"):
        load_weights(named, {"weight": torch.zeros(3, 3), "bias": torch.zeros(2)}, "s.pt")
