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
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import torch

from rnmt.errors import UserError
from rnmt.reproduce import regimes, report
from rnmt.reproduce.corpus import Corpus, resolve_corpus
from rnmt.reproduce.machine import describe_machine
from rnmt.reproduce.spec import PaperSpec, SystemSpec, load_paper, repository_root
from rnmt.reproduce.system import Run, Settings, continues, hyp_path, plan_runs, record_path, run_system, stopped_short
from rnmt.training import run_lock
from rnmt.training.checkpoint import atomic_write_text
from rnmt.training.side_by_side import Job, run_side_by_side

# Settings that must match for systems to share one table (the family recipe included).
COMPARED = ("corpus", "src", "tgt", "emb_size", "hidden_size", "vocab_size", "updates", "seeds",
            "dev_sentences", "validate_every", "overrides", "recipe", "converge", "patience", "plateau_patience")


def code_commit() -> str:
    """The commit the package's checkout is at, ``+modified`` when the code or configs
    differ from it; ``unknown`` outside a git checkout. ``RNMT_COMMIT`` in the environment
    overrides it, for a copy of the tree whose git directory is not its own (a GPU machine's
    copy of the working tree, `benchmarks/gpu_calls.sh`)."""
    given = os.environ.get("RNMT_COMMIT", "").strip()
    if given:
        return given
    root = repository_root()
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                "rnmt", "configs"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+modified" if dirty else "")


def ensure_gitignore(out_root: Path) -> None:
    """Checkpoints, caches and lock files stay out of version control; the results go in."""
    out_root.mkdir(parents=True, exist_ok=True)
    ignore = out_root / ".gitignore"
    rules = {"*/runs/": "# checkpoints, vocabularies and caches of `rnmt reproduce`",
             run_lock.LOCK_FILE: "# the lock of the command working on a table (rnmt/training/run_lock.py)"}
    present = ignore.read_text(encoding="utf-8").split() if ignore.is_file() else []
    missing = [rule for rule in rules if rule not in present]
    if missing:
        with open(ignore, "a", encoding="utf-8") as fh:
            fh.write("".join(f"{rules[rule]}\n{rule}\n" for rule in missing))


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def check_settings(results_dir: Path, current: Dict[str, object]) -> None:
    """The settings a table was started with must not change, but for a converged table's
    patience, which may be raised: the runs early stopping ended sooner then continue from
    their last checkpoint, exactly as if they had been trained with it (`system.continues`)."""
    path = results_dir / "settings.json"
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        changed = [k for k in COMPARED if k in saved and saved[k] != current.get(k)]
        if changed == ["patience"] and current.get("converge") and current["patience"] > saved["patience"]:
            current = {**current, "patience_raised_from": sorted({*saved.get("patience_raised_from", []),
                                                                  saved["patience"]})}
            changed = []
        if "patience_raised_from" in saved:  # the table's history stays
            current = {**current, "patience_raised_from": saved["patience_raised_from"]}
        if changed:
            detail = ", ".join(f"{k}: {saved[k]!r} then, {current.get(k)!r} now" for k in changed)
            raise UserError(f"{results_dir} holds systems run with other settings ({detail}); "
                            "rerun with the same settings, or use another --out (or delete it) to start over")
    atomic_write_text(path, json.dumps(current, indent=1) + "\n")


def shared_vocabulary(corpus: Corpus, runs_dir: Path, settings: Settings, log: Callable[[str], None]) -> Path:
    """One joint BPE model for every system of the paper, trained once."""
    from rnmt.data import train_vocabs

    vocab_dir = runs_dir / "vocab"
    model = vocab_dir / "spm.model"
    if not model.is_file():
        log(f"training the shared joint BPE vocabulary ({settings.vocab_size} pieces)")
        train_src, train_tgt = corpus.files("train")
        train_vocabs(train_src, train_tgt, vocab_dir, joint=True, model_type="bpe",
                     src_size=settings.vocab_size, tgt_size=settings.vocab_size, seed=settings.seeds[0])
    return model


