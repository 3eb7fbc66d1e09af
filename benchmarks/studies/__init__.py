"""One-off studies: each answered one question about rnmt's speed or training, and its answer is
recorded in docs/ (each module's docstring says the question, the commit and the answer). They
stay runnable, ``python -m benchmarks.studies.NAME``, to ask the question again on another
machine or after a change."""
