"""The recurrent unit family: any unit is built by name with `build`.

    cell = build("atr", 620, 1000, layer_norm=True)
    outputs, last, _ = run_cell(cell, x, mask)
"""

from rnmt.cells.base import Cell, GateNorm
from rnmt.cells.gru import GRU
from rnmt.cells.registry import build, registered_names, unit_options
from rnmt.cells.runner import Bidirectional, run_cell

CELL_NAMES = registered_names()

__all__ = [
    "CELL_NAMES",
    "Bidirectional",
    "Cell",
    "GRU",
    "GateNorm",
    "build",
    "run_cell",
    "unit_options",
]