def command_line(paper: str, settings: Settings, corpus: Corpus, data_given: bool,
                 systems: Optional[Sequence[str]]) -> str:
    """The command that reproduces this directory, with paths as the results print them."""
    defaults = Settings()
    parts = ["rnmt reproduce", paper] + (["--converge"] if settings.converge else [])
    parts.append(f"--updates {settings.updates}")
    if (settings.emb_size, settings.hidden_size) != (defaults.emb_size, defaults.hidden_size):
        parts.append(f"--dims {settings.emb_size},{settings.hidden_size}")
    if data_given:
        parts.append(f"--data {corpus.name} --src {corpus.src} --tgt {corpus.tgt}")
    if settings.seeds != defaults.seeds:
        parts.append("--seeds " + ",".join(str(s) for s in settings.seeds))
    for name, flag in (("vocab_size", "--vocab-size"), ("dev_sentences", "--dev-sentences"),
                       ("validate_every", "--validate-every"), ("threads", "--threads"), ("jobs", "--jobs"),
                       ("device", "--device"), ("bootstrap", "--bootstrap"), ("patience", "--patience"),
                       ("plateau_patience", "--plateau-patience")):
        if getattr(settings, name) != getattr(defaults, name):
            parts.append(f"{flag} {getattr(settings, name)}")
    if systems:
        parts.append("--systems " + ",".join(systems))
    parts += [f"--set {o}" for o in settings.overrides]
    return " ".join(parts)


def display_order(spec: PaperSpec, chosen: Sequence[SystemSpec], results_dir: Path,
                  seeds: Sequence[int]) -> List[SystemSpec]:
    """The paper's rows, then optional rows that were asked for or finished earlier."""
    chosen_names = {s.name for s in chosen}
    order = list(spec.systems)
    for s in spec.optional_systems:
        if s.name in chosen_names or any(record_path(results_dir, r).is_file() for r in plan_runs(spec, [s], seeds)):
            order.append(s)
    return order


def finished_runs(spec: PaperSpec, order: Sequence[SystemSpec], results_dir: Path, seeds: Sequence[int],
                  tgt: str) -> tuple:
    """({system: [record per finished seed]}, {system: [translations per finished seed]})."""
    from rnmt.data import read_lines

    records: Dict[str, List[dict]] = {}
    hyps: Dict[str, List[List[str]]] = {}
    for run in plan_runs(spec, order, seeds):
        rec, hyp = record_path(results_dir, run), hyp_path(results_dir, run, tgt)
        if rec.is_file() and hyp.is_file():
            records.setdefault(run.system.name, []).append(json.loads(rec.read_text(encoding="utf-8")))
            hyps.setdefault(run.system.name, []).append(read_lines(hyp))
    return records, hyps


def write_report(spec: PaperSpec, order: Sequence[SystemSpec], corpus: Corpus, results_dir: Path,
                 runs_dir: Path, settings: Settings, command: str, log: Callable[[str], None],
                 gates: bool = True) -> dict:
    """Write the table's README.md and results.json from its finished runs; returns the
    results. ``gates``: the final report (speed claims timed side by side, gate statistics)."""
    from rnmt.data import read_lines
    from rnmt.evaluation.repetition import repetition

    records, hyps = finished_runs(spec, order, results_dir, settings.seeds, corpus.tgt)
    src_path, ref_path = corpus.files("test")
    src_lines, refs = read_lines(src_path), read_lines(ref_path)
    _add_looping(records, hyps)
    ref_rep = repetition(refs)
    ref_loops = f"{ref_rep.repeated_ngram_rate:.2f}% and {ref_rep.looping_lines} lines"
    names = [s.name for s in order if s.name in records]
    first_hyps = {n: hyps[n][0] for n in names}
    p_values = report.baseline_p_values(names, spec.baseline, first_hyps, refs, settings.bootstrap) if names else {}
    speeds = _speeds(spec, order, results_dir, runs_dir, settings, log, gates)
    claims = [report.judge_claim(c, records, hyps, refs, settings.bootstrap, speeds) for c in spec.claims]
    length_md = report.length_table(spec, order, first_hyps, src_lines, refs, results_dir) if names else None
    gate_stats = None
    if gates and spec.gates:
        gate_run = plan_runs(spec, [spec.system(spec.gates["system"])], settings.seeds)[0]
        gate_stats = report.gate_statistics(spec, runs_dir, corpus, results_dir, settings.device, log,
                                            run_name=gate_run.name)
    # what the protocol trains without --systems: the converged list, or the whole main table
    expected = Counter(r.system.name for r in plan_runs(spec, spec.select(None), settings.seeds))
    missing = [n for n, count in expected.items() if len(records.get(n, [])) < count]
    readme = report.render_readme(spec, order, records, p_values, claims, corpus, settings.to_dict(), command,
                                  length_md, gate_stats, missing, ref_loops, results_dir)
    equal_claims = regimes.learning_speed_claims(results_dir) if settings.converge else None
    if equal_claims:
        readme += "\n" + "\n".join(regimes.regimes_section(spec.paper, equal_claims, claims))
    atomic_write_text(results_dir / "README.md", readme)
    summary = {"paper": spec.paper, "command": command, "corpus": corpus.describe(),
               "baseline": spec.baseline, "finished": names, "missing": missing,
               "systems": {n: [{"seed": r["seed"], **{k: r.get(k) for k in _RECORD_KEYS}} for r in records[n]]
                           for n in names},
               "p_values_vs_baseline": p_values, "claims": claims,
               "reference_repetition": ref_rep.to_dict(), "gates": _gate_correlations(gate_stats)}
    atomic_write_text(results_dir / "results.json", json.dumps(summary, indent=1) + "\n")
    return summary


