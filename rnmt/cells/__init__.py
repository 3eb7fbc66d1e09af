"""The recurrent unit family: any unit is built by name with `build`.

    cell = build("atr", 620, 1000, layer_norm=True)
    outputs, last_state, _ = run_cell(cell, x, mask)

Units: gru, lstm, srnn, atr, ran, lau, lgru, tgru and transition (a deep-transition block).
"""

from rnmt.cells.atr import ATR
from rnmt.cells.base import Cell, GateNorm
from rnmt.cells.dtmt import LGRU, TGRU, DeepTransition
from rnmt.cells.gru import GRU
from rnmt.cells.lau import LAU
from rnmt.cells.lstm import LSTM
from rnmt.cells.ran import RAN
from rnmt.cells.registry import build, registered_names, unit_options
from rnmt.cells.runner import Bidirectional, run_cell
from rnmt.cells.srnn import SRNN

CELL_NAMES = registered_names()

__all__ = [
    "ATR",
    "CELL_NAMES",
    "Bidirectional",
    "Cell",
    "DeepTransition",
    "GRU",
    "GateNorm",
    "LAU",
    "LGRU",
    "LSTM",
    "RAN",
    "SRNN",
    "TGRU",
    "build",
    "run_cell",
    "unit_options",
]
