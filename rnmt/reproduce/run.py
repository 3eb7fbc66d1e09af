"""One paper's reproduction from start to README.

    results/<paper>/settings.json     what every system of this directory was run with
    results/<paper>/<system>.json     a finished system's numbers (its presence = done)
    results/<paper>/hyp/<system>.<tgt> its test translations
    results/<paper>/results.json      the table, p-values and orderings, for scripts
    results/<paper>/README.md         the table shaped like the paper's, orderings, figures
    results/<paper>/by_length.png     BLEU by source length (Cseq2seq Fig. 2, DTMT Fig. 3)
    results/<paper>/gates.png, gates.json   ATR twin-gate statistics (ATR paper, Fig. 3)
    results/<paper>/runs/             checkpoints, vocabulary, caches (git-ignored)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import torch

from rnmt.errors import UserError
from rnmt.reproduce import report
from rnmt.reproduce.corpus import Corpus, resolve_corpus
from rnmt.reproduce.machine import describe_machine
from rnmt.reproduce.spec import PaperSpec, SystemSpec, load_paper
from rnmt.reproduce.system import Settings, run_system

# Settings that must match for systems to share one table (the budget included: every
# system of a table gets the same one).
COMPARED = ("corpus", "src", "tgt", "emb_size", "hidden_size", "vocab_size", "budget", "seed",
            "dev_sentences", "validate_every", "overrides")


def ensure_gitignore(out_root: Path) -> None:
    """Checkpoints and caches stay out of version control; the results go in."""
    out_root.mkdir(parents=True, exist_ok=True)
    ignore = out_root / ".gitignore"
    rule = "*/runs/"
    if not ignore.is_file() or rule not in ignore.read_text(encoding="utf-8").split():
        with open(ignore, "a", encoding="utf-8") as fh:
            fh.write("# checkpoints, vocabularies and caches of `rnmt reproduce`\n" + rule + "\n")


def check_settings(results_dir: Path, current: Dict[str, object]) -> None:
    path = results_dir / "settings.json"
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        changed = [k for k in COMPARED if k in saved and saved[k] != current.get(k)]
        if changed:
            detail = ", ".join(f"{k}: {saved[k]!r} then, {current.get(k)!r} now" for k in changed)
            raise UserError(f"{results_dir} holds systems run with other settings ({detail}); "
                            "rerun with the same settings, or use another --out (or delete it) to start over")
    path.write_text(json.dumps(current, indent=1) + "\n", encoding="utf-8")


def shared_vocabulary(corpus: Corpus, runs_dir: Path, settings: Settings, log: Callable[[str], None]) -> Path:
    """One joint BPE model for every system of the paper, trained once."""
    from rnmt.data import train_vocabs

    vocab_dir = runs_dir / "vocab"
    model = vocab_dir / "spm.model"
    if not model.is_file():
        log(f"training the shared joint BPE vocabulary ({settings.vocab_size} pieces)")
        train_src, train_tgt = corpus.files("train")
        train_vocabs(train_src, train_tgt, vocab_dir, joint=True, model_type="bpe",
                     src_size=settings.vocab_size, tgt_size=settings.vocab_size, seed=settings.seed)
    return model


def command_line(paper: str, settings: Settings, corpus: Corpus, data_given: bool,
                 systems: Optional[Sequence[str]]) -> str:
    """The command that reproduces this directory, with paths as the results print them."""
    defaults = Settings()
    parts = ["rnmt reproduce", paper, f"--budget {settings.budget:g}"]
    if (settings.emb_size, settings.hidden_size) != (defaults.emb_size, defaults.hidden_size):
        parts.append(f"--dims {settings.emb_size},{settings.hidden_size}")
    if data_given:
        parts.append(f"--data {corpus.name} --src {corpus.src} --tgt {corpus.tgt}")
    for name, flag in (("vocab_size", "--vocab-size"), ("dev_sentences", "--dev-sentences"),
                       ("validate_every", "--validate-every"), ("seed", "--seed"), ("threads", "--threads"),
                       ("device", "--device"), ("bootstrap", "--bootstrap")):
        if getattr(settings, name) != getattr(defaults, name):
            parts.append(f"{flag} {getattr(settings, name)}")
    if systems:
        parts.append("--systems " + ",".join(systems))
    parts += [f"--set {o}" for o in settings.overrides]
    return " ".join(parts)


def display_order(spec: PaperSpec, chosen: Sequence[SystemSpec], results_dir: Path) -> List[SystemSpec]:
    """The paper's rows, then optional rows that were asked for or finished earlier."""
    order = list(spec.systems)
    for s in spec.optional_systems:
        if s in chosen or (results_dir / f"{s.name}.json").is_file():
            order.append(s)
    return order


