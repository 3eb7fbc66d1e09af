"""Validation between updates decodes with the current weights (rnmt.modules.token_table)."""

import torch

from rnmt.config import config_from_dict
from rnmt.modules.token_table import forget_tables
from rnmt.training.trainer import Trainer
from tests.support import tiny_config_tree


def test_after_fused_adam_updates_validation_decodes_with_a_table_of_the_current_weights(tmp_path, tiny_corpus):
    """The trainer forgets the tables after every optimizer step: PyTorch's fused Adam, the
    default, leaves the weights' version counters as they were, and RNNSearch's validation
    decoded with the table of its first validation (a converged run logged dev BLEU 25.16
    where a fresh decode of the same checkpoint scored 27.47)."""
    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"].update(arch="rnnsearch")
    tree["train"].update(max_steps=3, validate_every=1, amp="none", lr=0.05)
    trainer = Trainer(config_from_dict(tree), tmp_path / "run", log=lambda *_: None)
    assert getattr(trainer.optimizer, "defaults", {}).get("fused")  # the case the key misses
    trainer.run()
    model = trainer.model.eval()
    cached = model._token_table.table  # built by the last validation
    assert cached is not None
    forget_tables(model)
    with torch.no_grad():
        model.target_inputs(torch.tensor([1, 2]), torch.zeros(2, dtype=torch.long))  # builds it again
    torch.testing.assert_close(cached, model._token_table.table)
