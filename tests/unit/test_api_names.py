"""The Python interface's names: `rnmt.train` and `rnmt.evaluate` are the API's functions,
whatever has been imported."""

from __future__ import annotations

import inspect


def test_importing_the_training_and_evaluation_packages_leaves_the_functions_in_place():
    # The packages are named apart from the functions: Python binds an imported subpackage
    # as an attribute of its parent, which would replace a function of the same name.
    import rnmt.evaluation.metrics
    import rnmt.training.trainer  # noqa: F401

    assert inspect.isfunction(rnmt.train) and rnmt.train is rnmt.api.train
    assert inspect.isfunction(rnmt.evaluate) and rnmt.evaluate is rnmt.api.evaluate
    assert rnmt.training.__name__ == "rnmt.training" and rnmt.evaluation.metrics.corpus_bleu
