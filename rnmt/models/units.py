"""Building a model's recurrent units from the shared unit keys of ``model.*``.

Every recurrent architecture reads its units through these: ``cell`` (or ``enc_cell`` /
``dec_cell``), ``layer_norm``, ``rnn_dropout`` and ``cell_options``
(`rnmt.models.options.UNIT_KEYS`).
"""

from __future__ import annotations

from rnmt import cells
from rnmt.config import ModelConfig


def encoder_unit(cfg: ModelConfig) -> str:
    """The encoder's unit name: ``enc_cell``, else ``cell``."""
    return cfg.enc_cell or cfg.cell


def decoder_unit(cfg: ModelConfig) -> str:
    """The decoder's unit name: ``dec_cell``, else ``cell``."""
    return cfg.dec_cell or cfg.cell


def build_cell(cfg: ModelConfig, name: str, input_size: int, hidden_size: int, **unit_options) -> cells.Cell:
    """A unit from the model config's shared unit options (``model.cell_options`` win over
    ``unit_options``)."""
    return cells.build(name, input_size, hidden_size, layer_norm=cfg.layer_norm,
                       dropout=cfg.rnn_dropout, **{**unit_options, **cfg.cell_options})


def dl4mt_cell(cfg: ModelConfig, name: str, input_size: int, hidden_size: int,
               conditional: bool = False) -> cells.Cell:
    """A unit as dl4mt builds its GRUs: ``gru_layer`` (encoder, the decoder's first unit)
    adds b_h outside the reset gate, only the conditional second unit inside
    (`rnmt.cells.gru`); other units are built as usual."""
    return build_cell(cfg, name, input_size, hidden_size, **({"reset_bias": conditional} if name == "gru" else {}))


def bidirectional(cfg: ModelConfig, input_size: int, hidden_size: int, build=build_cell) -> cells.Bidirectional:
    """A bidirectional layer of two encoder units (forward built first: the uniform
    initialisation draws in creation order); annotations are 2 * hidden_size wide."""
    name = encoder_unit(cfg)
    return cells.Bidirectional(build(cfg, name, input_size, hidden_size), build(cfg, name, input_size, hidden_size))
