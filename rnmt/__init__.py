"""rnmt: recurrent neural machine translation.

The Python interface (`rnmt.api`): ``rnmt.load``, ``rnmt.train``, ``rnmt.evaluate``, and
the `Model` that ``load`` returns. They are imported on first use, so ``import rnmt``
stays cheap (no PyTorch until a model is needed). The packages behind them are
`rnmt.training` and `rnmt.evaluation`, named apart so that importing them never rebinds
``rnmt.train`` or ``rnmt.evaluate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["load", "train", "evaluate", "Model", "Hypothesis", "Score", "SearchOptions", "UserError", "__version__"]

if TYPE_CHECKING:
    from rnmt.api import Hypothesis, Model, Score, evaluate, load, train
    from rnmt.errors import UserError
    from rnmt.search.options import SearchOptions


def __getattr__(name: str) -> Any:
    if name == "UserError":
        from rnmt.errors import UserError

        return UserError
    if name == "SearchOptions":
        from rnmt.search.options import SearchOptions

        return SearchOptions
    if name in __all__:
        from rnmt import api

        return getattr(api, name)
    raise AttributeError(f"module 'rnmt' has no attribute {name!r}")
