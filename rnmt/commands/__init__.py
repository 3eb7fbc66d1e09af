"""One module per ``rnmt`` sub-command: ``add_arguments(parser)`` and ``run(args) -> int``."""