# each run's entries in results.json
_RECORD_KEYS = ("label", "params", "test_bleu", "test_chrf", "length_ratio", "train_tokens_per_s",
                "seconds_per_update", "decode_words_per_s", "steps", "train_minutes", "dev_ppl", "commit",
                "repeated_ngram_rate", "looping_lines", "updates_to_best", "epochs_to_best", "stop_reason",
                "wall_minutes")


def _add_looping(records: Dict[str, List[dict]], hyps: Dict[str, List[List[str]]]) -> None:
    """Looping output, from the committed translations (records written before this check
    lack it): the table shows it and the sanity check reads it."""
    from rnmt.evaluation.repetition import repetition

    for name, runs in records.items():
        for record, lines in zip(runs, hyps[name]):
            loops = repetition(lines)
            record.update(repeated_ngram_rate=loops.repeated_ngram_rate, looping_lines=loops.looping_lines)


def _speeds(spec: PaperSpec, order: Sequence[SystemSpec], results_dir: Path, runs_dir: Path, settings: Settings,
            log: Callable[[str], None], gates: bool) -> Optional[dict]:
    """The timings the speed claims are judged on: the learning-speed table's (converged
    tables: `regimes.learning_speed_timings` says why), the speed claims' systems timed side
    by side (the final report; cached), or the ones recorded before (None: none)."""
    if settings.converge:
        return regimes.learning_speed_timings(results_dir)
    if gates:
        from rnmt.device import pick_device
        from rnmt.reproduce.speed import controlled_speeds

        first_runs: Dict[str, Path] = {}
        for r in plan_runs(spec, order, settings.seeds):
            first_runs.setdefault(r.system.name, runs_dir / r.name)
        where = {"commit": code_commit(),
                 "machine": describe_machine(pick_device(settings.device), settings.threads, 1)}
        return controlled_speeds(spec.claims, first_runs, results_dir, runs_dir / "speed", settings.threads, log,
                                 where)
    if (results_dir / "speed.json").is_file():
        return json.loads((results_dir / "speed.json").read_text(encoding="utf-8"))
    return None


def _gate_correlations(gate_stats: Optional[dict]) -> Optional[dict]:
    """results.json's gate entry: each unit's Pearson r, trained and untrained (None without statistics)."""
    if not gate_stats:
        return None
    return {"trained": {u: g["pearson_r"] for u, g in gate_stats["units"].items()},
            "untrained": {u: g["pearson_r"] for u, g in (gate_stats.get("untrained") or {}).items()}}


def _worker_command(paper: str, run: Run, settings: Settings, out_root: Path, data: Optional[str],
                    src: Optional[str], tgt: Optional[str], command: str) -> List[str]:
    payload = {"paper": paper, "system": run.system.name, "seed": run.seed, "run": run.name,
               "settings": settings.to_dict(),
               "out_root": str(out_root), "data": data, "src": src, "tgt": tgt, "command": command}
    return [sys.executable, "-m", "rnmt.reproduce.worker", json.dumps(payload)]


@dataclass
class _Job:
    """One run for the side-by-side pool, with its table's command, runs directory and what
    the table does when the run has finished (`_Table.run_finished`: the README rewritten, or
    the final report after the table's last run)."""

    paper: str
    run: Run
    command: str
    runs_dir: Path
    after_each: Callable[[], None]


