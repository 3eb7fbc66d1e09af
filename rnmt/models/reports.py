"""What a model can report to analysis (``rnmt analyze``, the ATR gate statistics).

Every model reports attention through ``step``'s extras. Beyond that, a model declares in
`TranslationModel.reports` which recurrent units stand behind two optional methods, and
analysis reads only these, never the model's attributes:

* ``encoder_gates(src, src_mask) -> {"<direction>.<gate>": [B, S, H]}`` for each direction
  in ``Reports.encoder`` (``fwd.i``, ``bwd.f``, ...): the gates at each source position
  (a backward direction's too, not in walking order), zero at padding.
* ``decoder_trace(src, src_mask, tgt_in) -> {"<unit>.<gate>": [B, J, H], ...}`` for each
  unit in ``Reports.decoder``, teacher-forced, plus ``<unit>.state``, ``<unit>.p`` (its
  projected inputs), ``attention`` [B, J, S] and ``s0``, the initial state. The units are
  listed in the order one decoder step updates the state, and the first one reads the
  previous target word: the chain that ATR's eq. 10 unrolls.

Units are named as `rnmt.cells` registers them (``"atr"``, ``"gru"``, ...), which is how
analysis decides what applies: the dependency weights g_k and the input/forget-gate
statistics need ATR's update h = i * p + f * h.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict


@dataclass
class Reports:
    """Direction or unit name (as in the keys of the methods above) -> unit name."""

    encoder: Dict[str, str] = field(default_factory=dict)
    decoder: Dict[str, str] = field(default_factory=dict)

    def encoder_units(self, unit: str) -> Dict[str, str]:
        """The encoder directions whose unit is ``unit``."""
        return {k: v for k, v in self.encoder.items() if v == unit}

    def decoder_chain_of(self, unit: str) -> bool:
        """Whether every decoder unit is ``unit`` (so the whole state chain is of that kind)."""
        return bool(self.decoder) and all(v == unit for v in self.decoder.values())
