"""Sequence-level knowledge distillation (Kim & Rush, 2016): a teacher, or an ensemble,
translates the training sources; the outputs are filtered; small students train on them.

``rnmt distill`` and `rnmt.api.distill` run the stages of `rnmt.distill.pipeline` in one
output directory, each resumable after a kill at any point:

1. ``decode``: the teacher translates the training sources in chunks (`decode`), each chunk
   written atomically; a resumed run keeps the chunks it finds and decodes the rest;
2. ``filter``: empty, looping, length-ratio and teacher-score filters (`filters`);
3. ``train``: each student config trains on the distilled corpus (optionally mixed with the
   original by weight, optionally fine-tuned on the original with ``--init-from``), and the
   same config on the original data alone as its baseline (`students`), one run per seed;
4. ``export``: where `rnmt.export` exists, each student is exported (`export`);
5. ``report``: teacher, students and baselines on the test set (`measure`, `report`).

docs/distill.md describes the workflow and the Bible measurement.
"""

from __future__ import annotations

__all__ = ["distill"]


def distill(*args, **kwargs):
    """`rnmt.distill.pipeline.distill` (imported when called: torch and the models load then)."""
    from rnmt.distill.pipeline import distill as run

    return run(*args, **kwargs)
