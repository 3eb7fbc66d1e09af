"""What every config under configs/ resolves to, to show that rewriting configs changed nothing.

    python scripts/config_snapshot.py write OUT.json [ROOT]   # ROOT: the checkout whose configs/ to read
    python scripts/config_snapshot.py compare A.json B.json

For each model config (configs/quickstart.yaml and configs/papers/*/*.yaml) it records the
output of ``rnmt params`` and ``rnmt params --json`` (run through the command line's own
entry point, so the error line too when one is printed) and the resolved config as a
dictionary (``Config.to_dict``, the optimiser's settings as the running code names them).
For each reproduction recipe (configs/reproduce/*.yaml) it records the configs the recipe's
systems resolve to. Run with one commit's code and configs, then another's, and compare:
equal snapshots mean the same parameter counts and the same settings for every config.
The optimiser's settings are compared as ``train.optimizer_options`` with every default
filled in, whether a snapshot holds them so or as the flat keys of before
(``train.adam_betas``, ``train.momentum`` ...; `rnmt.config.MOVED_TRAIN_KEYS`).
Parameter fingerprints (the models' outputs and gradients) are scripts/model_fingerprints.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import warnings
from pathlib import Path


def _command(argv: list) -> dict:
    from rnmt.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    return {"rc": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _resolved(path: Path) -> object:
    from rnmt.config import load_config
    from rnmt.errors import UserError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _as_dict(load_config(path))
    except UserError as exc:
        return {"error": str(exc)}


def _as_dict(cfg) -> dict:
    """``cfg.to_dict()`` with the optimiser's options complete (where the code has them)."""
    tree = cfg.to_dict()
    try:
        from rnmt.training.optimizers import resolved_optimizer_options
    except ImportError:  # a commit before optimizer_options: its flat keys are compared
        return tree
    tree["train"]["optimizer_options"] = resolved_optimizer_options(cfg.train)
    return tree


# train.KEY before the optimisers' options -> (optimiser, option), as rnmt.config.MOVED_TRAIN_KEYS
FLAT_OPTIMIZER_KEYS = {"adam_betas": ("adam", "betas"), "adam_eps": ("adam", "eps"),
                       "adadelta_rho": ("adadelta", "rho"), "adadelta_eps": ("adadelta", "eps"),
                       "momentum": ("sgd", "momentum"), "nesterov": ("sgd", "nesterov")}
DEFAULT_OPTIONS = {"sgd": {"dampening": 0.0}}  # options added since, at their defaults


def _normalized(value: object) -> object:
    """Resolved configs anywhere in ``value`` with flat optimiser keys as optimizer_options."""
    if isinstance(value, dict):
        value = {k: _normalized(v) for k, v in value.items()}
        train = value.get("train")
        if isinstance(train, dict) and "optimizer" in train and "optimizer_options" not in train:
            options = dict(DEFAULT_OPTIONS.get(train["optimizer"], {}))
            for key, (owner, name) in FLAT_OPTIMIZER_KEYS.items():
                if key in train:
                    old = train.pop(key)
                    if owner == train["optimizer"]:
                        options[name] = old
            train["optimizer_options"] = options
        return value
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def _recipes(root: Path) -> dict:
    """Each recipe's systems as a reproduction resolves them: the paper config, then the
    family recipe, then the system's own entries (rnmt.reproduce.system.miniature_config,
    without the miniature's data and sizes)."""
    from rnmt.config import config_from_dict, read_config_tree, set_path, upgrade_override_key
    from rnmt.errors import UserError
    from rnmt.reproduce.spec import load_paper

    found = {}
    for path in sorted((root / "configs" / "reproduce").glob("*.yaml")):
        spec = load_paper(path.stem, root=root)
        systems = {}
        for system in spec.systems + spec.optional_systems:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _, tree = read_config_tree(root / system.config)
                    for key, value in {**spec.recipe, **system.recipe}.items():
                        set_path(tree, upgrade_override_key(key, warn=False), value)
                    systems[system.name] = _as_dict(config_from_dict(tree, warn_deprecated=False))
            except UserError as exc:
                systems[system.name] = {"error": str(exc)}
        found[path.stem] = systems
    return found


def write(out: Path, root: Path) -> int:
    configs = [root / "configs" / "quickstart.yaml", *sorted((root / "configs" / "papers").glob("*/*.yaml"))]
    snap = {}
    for path in configs:
        name = str(path.relative_to(root / "configs"))
        snap[name] = {"params": _command(["params", str(path)]), "json": _command(["params", "--json", str(path)]),
                      "resolved": _resolved(path)}
    snap["reproduce"] = _recipes(root)
    out.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(configs)} configs, {len(snap['reproduce'])} recipes")
    return 0


def compare(a_path: Path, b_path: Path) -> int:
    a, b = (_normalized(json.loads(p.read_text(encoding="utf-8"))) for p in (a_path, b_path))
    differ = 0
    for name in sorted(set(a) | set(b)):
        for part in sorted(set(a.get(name, {})) | set(b.get(name, {}))):
            if a.get(name, {}).get(part) != b.get(name, {}).get(part):
                differ += 1
                print(f"differs: {name} {part}")
    print(f"{len(a)} entries, {differ} differ")
    return 1 if differ else 0


def main(argv: list) -> int:
    if argv[:1] == ["write"] and len(argv) in (2, 3):
        return write(Path(argv[1]), Path(argv[2] if len(argv) == 3 else ".").resolve())
    if argv[:1] == ["compare"] and len(argv) == 3:
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