def write_report(spec: PaperSpec, order: Sequence[SystemSpec], corpus: Corpus, results_dir: Path,
                 runs_dir: Path, settings: Settings, command: str, log: Callable[[str], None],
                 gates: bool = True) -> dict:
    from rnmt.data import read_lines

    records: Dict[str, dict] = {}
    hyps: Dict[str, List[str]] = {}
    for s in order:
        rec, hyp = results_dir / f"{s.name}.json", results_dir / "hyp" / f"{s.name}.{corpus.tgt}"
        if rec.is_file() and hyp.is_file():
            records[s.name] = json.loads(rec.read_text(encoding="utf-8"))
            hyps[s.name] = read_lines(hyp)
    src_path, ref_path = corpus.files("test")
    src_lines, refs = read_lines(src_path), read_lines(ref_path)
    names = [s.name for s in order if s.name in records]
    p_values = report.baseline_p_values(names, spec.baseline, hyps, refs, settings.bootstrap) if names else {}
    claims = [report.judge_claim(c, records, hyps, refs, settings.bootstrap) for c in spec.claims]
    length_md = report.length_table(spec, order, hyps, src_lines, refs, results_dir) if hyps else None
    gate_stats = report.gate_statistics(spec, runs_dir, corpus, results_dir, settings.device, log) if gates else None
    missing = [s.name for s in order if s.name not in records and s in spec.systems]
    readme = report.render_readme(spec, order, records, p_values, claims, corpus, settings.to_dict(), command,
                                  length_md, gate_stats, missing)
    (results_dir / "README.md").write_text(readme, encoding="utf-8")
    summary = {"paper": spec.paper, "command": command, "corpus": corpus.describe(),
               "baseline": spec.baseline, "finished": names, "missing": missing,
               "systems": {n: {k: records[n].get(k) for k in ("label", "params", "test_bleu", "test_chrf",
                                                              "train_tokens_per_s", "decode_words_per_s",
                                                              "steps", "train_minutes", "dev_ppl")}
                           for n in names},
               "p_values_vs_baseline": p_values, "claims": claims,
               "gates": None if not gate_stats else {u: g["pearson_r"] for u, g in gate_stats["units"].items()}}
    (results_dir / "results.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


def reproduce_paper(paper: str, settings: Settings, out_root: Path = Path("results"), data: Optional[str] = None,
                    src: Optional[str] = None, tgt: Optional[str] = None,
                    systems: Optional[Sequence[str]] = None, log: Callable[[str], None] = print) -> dict:
    """Run (or continue) one paper's reproduction and rewrite its README; returns results.json."""
    spec = load_paper(paper)
    chosen = spec.select(systems)
    out_root = Path(out_root).resolve()
    results_dir = out_root / spec.paper
    runs_dir = results_dir / "runs"
    ensure_gitignore(out_root)
    runs_dir.mkdir(parents=True, exist_ok=True)
    corpus = resolve_corpus(data, src, tgt, runs_dir, log)
    check_settings(results_dir, {"corpus": corpus.name, "src": corpus.src, "tgt": corpus.tgt,
                                 **{k: v for k, v in settings.to_dict().items()
                                    if k not in ("threads", "device", "bootstrap", "log_every")}})
    from rnmt.train.trainer import pick_device

    torch.set_num_threads(settings.threads)
    machine = describe_machine(pick_device(settings.device), settings.threads)
    command = command_line(spec.paper, settings, corpus, data is not None, systems)
    todo = [s.name for s in chosen if not (results_dir / f"{s.name}.json").is_file()]
    log(f"[{spec.paper}] corpus {corpus.describe()}")
    log(f"[{spec.paper}] {len(chosen)} systems, {len(todo)} to run ({', '.join(todo) or 'none'}); "
        f"each trains {settings.budget:g} min plus validation and test decoding")
    vocab = shared_vocabulary(corpus, runs_dir, settings, log) if todo else runs_dir / "vocab" / "spm.model"
    order = display_order(spec, chosen, results_dir)
    for s in chosen:
        prefixed = (lambda name: (lambda msg: log(f"[{spec.paper}/{name}] {msg}")))(s.name)
        run_system(s, corpus, vocab, runs_dir, results_dir, settings, machine,
                   spec.greedy_speed, prefixed)
        write_report(spec, order, corpus, results_dir, runs_dir, settings, command, log, gates=False)
    summary = write_report(spec, order, corpus, results_dir, runs_dir, settings, command, log)
    log(f"[{spec.paper}] wrote {results_dir / 'README.md'}")
    return summary