def _run_side_by_side(jobs: Sequence[_Job], settings: Settings, out_root: Path, data: Optional[str],
                      src: Optional[str], tgt: Optional[str], log: Callable[[str], None]) -> None:
    """``settings.jobs`` worker processes, each training and decoding one run at a time
    (`rnmt.training.side_by_side`), taking the runs in order across every table given, so
    that a core freed near the end of one table starts the next table's first run; each
    worker's output goes to its table's ``runs/<run>.log``. Raises when a run failed, or
    when a signal stopped the table as a sitting ends (every run in progress saved)."""
    pool = run_side_by_side(
        [Job(f"{job.paper}/{job.run.name}",
             _worker_command(job.paper, job.run, settings, out_root, data, src, tgt, job.command),
             job.runs_dir / f"{job.run.name}.log", job.after_each) for job in jobs],
        settings.jobs, log)
    if pool.stopped:
        raise UserError(f"stopped by {pool.stopped[0]}: every run in progress saved a checkpoint; run the same "
                        f"command again to continue (finished runs are kept)")
    if pool.failed:
        raise UserError("reproduction runs failed: " + "; ".join(pool.failed))


def results_name(paper: str, converge: bool) -> str:
    """``<paper>`` for the equal-updates (learning-speed) tables, ``<paper>-converged`` for
    the convergence protocol's: the two never share a directory."""
    return f"{paper}-converged" if converge else paper


def prepare(paper: str, settings: Settings, out_root: Path, data: Optional[str], src: Optional[str],
            tgt: Optional[str], log: Callable[[str], None]) -> tuple:
    """The spec, results and runs directories, corpus and shared vocabulary of a paper."""
    spec = load_paper(paper).for_protocol(settings.converge)
    out_root = Path(out_root).resolve()
    results_dir = out_root / results_name(spec.paper, settings.converge)
    runs_dir = results_dir / "runs"
    ensure_gitignore(out_root)
    runs_dir.mkdir(parents=True, exist_ok=True)
    corpus = resolve_corpus(data, src, tgt, runs_dir, log)
    return spec, out_root, results_dir, runs_dir, corpus


def reproduce_paper(paper: str, settings: Settings, out_root: Path = Path("results"), data: Optional[str] = None,
                    src: Optional[str] = None, tgt: Optional[str] = None,
                    systems: Optional[Sequence[str]] = None, log: Callable[[str], None] = print) -> dict:
    """Run (or continue) one paper's reproduction and rewrite its README; returns results.json."""
    return reproduce_papers([paper], settings, out_root, data, src, tgt, systems, log)[0]


def reproduce_papers(papers: Sequence[str], settings: Settings, out_root: Path = Path("results"),
                     data: Optional[str] = None, src: Optional[str] = None, tgt: Optional[str] = None,
                     systems: Optional[Sequence[str]] = None, log: Callable[[str], None] = print) -> List[dict]:
    """Run (or continue) the papers' reproductions, rewrite each README; returns each
    results.json. With ``settings.jobs`` > 1 every table's runs share one pool of workers, in
    the papers' order (`_run_side_by_side`); with one job they run one after the other."""
    if not settings.seeds:
        raise UserError("at least one seed is needed")
    locks: List[run_lock.RunLock] = []
    try:
        tables = []
        for paper in papers:
            spec, root, results_dir, runs_dir, corpus = prepare(paper, settings, out_root, data, src, tgt, log)
            # One command per table at a time: a second (a start repeated by mistake) is refused
            # here, before it plans runs that the first is training.
            locks.append(run_lock.hold(results_dir))
            tables.append(_Table.plan(spec, settings, root, results_dir, runs_dir, corpus, data is not None,
                                      systems, log))
        jobs = [_Job(t.spec.paper, r, t.command, t.runs_dir, partial(t.run_finished, log))
                for t in tables for r in t.todo]
        if settings.jobs > 1 and len(jobs) > 1:
            _run_side_by_side(jobs, settings, Path(out_root).resolve(), data, src, tgt, log)
            return [table.summary if table.summary is not None else table.finish(log) for table in tables]
        summaries = []
        for table in tables:  # one after the other: each table's final report as soon as it is done
            table.run_here(log)
            summaries.append(table.finish(log))
        return summaries
    finally:
        for held in locks:
            held.release()


