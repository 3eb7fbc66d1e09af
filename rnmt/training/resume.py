"""What a resumed run may change, and whether it still reads the same corpus.

A resumed run continues the saved one exactly only if everything that shapes the
updates is unchanged. The keys below change when training stops, what it logs, where it
validates or how it searches, or the learning rate of the rest of the run, never the
updates already made; any other difference between the run's ``config.yaml`` and the
resumed config is rejected before anything is written.

The resumed config is the run's ``config.yaml`` with the edits made to the config file
since the run last read it, then ``--set``. The file as last read is kept in
``config.source.yaml`` (defaults filled in, before ``--set``), so an edited file is told
apart from the ``--set`` values the run was started with, which need not be repeated.

Both files are read as the run wrote them: one written before the architecture keys moved
into ``model.options`` is upgraded silently (`rnmt.config.upgrade_model_keys`), and
``model.options`` are compared with their architecture's defaults filled in, so an old run
resumes with its config file in either form.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from rnmt.config import (
    Config,
    config_from_dict,
    load_config,
    read_config_tree,
    set_path,
    upgrade_model_keys,
    upgrade_train_keys,
)
from rnmt.errors import UserError

SOURCE_FILE = "config.source.yaml"  # the config file as the run last read it, before --set

# Dotted keys (or section prefixes ending in '.') that --resume --set may change.
MAY_CHANGE = (
    "train.max_steps", "train.max_epochs", "train.max_minutes", "train.log_every",
    "train.validate_every", "train.save_every", "train.validation_search", "train.patience",
    "train.keep_last", "train.keep_steps", "train.threads", "train.device", "train.progress", "train.max_nonfinite",
    "train.accumulate",  # with another number of processes, K keeps the batches per update
    "train.compile_step",  # the same function, its element-wise work fused
    "train.cuda_graphs",  # the same function, replayed (padding changes nothing learnt)
    "train.lr",  # the peak of the schedule from the next update on (a diverging run, a lower rate)
    "train.ema_decay",  # what validation and checkpoints hold; the updates are the same
    "data.train",  # the paths only (not the weights): the corpora's content is checked by their cache keys
    "data.dev", "data.test", "data.dev_max_sentences", "data.cache_dir",
    "search.",
    # how the computation runs (rnmt.plan): a resumed run keeps its recorded plan, and a key
    # set here changes that choice on purpose (its sums may then round otherwise)
    "runtime.",
)


def _flatten(tree: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, Any]]:
    for key, value in tree.items():
        if isinstance(value, dict) and key not in ("cell_options", "options", "optimizer_options"):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield prefix + key, value


def may_change(key: str, old: Any = None, new: Any = None) -> bool:
    """Whether ``key`` may change from ``old`` to ``new`` on resume. ``data.train`` may move
    its files, not change its weights or its number of corpora (they decide each epoch's
    pairs)."""
    if key == "data.train" and _train_weights(old) != _train_weights(new):
        return False
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in MAY_CHANGE)


def _train_weights(value: Any) -> Optional[List[float]]:
    """The weights of a ``data.train`` value as a config dict holds it (None: one prefix)."""
    if not isinstance(value, list):
        return None
    return [float(c.get("weight", 1.0)) if isinstance(c, dict) else 1.0 for c in value]


def _flat(cfg: Config) -> Dict[str, Any]:
    """The config's keys, ``model.options`` and ``train.optimizer_options`` with every
    option's default filled in."""
    from rnmt.models.registry import resolved_options
    from rnmt.training.optimizers import resolved_optimizer_options

    tree = cfg.to_dict()
    tree["model"]["options"] = resolved_options(cfg.model)
    tree["train"]["optimizer_options"] = resolved_optimizer_options(cfg.train)
    return dict(_flatten(tree))


def changed_keys(saved: Config, new: Config) -> List[Tuple[str, Any, Any]]:
    old = _flat(saved)
    cur = _flat(new)
    return [(k, old.get(k), cur.get(k)) for k in sorted(set(old) | set(cur)) if old.get(k) != cur.get(k)]


def check_resume_config(saved: Config, new: Config, source: str) -> List[str]:
    """The changed keys that are allowed; a `UserError` for the first one that is not."""
    changes = changed_keys(saved, new)
    for key, old, cur in changes:
        if not may_change(key, old, cur):
            raise UserError(f"cannot resume with {key} changed ({old!r} in {source}, now {cur!r}): it would "
                            f"change the updates of the run; start a new run with --out, or see "
                            f"docs/reliability.md for the keys that may change on resume")
    return [f"{key}: {old!r} -> {cur!r}" for key, old, cur in changes]


def resumed_config(run_dir: Path, given: Dict[str, Any], overrides: Sequence[str],
                   given_name: str) -> Tuple[Config, Optional[str]]:
    """The config a resumed run trains with, and a note for the log (or None).

    ``given`` is the config file's sections as read now (or the dict given to
    `rnmt.train`). Its differences from ``config.source.yaml`` are edits: one to a key that
    may not change is a `UserError` naming the key and both values; the others are
    applied to the run's ``config.yaml``, then the ``overrides``. A run saved before
    ``config.source.yaml`` existed keeps its ``config.yaml`` (the file is compared from the
    next resume on).
    """
    saved = upgrade_train_keys(upgrade_model_keys(read_config_tree(run_dir / "config.yaml")[1], warn=False),
                               warn=False)  # the run's own file: upgraded quietly
    if not (run_dir / SOURCE_FILE).is_file():
        return (config_from_dict(saved, overrides, source=str(run_dir / "config.yaml")),
                f"{run_dir / SOURCE_FILE} not found (the run predates it): {given_name} is not compared "
                f"with the file the run started from; {run_dir / 'config.yaml'} and --set apply")
    then = load_config(run_dir / SOURCE_FILE, warn_deprecated=False)
    try:
        now = config_from_dict(given, source=given_name)
    except UserError as exc:
        raise UserError(f"{given_name}: {exc}") from None
    run = _flat(config_from_dict(saved, source=str(run_dir / "config.yaml")))
    for key, _, cur in changed_keys(then, now):
        if not may_change(key, run.get(key), cur) and cur != run.get(key):
            raise UserError(f"cannot resume with {key} changed in {given_name} ({run.get(key)!r} in the run, "
                            f"now {cur!r}): it would change the updates of the run; undo the edit, or start "
                            f"a new run with --out (docs/reliability.md lists the keys that may change)")
        set_path(saved, key, cur)
    return config_from_dict(saved, overrides, source=given_name), None


def source_record(given: Dict[str, Any]) -> str:
    """What `resumed_config` compares a later file with: the given sections, defaults filled in."""
    return config_from_dict(given).dump()


def check_corpus(saved_key: Any, current_key: Any, train_files: str, allow: bool) -> bool:
    """True when the corpus changed and that is allowed; a `UserError` when it is not."""
    if saved_key is None or current_key is None or saved_key == current_key:
        return False
    if not allow:
        raise UserError(f"the training corpus {train_files} changed since this run started (cache key "
                        f"{saved_key} then, {current_key} now): resuming would not continue the same data; "
                        f"restore the files, start a new run, or pass --corpus-changed-ok to go on "
                        f"with the new corpus from the next epoch")
    return True
