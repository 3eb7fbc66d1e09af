"""model.options.carry_bias (DTMT): T-GRU update gates that start toward carrying the state.
Off (0), the paper's model is built and initialised exactly as without the option."""

from __future__ import annotations

import pytest
import torch

from rnmt.cells import LGRU, TGRU
from rnmt.config import load_config
from rnmt.errors import UserError
from rnmt.models import build_model
from rnmt.models.base import uniform_init_
from tests.support import REPO

TINY = ["model.emb_size=16", "model.hidden_size=16", "model.dropout=0.0", "model.rnn_dropout=0.0"]


def dtmt4(*extra: str):
    cfg = load_config(REPO / "configs" / "papers" / "dtmt" / "dtmt4.yaml", [*TINY, *extra])
    torch.manual_seed(0)
    model = build_model(cfg.model, 30, 30)
    uniform_init_(model, 0.15)
    return model.eval()


def test_off_it_is_the_paper_model_bit_for_bit():
    plain, zero = dtmt4().state_dict(), dtmt4("model.options.carry_bias=0.0").state_dict()
    assert plain.keys() == zero.keys()
    for name in plain:  # bytes, not values: -0.0 would differ from 0.0 in a fingerprint
        assert plain[name].numpy().tobytes() == zero[name].numpy().tobytes(), name


def test_every_t_gru_update_gate_starts_toward_carrying():
    model = dtmt4("model.options.carry_bias=2.0")
    tgrus = [m for m in model.modules() if isinstance(m, TGRU)]
    assert len(tgrus) == 2 * 4 + 4 + 4  # both encoder directions, the query and the decoder transition
    state = torch.randn(64, 16).tanh()
    for tgru in tgrus:
        with torch.no_grad():
            _, gates = tgru.step(None, state, return_gates=True)
        assert float(gates["z"].mean()) < 0.2  # sigmoid(-2) = 0.12; 0.5 without the option
        assert abs(float(gates["r"].mean()) - 0.5) < 0.1  # the reset gate is left alone
    # the bottom units (L-GRU) keep the paper's start
    bottoms = [m for m in model.modules() if isinstance(m, LGRU)]
    assert bottoms and all(float(b.gate_norm.offset.detach().abs().max()) == 0.0 for b in bottoms)


def test_it_needs_layer_normalised_gates():
    with pytest.raises(UserError, match="carry_bias .* needs model.layer_norm: true"):
        dtmt4("model.options.carry_bias=1.0", "model.layer_norm=false")


@pytest.mark.parametrize("value", ["-1", "11", "yes"])
def test_out_of_range_values_are_config_errors(value):
    with pytest.raises(UserError, match="carry_bias"):
        dtmt4(f"model.options.carry_bias={value}")
