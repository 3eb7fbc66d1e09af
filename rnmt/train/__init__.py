"""Training: loss, learning-rate schedules, checkpoints and the trainer loop."""

from rnmt._callable import make_callable

make_callable(__name__)  # rnmt.train(config, overrides, out) is rnmt.api.train (see rnmt/_callable.py)