@dataclass
class _Table:
    """One paper's table: what it trains, what is left to do, how its report is written."""

    spec: PaperSpec
    settings: Settings
    results_dir: Path
    runs_dir: Path
    corpus: Corpus
    command: str
    order: List[SystemSpec]
    todo: List[Run]
    vocab: Path
    finished: int = 0  # runs of ``todo`` the side-by-side pool has finished
    summary: Optional[dict] = None  # results.json, once `finish` has written the final report

    @classmethod
    def plan(cls, spec: PaperSpec, settings: Settings, out_root: Path, results_dir: Path, runs_dir: Path,
             corpus: Corpus, data_given: bool, systems: Optional[Sequence[str]], log: Callable[[str], None]) -> _Table:
        chosen = spec.select(systems)
        check_settings(results_dir, {"corpus": corpus.name, "src": corpus.src, "tgt": corpus.tgt,
                                     "recipe": spec.recipe,
                                     **{k: v for k, v in settings.to_dict().items()
                                        if k not in ("threads", "jobs", "device", "bootstrap", "log_every")}})
        torch.set_num_threads(settings.threads)
        command = command_line(spec.paper, settings, corpus, data_given, systems)
        runs = plan_runs(spec, chosen, settings.seeds)
        todo = [r for r in runs if not (record_path(results_dir, r).is_file()
                                        and hyp_path(results_dir, r, corpus.tgt).is_file())
                or continues(runs_dir / r.name, record_path(results_dir, r), settings)]
        log(f"[{spec.paper}] corpus {corpus.describe()}")
        for r in runs:  # stopped sooner than the patience now, with no checkpoint here to continue from
            record = record_path(results_dir, r)
            if settings.converge and r not in todo and stopped_short(_read_json(record), settings.patience):
                log(f"[{spec.paper}] {r.name}: early stopping ended it sooner than patience {settings.patience}, "
                    f"but its checkpoint is not on this machine: its record stays as it is")
        log(f"[{spec.paper}] {len(runs)} runs of {len(chosen)} systems, {len(todo)} to do "
            f"({', '.join(r.name for r in todo) or 'none'}); each trains "
            + (f"until dev BLEU stops improving (patience {settings.patience}, at most {settings.updates} updates), "
               if settings.converge else f"{settings.updates} updates, ") +
            f"{settings.jobs} at a time on {settings.threads} thread(s) each")
        vocab = shared_vocabulary(corpus, runs_dir, settings, log) if todo else runs_dir / "vocab" / "spm.model"
        order = display_order(spec, chosen, results_dir, settings.seeds)
        return cls(spec, settings, results_dir, runs_dir, corpus, command, list(order), todo, vocab)

    def rewrite(self, log: Callable[[str], None]) -> None:
        """The README as it stands (between runs; the gates figure waits for the end)."""
        write_report(self.spec, self.order, self.corpus, self.results_dir, self.runs_dir, self.settings,
                     self.command, log, gates=False)

    def run_finished(self, log: Callable[[str], None]) -> None:
        """After each run of the side-by-side pool: the README as it stands; a converged
        table's final report as soon as its last run is done, while the pool trains the other
        tables' runs (such a campaign takes many sittings). A learning-speed table's final
        report times its speed claims' systems (`rnmt.reproduce.speed`), so it waits for the
        pool to end and the machine to be quiet; a converged table times nothing."""
        self.finished += 1
        if self.finished == len(self.todo) and self.settings.converge:
            self.summary = self.finish(log)
        else:
            self.rewrite(log)

    def run_here(self, log: Callable[[str], None]) -> None:
        """The runs left, one after the other in this process."""
        from rnmt.device import pick_device

        machine = describe_machine(pick_device(self.settings.device), self.settings.threads, self.settings.jobs)
        provenance = {"commit": code_commit(), "command": self.command}
        for r in self.todo:
            prefixed = (lambda name: (lambda msg: log(f"[{self.spec.paper}/{name}] {msg}")))(r.name)
            run_system(r, self.spec, self.corpus, self.vocab, self.runs_dir, self.results_dir, self.settings,
                       machine, provenance, prefixed)
            self.rewrite(log)

    def finish(self, log: Callable[[str], None]) -> dict:
        summary = write_report(self.spec, self.order, self.corpus, self.results_dir, self.runs_dir, self.settings,
                               self.command, log)
        log(f"[{self.spec.paper}] wrote {self.results_dir / 'README.md'}")
        return summary


def run_one(paper: str, system: str, seed: int, settings: Settings, out_root: Path, data: Optional[str],
            src: Optional[str], tgt: Optional[str], command: str, log: Callable[[str], None]) -> dict:
    """One run of a reproduction (a side-by-side worker's job); the table is the parent's."""
    from rnmt.device import pick_device

    spec, out_root, results_dir, runs_dir, corpus = prepare(paper, settings, out_root, data, src, tgt, log)
    run = next(r for r in plan_runs(spec, [spec.system(system)], settings.seeds) if r.seed == seed)
    torch.set_num_threads(settings.threads)
    machine = describe_machine(pick_device(settings.device), settings.threads, settings.jobs)
    vocab = shared_vocabulary(corpus, runs_dir, settings, log)
    return run_system(run, spec, corpus, vocab, runs_dir, results_dir, settings, machine,
                      {"commit": code_commit(), "command": command}, log)
