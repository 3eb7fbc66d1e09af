
import pytest

from rnmt.config import TrainConfig
from rnmt.errors import UserError
from rnmt.training.schedules import learning_rate, rnmt_plus
from tests.support import REPO


def test_rnmt_plus_matches_dtmt_eq_17_checkpoints():
    # SPEC section 1: n = 2, s = 8k, e = 100k -> factor 0.5 at t = 50k and 0.125 at t = 96k.
    def lr(t):
        return rnmt_plus(t, 1.0, n=2, p=50, s=8000, e=100000)

    assert lr(0) == pytest.approx(1.0)
    assert lr(50) == pytest.approx(1.5)  # warm-up 1 + t(n-1)/(n p)
    assert lr(100) == pytest.approx(2.0)  # plateau n reached at t = n p / (n - 1)
    assert lr(4000) == pytest.approx(2.0)
    assert lr(50000) == pytest.approx(0.5)
    assert lr(96000) == pytest.approx(0.125)


def test_rnmt_plus_with_one_replica_has_no_warmup():
    assert rnmt_plus(0, 1e-3, n=1, p=500, s=8000, e=64000) == pytest.approx(1e-3)


def test_warmup_decay_shape():
    cfg = TrainConfig(lr=1.0, schedule="warmup_decay", warmup_steps=10, decay_start=100, decay_rate=0.5,
                      decay_steps=50)
    assert learning_rate(cfg, 0) == pytest.approx(0.1)
    assert learning_rate(cfg, 9) == pytest.approx(1.0)
    assert learning_rate(cfg, 99) == pytest.approx(1.0)
    assert learning_rate(cfg, 150) == pytest.approx(0.5)


def test_inverse_sqrt_peaks_at_warmup():
    cfg = TrainConfig(lr=1.0, schedule="inverse_sqrt", warmup_steps=100)
    assert learning_rate(cfg, 99) == pytest.approx(1.0)
    assert learning_rate(cfg, 399) == pytest.approx(0.5)


def test_epoch_halving_and_floor():
    cfg = TrainConfig(lr=1.0, schedule="epoch_halving", min_lr=0.2)
    assert [learning_rate(cfg, 0, e) for e in range(4)] == pytest.approx([1.0, 0.5, 0.25, 0.2])


def test_epoch_halving_can_start_late_as_luong_et_al():
    # 12 epochs, the rate halved after each epoch from the 8th on (Luong et al. 2015, with dropout).
    cfg = TrainConfig(lr=1.0, schedule="epoch_halving", halve_after_epoch=8)
    assert [learning_rate(cfg, 0, e) for e in range(12)] == pytest.approx([1.0] * 8 + [0.5, 0.25, 0.125, 0.0625])


def test_the_paper_configs_train_with_the_papers_optimisers():
    from rnmt.config import load_config

    for path in sorted((REPO / "configs" / "papers" / "cseq2seq").glob("*.yaml")):
        tc = load_config(path).train
        assert (tc.optimizer, tc.lr, tc.schedule, tc.halve_after_epoch) == ("adadelta", 1.0, "epoch_halving", 1), path
    for path in sorted((REPO / "configs" / "papers" / "survey").glob("luong-*.yaml")):
        tc = load_config(path).train
        assert (tc.optimizer, tc.lr, tc.halve_after_epoch, tc.max_epochs) == ("sgd", 1.0, 8, 12), path


def test_unknown_schedule_is_a_user_error():
    with pytest.raises(UserError, match="train.schedule"):
        learning_rate(TrainConfig(schedule="cosine"), 0)


def test_plateau_warms_up_then_decays_once_per_plateau():
    cfg = TrainConfig(lr=1.0, schedule="plateau", warmup_steps=10, decay_rate=0.5, decay_start=3)
    assert learning_rate(cfg, 0) == pytest.approx(0.1)
    assert learning_rate(cfg, 5000) == pytest.approx(1.0)  # no fixed step decays it (decay_start unused)
    assert learning_rate(cfg, 5000, plateau_decays=2) == pytest.approx(0.25)
    assert learning_rate(cfg, 0, plateau_decays=1) == pytest.approx(0.05)
    floored = TrainConfig(lr=1.0, schedule="plateau", warmup_steps=0, min_lr=0.2)
    assert learning_rate(floored, 10, plateau_decays=5) == pytest.approx(0.2)
