"""What a resumed run may change, and whether it still reads the same corpus.

A resumed run continues the saved one exactly only if everything that shapes the
updates is unchanged. The keys below change when training stops, what it logs, where it
validates or how it searches, never the updates themselves; any other difference between
the run's ``config.yaml`` and the resumed config is rejected before anything is written.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Tuple

from rnmt.config import Config
from rnmt.errors import UserError

# Dotted keys (or section prefixes ending in '.') that --resume --set may change.
MAY_CHANGE = (
    "train.max_steps", "train.max_epochs", "train.max_minutes", "train.log_every",
    "train.validate_every", "train.save_every", "train.validation_search", "train.patience",
    "train.keep_last", "train.threads", "train.device", "train.progress", "train.max_nonfinite",
    "train.accumulate",  # with another number of processes, K keeps the batches per update
    "data.train",  # the path only: the corpus' content is checked by its cache key
    "data.dev", "data.test", "data.dev_max_sentences", "data.cache_dir",
    "search.",
)


def _flatten(tree: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, Any]]:
    for key, value in tree.items():
        if isinstance(value, dict) and key not in ("cell_options", "options"):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield prefix + key, value


def may_change(key: str) -> bool:
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in MAY_CHANGE)


def changed_keys(saved: Config, new: Config) -> List[Tuple[str, Any, Any]]:
    old = dict(_flatten(saved.to_dict()))
    cur = dict(_flatten(new.to_dict()))
    return [(k, old.get(k), cur.get(k)) for k in sorted(set(old) | set(cur)) if old.get(k) != cur.get(k)]


def check_resume_config(saved: Config, new: Config, source: str) -> List[str]:
    """The changed keys that are allowed; a `UserError` for the first one that is not."""
    changes = changed_keys(saved, new)
    for key, old, cur in changes:
        if not may_change(key):
            raise UserError(f"cannot resume with {key} changed ({old!r} in {source}, now {cur!r}): it would "
                            f"change the updates of the run; start a new run with --out, or see "
                            f"docs/reliability.md for the keys that may change on resume")
    return [f"{key}: {old!r} -> {cur!r}" for key, old, cur in changes]


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
