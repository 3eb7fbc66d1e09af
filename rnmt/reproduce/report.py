"""Everything in ``results/<paper>/`` that is computed from the finished systems.

The table, the significance tests, the orderings, the length figure and the README are
rebuilt from the committed records (``<system>.json``) and translations (``hyp/``) on
every call, so they never need the checkpoints. The ATR gate statistics need the trained
model once; they are kept in ``gates.json`` and the figure is redrawn from it.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from rnmt.reproduce.corpus import Corpus
from rnmt.reproduce.machine import machine_line
from rnmt.reproduce.spec import Claim, PaperSpec, SystemSpec
from rnmt.training.checkpoint import atomic_write_text

SIGNIFICANT = 0.05  # = 1 - the intervals' level: p < SIGNIFICANT exactly when the 95% interval excludes 0
BOOTSTRAP_SEED = 12345  # sacrebleu's default: the resampled test sets are the ones `sacrebleu --paired-bs` draws
# Eq. 13 of the ATR paper is the decoder: s~_j = ATR(s_{j-1}, y_{j-1}) (unit 1), then
# s_j = ATR(s~_j, c_j) (unit 2). Unit 1, the one reading the target words, is the headline.
HEADLINE_GATES = "decoder.unit1"


def baseline_p_values(names: Sequence[str], baseline: str, hyps: Dict[str, List[str]], refs: List[str],
                      n: int) -> Dict[str, Optional[float]]:
    """BLEU p-value of every system against the paper's baseline (None for the baseline),
    by the same test as the claims' verdicts and intervals (`difference_interval`)."""
    from rnmt.evaluation.significance import difference_interval

    if baseline not in hyps:
        return {name: None for name in names}
    return {name: difference_interval(hyps[name], hyps[baseline], refs, n_samples=n, seed=BOOTSTRAP_SEED).p_value
            if name in hyps and name != baseline else None for name in names}


# The sanity check a system must pass before any ordering is read from it: below this BLEU,
# or with output much shorter or longer than the references, a model is not translating
# (it writes commas, "the the the", or stops at once) and its differences say nothing.
SANE_BLEU = 10.0
SANE_LENGTH_RATIO = (0.5, 2.0)
# ... nor when it loops (rnmt.evaluation.repetition). Over the 44 runs of the equal-updates
# tables the two groups lie far apart: the translating systems have at most 1.45% repeated
# 4-grams and 6 looping lines of 517 (1.2%), the looping ones (DTMT#4, Seq2seq, the
# Transformer-encoder hybrids) at least 4.1% and 19 lines (3.7%); the references 0.34% and 2.
# The limits sit between the groups, about twice the worst translating run.
SANE_REPEATED_RATE = 3.0  # percent of 4-grams
SANE_LOOPING_SHARE = 2.0  # percent of lines
# Equivalence ("about as good", "same"): the 95% paired bootstrap interval of the BLEU
# difference must lie within this margin in every seed. The papers call gains of 0.6 BLEU
# and more improvements (DTMT#4 over DTMT#1: +0.63; L-GRU in DTMT#1: +0.78), so a
# difference that is surely smaller than 0.5 is below anything they would report.
MARGIN = 0.5


def length_ratio(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Output length over reference length in BLEU's tokens (sacrebleu 13a)."""
    from sacrebleu.metrics import BLEU

    result = BLEU().corpus_score(list(hyps), [list(refs)])
    return result.sys_len / result.ref_len if result.ref_len else 0.0


def sanity_problem(record: dict, hyps: Sequence[str], refs: Sequence[str]) -> Optional[str]:
    """Why a run fails the sanity check, or None when it passes: too little BLEU, output of
    the wrong length, or looping output."""
    from rnmt.evaluation.repetition import repetition

    bleu = record.get("test_bleu")
    ratio = record.get("length_ratio")
    if ratio is None:
        ratio = length_ratio(hyps, refs)
    low, high = SANE_LENGTH_RATIO
    if bleu is None or bleu < SANE_BLEU:
        return f"BLEU {_num(bleu)} < {SANE_BLEU:g}"
    if not low <= ratio <= high:
        return f"output/reference length {ratio:.2f} outside {low:g}-{high:g}"
    loops = repetition(hyps)
    if loops.repeated_ngram_rate > SANE_REPEATED_RATE or loops.looping_share > SANE_LOOPING_SHARE:
        return (f"loops: {loops.repeated_ngram_rate:.2f}% repeated 4-grams (limit {SANE_REPEATED_RATE:g}%), "
                f"{loops.looping_lines} looping lines (limit {SANE_LOOPING_SHARE:g}% of lines)")
    return None



def _seed_of(record: dict) -> int:
    return int(record.get("seed", 1))


def _paired_seeds(ra: List[dict], rb: List[dict]) -> List[tuple]:
    """(index in a, index in b, seed) for every seed both systems were trained with: a
    verdict never compares runs of different seeds."""
    seeds_b = {_seed_of(r): j for j, r in enumerate(rb)}
    return [(i, seeds_b[_seed_of(r)], _seed_of(r)) for i, r in enumerate(ra) if _seed_of(r) in seeds_b]


def _side(record: dict) -> Dict[str, Any]:
    """What a verdict shows of each system: updates, time per update, dev perplexity."""
    return {"seed": _seed_of(record), "test_bleu": record.get("test_bleu"), "steps": record.get("steps"),
            "seconds_per_update": record.get("seconds_per_update"), "dev_ppl": record.get("dev_ppl"),
            "length_ratio": record.get("length_ratio")}


def _judge_speed(out: Dict[str, Any], measured: Optional[dict]) -> Dict[str, Any]:
    """A speed claim from the controlled side-by-side measurement (`rnmt.reproduce.speed`):
    held when A was faster in every alternating round, reversed when slower in every one."""
    if not measured:
        out.update(status="undecided: not timed side by side yet (the records' speeds were measured under "
                          "different machine loads)")
        return out
    ratios = measured["ratios"]
    out["ci"] = [[min(ratios), max(ratios)]]  # the range of the rounds' speed ratios a/b
    out.update(value_a=statistics.median(measured["tokens_per_s_a"]),
               value_b=statistics.median(measured["tokens_per_s_b"]), speed_ratios=ratios)
    text = f"{measured['ratio']:.2f}x, rounds " + " / ".join(f"{r:.2f}" for r in ratios)
    if all(r > 1 for r in ratios):
        out.update(held=True, status=f"held ({text})")
    elif all(r < 1 for r in ratios):
        out.update(held=False, status=f"reversed ({text})")
    else:
        out.update(status=f"undecided: the rounds disagree ({text})")
    return out


def judge_claim(claim: Claim, records: Dict[str, List[dict]], hyps: Dict[str, List[List[str]]],
                refs: List[str], n: int, speeds: Optional[Dict[str, dict]] = None) -> Dict[str, Any]:
    """Whether the miniature shows the paper's ordering, seed by seed.

    ``records[s]`` / ``hyps[s]``: one entry per finished seed of system ``s``. Only seeds
    both systems were trained with are compared, by one paired bootstrap per seed (``n``
    samples, `difference_interval`) that gives the 95% interval of BLEU(a) - BLEU(b) and
    the p-value shown with it (p < `SIGNIFICANT` exactly when the interval excludes 0):
    ``better`` is "held" when the interval lies above 0 in every common seed, "reversed"
    when it lies below 0 in every one, and "undecided" otherwise; ``about`` (a,
    with fewer parameters, about as good as b) and ``same`` are equivalence claims, judged
    by each seed's 95% interval of BLEU(a) - BLEU(b) against `MARGIN` (`_judge_about`,
    `_judge_same`). A run that fails the sanity check (`sanity_problem`) leaves any of
    them "undecided". ``faster`` is judged from ``speeds["a|b"]``, the controlled
    side-by-side timing (`_judge_speed`).
    """
    out: Dict[str, Any] = {"kind": claim.kind, "a": claim.a, "b": claim.b, "text": claim.text,
                           "source": claim.source, "metric": claim.metric, "held": None}
    if claim.a not in records or claim.b not in records:
        out.update(status="not run")
        return out
    pairs = _paired_seeds(records[claim.a], records[claim.b])
    if not pairs:
        out.update(status="undecided: no seed was run for both systems")
        return out
    out["seeds"] = [seed for _, _, seed in pairs]
    out["runs"] = [{"a": _side(records[claim.a][i]), "b": _side(records[claim.b][j])} for i, j, _ in pairs]
    values = [(records[claim.a][i].get(claim.metric), records[claim.b][j].get(claim.metric)) for i, j, _ in pairs]
    out.update(value_a=_mean([v[0] for v in values]), value_b=_mean([v[1] for v in values]))
    if any(va is None or vb is None for va, vb in values):
        out.update(status="undecided: a run has no value")
        return out
    if claim.kind == "faster":
        return _judge_speed(out, (speeds or {}).get(f"{claim.a}|{claim.b}"))
    problems = [f"{name} seed {seed}: {why}" for i, j, seed in pairs for name, k in ((claim.a, i), (claim.b, j))
                for why in [sanity_problem(records[name][k], hyps[name][k], refs)] if why]
    from rnmt.evaluation.significance import difference_interval

    diffs = [difference_interval(hyps[claim.a][i], hyps[claim.b][j], refs, n_samples=n, seed=BOOTSTRAP_SEED)
             for i, j, _ in pairs]
    _record_intervals(out, diffs)
    if problems:
        out.update(status="undecided: fails the sanity check (" + "; ".join(problems) + ")")
        return out
    a_wins = [d.low > 0 for d in diffs]  # the interval wholly above 0 (so p < SIGNIFICANT)
    if claim.kind == "better":
        _judge_better(out, [seed for _, _, seed in pairs], values, diffs)
    elif claim.kind == "same":
        _judge_same(out, diffs, [r.get(claim.metric) for r in records[claim.b]], claim.b)
    else:
        fewer = all(records[claim.a][i]["params"] < records[claim.b][j]["params"] for i, j, _ in pairs)
        _judge_about(out, diffs, fewer, all(a_wins))
    return out


def _record_intervals(out: Dict[str, Any], diffs: Sequence[Any]) -> None:
    """Each seed's difference, its 95% interval and p, and the largest p. One test for the
    word, the interval and the p shown: the interval's resamples."""
    p_values = [d.p_value for d in diffs]
    out["p_values"] = p_values
    out["p_value"] = max(p_values)
    out["ci"] = [d.as_list() for d in diffs]  # per seed: 95% interval of BLEU(a) - BLEU(b)
    out["differences"] = [round(d.observed, 4) for d in diffs]


def _judge_better(out: Dict[str, Any], seeds: List[Any], values: List[Tuple[Any, Any]], diffs: Sequence[Any]) -> None:
    """The "better" claim: held when every seed's interval lies above 0, reversed when
    every one lies below 0, else undecided with each seed's figures."""
    per_seed = ", ".join(f"seed {seed}: {va:.2f} vs {vb:.2f}, interval {d.low:+.2f}..{d.high:+.2f}, "
                         f"p {_p(d.p_value)}" for seed, (va, vb), d in zip(seeds, values, diffs))
    if all(d.low > 0 for d in diffs):
        out.update(held=True, status="held")
    elif all(d.high < 0 for d in diffs):
        out.update(held=False, status="reversed")
    else:
        out.update(status=f"undecided: not significant in every seed ({per_seed})")


def _judge_same(out: Dict[str, Any], diffs: Sequence[Any], spread_values: List[Any], b: str) -> None:
    """Equivalence: every seed's interval inside ±`MARGIN`; no significant difference alone
    is absence of evidence, not evidence of sameness. b's seed-to-seed spread is shown beside."""
    out["spread_b"] = max(spread_values) - min(spread_values) if len(spread_values) > 1 else None
    shown = f" ({b}'s seed-to-seed spread {out['spread_b']:.2f})" if out["spread_b"] is not None else ""
    if all(-MARGIN <= d.low and d.high <= MARGIN for d in diffs):
        out.update(held=True, status=f"held: within ±{MARGIN:g} BLEU in every seed" + shown)
    elif all(d.low > MARGIN for d in diffs) or all(d.high < -MARGIN for d in diffs):
        out.update(held=False, status=f"reversed: apart by more than {MARGIN:g} BLEU in every seed" + shown)
    else:
        out.update(status=f"undecided: not shown within ±{MARGIN:g} BLEU" + shown)


def _judge_about(out: Dict[str, Any], diffs: Sequence[Any], fewer: bool, significantly_better: bool) -> None:
    """Non-inferiority: a has fewer parameters and is at most `MARGIN` worse in every seed."""
    if not fewer:
        out.update(held=False, status="reversed: not fewer parameters")
    elif all(d.low >= -MARGIN for d in diffs):
        better = ", and significantly better in every seed" if significantly_better else ""
        out.update(held=True, status=f"held: at most {MARGIN:g} BLEU worse in every seed{better}")
    elif all(d.high < -MARGIN for d in diffs):
        out.update(held=False, status=f"reversed: more than {MARGIN:g} BLEU worse in every seed")
    else:
        out.update(status=f"undecided: not shown to be at most {MARGIN:g} BLEU worse in every seed")


def _mean(values: Sequence[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def length_table(spec: PaperSpec, order: Sequence[SystemSpec], hyps: Dict[str, List[str]],
                 src_lines: List[str], refs: List[str], out_dir: Path) -> Optional[str]:
    """BLEU by source length in the paper's grouping; writes by_length.png, returns Markdown."""
    if not spec.by_length:
        return None
    from rnmt.evaluation.by_length import bleu_by_length, format_markdown, source_lengths
    from rnmt.evaluation.plots import plot_by_length

    form, boundaries = spec.by_length["form"], spec.by_length["boundaries"]
    labels = {s.name: s.label for s in order if s.name in hyps}
    systems = {labels[name]: hyps[name] for name in labels}
    results = bleu_by_length(source_lengths(src_lines), systems, [refs], boundaries)
    rows = {form: results[form]}
    plot_by_length(rows[form], list(systems), form, out_dir / "by_length.png")
    return format_markdown(rows, list(systems))


def gate_statistics(spec: PaperSpec, runs_dir: Path, corpus: Corpus, out_dir: Path, device: str,
                    log: Callable[[str], None], run_name: Optional[str] = None) -> Optional[dict]:
    """ATR twin-gate statistics of the paper's gate system over the test set (forced
    decoding of the references), for the trained model and for the same model as
    initialised (no update): the untrained figure shows how much of the correlation the
    training made. Cached in ``gates.json``; draws ``gates.png``. ``run_name``: the gate
    system's run (its first seed's)."""
    if not spec.gates:
        return None
    cache = out_dir / "gates.json"
    name = spec.gates["system"]
    run_name = run_name or name
    if cache.is_file():
        stats = json.loads(cache.read_text(encoding="utf-8"))
    else:
        run_dir = runs_dir / run_name
        if not (run_dir / "best.safetensors").is_file() or not (out_dir / f"{run_name}.json").is_file():
            return None
        import torch

        from rnmt.data import read_lines
        from rnmt.device import pick_device
        from rnmt.models import build_model, load_model
        from rnmt.models.base import uniform_init_
        from rnmt.reproduce.gates import atr_gate_statistics

        src_path, ref_path = corpus.files("test")
        pairs = [(s, t) for s, t in zip(read_lines(src_path), read_lines(ref_path)) if s.strip() and t.strip()]
        device_ = pick_device(device)
        loaded = load_model(run_dir, device_)
        src_ids = [loaded.src_vocab.encode(s) for s, _ in pairs]
        tgt_ids = [loaded.tgt_vocab.encode(t) for _, t in pairs]
        log(f"[{spec.paper}/{run_name}] ATR gate statistics over {len(pairs)} test sentences")
        units = atr_gate_statistics(loaded.model, src_ids, tgt_ids, device_)
        torch.manual_seed(loaded.config.train.seed)
        fresh = build_model(loaded.config.model, loaded.src_vocab.size, loaded.tgt_vocab.size)
        uniform_init_(fresh, loaded.config.train.init_scale)
        untrained = atr_gate_statistics(fresh.to(device_), src_ids, tgt_ids, device_)
        stats = {"system": name, "run": run_name, "paper_r": spec.gates.get("paper_r"),
                 "target": "teacher-forced references", "sentences": len(pairs), "units": units,
                 "untrained": {u: {"pearson_r": g["pearson_r"], "pairs": g["pairs"]} for u, g in untrained.items()},
                 "init_scale": loaded.config.train.init_scale}
        atomic_write_text(cache, json.dumps(stats, indent=1) + "\n")
    draw_gates(stats, out_dir / "gates.png")
    return stats


def draw_gates(stats: dict, path: Path) -> None:
    import numpy as np

    from rnmt.analysis import plots

    curves = {u: {"input": np.asarray(g["input"]), "forget": np.asarray(g["forget"]),
                  "r": g["pearson_r"], "pairs": g["pairs"]}
              for u, g in stats["units"].items()}
    if curves:
        plots.gate_positions(curves, path, title=f"{stats['system']}: position-wise mean input and forget "
                                                 f"gates over {stats['sentences']} test sentences")


# -- the README ---------------------------------------------------------------------------
def _num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def _p(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if value >= 0.0001 else f"{value:.1e}"


def _millions(n: Optional[int]) -> str:
    return "-" if n is None else f"{n / 1e6:.2f}M"


def updates_after_lowest_loss(record: dict) -> Optional[int]:
    """Updates a run trained after its lowest dev loss (its first, among equals), from the
    record's learning curve; None without one. Near 0, early stopping (on dev BLEU) ended a
    run whose loss was still falling: it may have stopped short (docs/reproduce.md)."""
    curve = [v for v in record.get("validations") or [] if v.get("dev_loss") is not None]
    if not curve:
        return None
    lowest = min(curve, key=lambda v: v["dev_loss"])
    return int(record.get("steps") or curve[-1]["step"]) - int(lowest["step"])


def _per_seed(runs: List[dict], key: str, digits: int = 2) -> str:
    """The mean over seeds, with each seed's value when there are several."""
    values = [r.get(key) for r in runs]
    mean = _mean(values)
    if len(runs) == 1 or mean is None:
        return _num(values[0], digits)
    return f"{_num(mean, digits)} ({' / '.join(_num(v, digits) for v in values)})"


def render_readme(spec: PaperSpec, order: Sequence[SystemSpec], records: Dict[str, List[dict]],
                  p_values: Dict[str, Optional[float]], claims: List[dict], corpus: Corpus,
                  settings: Dict[str, Any], command: str, length_md: Optional[str],
                  gates: Optional[dict], missing: Sequence[str], ref_loops: str = "-",
                  results_dir: Optional[Path] = None) -> str:
    """The table's README. A converged table states its regime (patience, precision, CPU
    class) under the title; ``results_dir`` lets it name a rerun of the table in one regime."""
    from rnmt.reproduce.regimes import regime_header

    all_runs = [r for runs in records.values() for r in runs]
    converge = bool(settings.get("converge"))
    kind = ("converged: every system trained until dev BLEU stopped improving" if converge else
            "learning speed: every system trained for the same number of updates")
    mixed, regime = regime_header(all_runs, settings, results_dir) if converge and all_runs else (False, [])
    lines = [f"# {spec.paper}: miniature reproduction ({kind}{'; MIXED REGIME' if mixed else ''})", ""]
    lines += regime + [f"{spec.title}. Systems of {spec.tables}.", "",
                       "Written by `rnmt reproduce`; rerunning the command regenerates this page. Command:", "",
                       f"    {command}", ""]
    if mixed:
        lines += ["Rerunning it continues a run only from a checkpoint on the machine, under the settings' "
                  "patience; records whose checkpoints are gone stay as they are. Without this table's run "
                  "directories the command trains every run in one regime, which is not how the runs above "
                  "were made.", ""]
    lines += _setup_lines(spec, order, records, all_runs, corpus, settings, missing)
    lines += _results_lines(spec, order, records, all_runs, p_values, converge, ref_loops)
    if claims:
        lines += _claims_lines(spec, claims, converge)
    if length_md:
        form = str((spec.by_length or {}).get("form", ""))
        figure = {"disjoint": "Cseq2seq Fig. 2", "longer_than": "DTMT Fig. 3"}.get(form, "")
        lines += [f"## BLEU by source length ({figure})", "", "First seed of each system.", "",
                  "![BLEU by source length](by_length.png)", "", length_md.strip(), ""]
    if gates:
        lines += _gates_section(gates)
    return "\n".join(lines).rstrip() + "\n"


def _setup_lines(spec: PaperSpec, order: Sequence[SystemSpec], records: Dict[str, List[dict]],
                 all_runs: List[dict], corpus: Corpus, settings: Dict[str, Any], missing: Sequence[str]) -> List[str]:
    """The README's "Set-up": corpus, vocabulary, sizes, recipe, seeds, decoding, code, machines."""
    first = all_runs[0] if all_runs else {}
    commits = sorted({r.get("commit", "unknown") for r in all_runs})
    seeds = settings["seeds"]
    seeded = [spec.system(n).label for n in spec.seeded]
    recipe = ", ".join(f"`{k}={v}`" for k, v in spec.recipe.items()) or "none"
    own = [f"{s.label}: " + ", ".join(f"`{k}={v}`" for k, v in s.recipe.items()) for s in order if s.recipe]
    lines = ["## Set-up", "",
             f"- **Corpus**: {corpus.describe()}.",
             f"- **Vocabulary**: one joint BPE model of {settings['vocab_size']:,} pieces, trained once on the "
             "training set and shared by every system.",
             f"- **Size**: embeddings {first.get('emb_size', settings['emb_size'])}, hidden "
             f"{first.get('hidden_size', settings['hidden_size'])} for every system (the papers use 620/1000 or "
             "1024/1024).",
             _training_line(settings, all_runs),
             f"- **Family recipe** over each paper config: {recipe}"
             + (f"; per system: {'; '.join(own)}" if own else "") + " (docs/reproduce.md says how it was found).",
             f"- **Seeds**: {', '.join(str(x) for x in seeds)} for "
             + ("every system (the convergence protocol); " if settings.get("converge") else
                f"{', '.join(seeded) or 'no system'} (the systems the paper's claims rest on), seed {seeds[0]} "
                "for the others; ")
             + f"bootstrap resampling {settings['bootstrap']} samples, seed {BOOTSTRAP_SEED}.",
             f"- **Decoding**: the paper's beam settings ({_searches(spec, order, records)}); BLEU and chrF by "
             "sacrebleu on "
             f"detokenised output (`{first.get('bleu_signature', '-')}`).",
             f"- **Code**: commit {', '.join(commits) if commits else '-'} (each record's `commit`).",
             ]
    if settings.get("overrides"):
        lines.append(f"- **Extra overrides** for every system: `{' '.join(settings['overrides'])}`.")
    machines = sorted({machine_line(r["machine"]) for r in all_runs if r.get("machine")})
    lines.append("- **Machine**: " + ("; ".join(machines) if machines else "-") + ".")
    if missing:
        lines.append(f"- **Not finished yet**: {', '.join(missing)} (rerun the command to continue).")
    return lines


def _results_lines(spec: PaperSpec, order: Sequence[SystemSpec], records: Dict[str, List[dict]],
                   all_runs: List[dict], p_values: Dict[str, Optional[float]], converge: bool,
                   ref_loops: str) -> List[str]:
    """The README's "Results": one row per system, its seeds' values in each cell."""
    paper_column = ("This protocol has no paper, so the paper's columns are empty. " if spec.paper_metric == "none"
                    else f"The paper's column is its {spec.paper_metric}: a different language pair, corpus and "
                    "scale, quoted for the ordering, not for the value. ")
    lines = ["", "## Results", "",
             paper_column + "Where a system was trained with several seeds, a cell "
             "gives the mean and each seed's value. s/update is the wall-clock time of a training update "
             "(validation excluded); train speed is target subword tokens per second of training; decoding speed "
             "is output words per second over the whole test set.", ""]
    base_label = spec.system(spec.baseline).label
    header = ["system", "params (paper)", "params", "BLEU (paper)", "BLEU", "chrF", f"p vs {base_label}",
              "len ratio", "updates", "s/update", "train tok/s", "decode words/s"]
    if spec.greedy_speed:
        header += ["greedy words/s", "paper train / test words/s"]
    header += ["epochs", "dev BLEU", "dev ppl", "rep. 4-grams %", "looping lines"]
    if converge:
        header += ["updates to best", "epochs to best", "stopped by", "updates after lowest dev loss", "wall-clock h"]
    # A table filled in over several machines may mix precisions (train.amp: auto picks per
    # CPU): then each row says which its runs had.
    mixed = len({(r.get("machine") or {}).get("precision") for r in all_runs}) > 1
    if mixed:
        header += ["precision"]
    lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for s in order:
        runs = records.get(s.name)
        cells = (_system_cells(spec, s, runs, p_values, converge, mixed) if runs else
                 [s.label, s.paper_params or "-", "-", _num(s.paper_bleu), "not run"] + ["-"] * (len(header) - 5))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"p: paired bootstrap of test BLEU against {base_label}, first seed of each, two-sided, from the "
              f"same resamples as the claims' intervals; below {SIGNIFICANT} (the 95% interval of the difference "
              "excludes 0) the difference is unlikely to be chance. len ratio: output length over "
              "reference length (BLEU's tokens). dev ppl: per-token perplexity of the validation sentences at the "
              "last validation. rep. 4-grams: the share of each line's 4-grams that repeat one seen earlier in the "
              f"line; looping lines: lines with a 4-gram three times or more (the references: {ref_loops})."
              + (" updates after lowest dev loss: how long a run trained past its lowest dev loss; near 0, early "
                 "stopping (which counts dev BLEU) ended a run whose loss was still falling, which may have "
                 "stopped short." if converge else ""), ""]
    return lines


def _system_cells(spec: PaperSpec, s: SystemSpec, runs: List[dict], p_values: Dict[str, Optional[float]],
                  converge: bool, mixed: bool) -> List[str]:
    """A trained system's row of the results table."""
    cells = [s.label, s.paper_params or "-", _millions(runs[0].get("params")), _num(s.paper_bleu),
             _per_seed(runs, "test_bleu"), _per_seed(runs, "test_chrf"),
             "baseline" if s.name == spec.baseline else _p(p_values.get(s.name)),
             _per_seed(runs, "length_ratio"), _per_seed(runs, "steps", 0),
             _per_seed(runs, "seconds_per_update"), _per_seed(runs, "train_tokens_per_s", 0),
             _per_seed(runs, "decode_words_per_s", 0)]
    if spec.greedy_speed:
        cells += [_per_seed(runs, "greedy_decode_words_per_s", 0), s.paper_speed or "-"]
    cells += [_per_seed(runs, "epochs"), _per_seed(runs, "best_dev_bleu"), _per_seed(runs, "dev_ppl", 1),
              _per_seed(runs, "repeated_ngram_rate"), _per_seed(runs, "looping_lines", 0)]
    if converge:
        cells += [_per_seed(runs, "updates_to_best", 0), _per_seed(runs, "epochs_to_best"),
                  " / ".join(str(r.get("stop_reason", "-")) for r in runs),
                  _per_seed([{**r, "after_lowest": updates_after_lowest_loss(r)} for r in runs], "after_lowest", 0),
                  _per_seed([{**r, "wall_h": (r.get("wall_minutes") or 0) / 60 or None} for r in runs], "wall_h", 1)]
    if mixed:
        cells.append(" / ".join(str((r.get("machine") or {}).get("precision") or "-") for r in runs))
    return cells


def _claims_lines(spec: PaperSpec, claims: List[dict], converge: bool) -> List[str]:
    """The README's "The paper's claims": the verdicts, the rules, and what each rests on."""
    lines = ["## The paper's claims", "",
             "| paper says | source | here (mean over seeds) | seeds | p (per seed) | difference [95% interval] "
             "(per seed) | verdict |",
             "|---|---|---|---|---:|---|---|"]
    for c in claims:
        p_text = " / ".join(_p(p) for p in c.get("p_values", [])) or "-"
        seeds_text = ", ".join(str(x) for x in c.get("seeds", [])) or "-"
        lines.append(f"| {c['text']} | {c['source']} | {_claim_values(c, spec)} | {seeds_text} | {p_text} | "
                     f"{_intervals(c)} | {c['status']} |")
    lines += ["", "Every quality verdict, interval and p-value comes from one paired bootstrap per seed: the test "
              "set resampled with replacement (the resampled sets sacrebleu's paired test draws), both systems "
              "scored on each, the 95% interval being the central 95% of the differences (first system minus "
              f"second) and p twice the share of them beyond 0, so p < {SIGNIFICANT} exactly when the interval "
              "excludes 0. A claim is **held** (or **reversed**) only when the interval lies wholly on the paper's "
              "(or the opposite) side of 0 in every seed both systems were trained with, and both pass the sanity "
              f"check (at least {SANE_BLEU:g} BLEU, output/reference "
              f"length within {SANE_LENGTH_RATIO[0]:g}-{SANE_LENGTH_RATIO[1]:g}, at most {SANE_REPEATED_RATE:g}% "
              f"repeated 4-grams and {SANE_LOOPING_SHARE:g}% looping lines); otherwise it is "
              "**undecided**, with the reason. \"About as good\" and \"same\" are equivalence claims, decided "
              "by the same intervals in every seed: an \"about\" claim (non-inferiority, one-sided) holds when "
              f"the first system has fewer parameters and is at most {MARGIN:g} BLEU worse (the interval's lower "
              f"end at -{MARGIN:g} or above, whatever its upper end), a \"same\" claim when the interval lies "
              f"within ±{MARGIN:g}; no significant difference alone is not enough. Speed "
              "claims "
              "are timed side by side (`speed.json`: both systems' models train the same batches in alternating "
              "rounds in one process) and need every round to agree"
              + (f" (here the learning-speed table's timing, `../{spec.paper}/speed.json`: an update's time "
                 "does not depend on how long a run trains)" if converge else "")
              + "; the table's tok/s and s/update are the runs' own, measured under whatever load the machine "
              "had.", "",
              "What each verdict rests on (per seed: test BLEU, updates, s/update, dev perplexity):", ""]
    shown = set()
    for c in claims:
        if c.get("runs") and (c["a"], c["b"]) not in shown:  # two claims on one pair (quality, speed): once
            shown.add((c["a"], c["b"]))
            lines.append(_rests_on(spec, c))
    return lines + [""]


def _rests_on(spec: PaperSpec, c: dict) -> str:
    a, b = spec.system(c["a"]).label, spec.system(c["b"]).label

    def one(label: str, side: dict) -> str:
        return (f"{label} {_num(side['test_bleu'])} BLEU, {_num(side['steps'])} updates, "
                f"{_num(side['seconds_per_update'], 3)} s, ppl {_num(side['dev_ppl'], 1)}")

    parts = [f"seed {r['a']['seed']}: {one(a, r['a'])}; {one(b, r['b'])}" for r in c["runs"]]
    return f"- {a} vs {b}: " + " | ".join(parts)


def record_patience(record: Dict[str, Any]) -> Optional[int]:
    """The early-stopping patience a converged run was trained under (its recipe's)."""
    value = (record.get("recipe") or {}).get("train.patience")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _training_line(settings: Dict[str, Any], records: Sequence[dict] = ()) -> str:
    dev = settings["dev_sentences"]
    where = (f"with greedy search on {'all' if not dev else f'the first {dev}'} dev sentences")
    if settings.get("converge"):
        patience = settings["patience"]
        # A table whose patience was raised keeps the records of runs it could not continue
        # (no checkpoint on the machine): the line gives the rule each record stopped under.
        used = sorted({p if (p := record_patience(r)) is not None else patience for r in records}) or [patience]
        def whose(p: int) -> str:
            runs = sorted(r["run"] for r in records if (record_patience(r) or patience) == p)
            return "every record here" if len(runs) == len(records) else f"the records of {', '.join(runs)}"

        rule = ("until dev BLEU has not improved for " + "; ".join(f"{p} validations in a row for {whose(p)}"
                                                                   for p in used)
                if len(used) > 1 else f"until dev BLEU has not improved for {used[0]} validations in a row")
        rule += " (early stopping)"
        stopped = "".join(
            f"; the records under {p} stopped before the table's patience was raised to {patience}, their "
            "checkpoints not on the machine to continue from" for p in used if p != patience)
        return (f"- **Training**: {rule}"
                f", at most {settings['updates']:,} updates{stopped}; validation every "
                f"{settings['validate_every']} updates {where}; the learning rate (the family recipe's) warms up, "
                f"then halves after every {settings['plateau_patience']} validations without improvement "
                "(`train.schedule: plateau`) instead of at the recipe's fixed updates; the checkpoint with the "
                "best dev BLEU is decoded.")
    return (f"- **Training**: {settings['updates']:,} updates for every system, as the papers compare systems "
            "trained for the same number of updates (speed is reported separately): a table of how fast each "
            f"system learns, not of where it ends; validation every {settings['validate_every']} updates {where}; "
            "the checkpoint with the best dev BLEU is decoded.")


def _intervals(c: dict) -> str:
    if not c.get("ci"):
        return "-"
    if c["kind"] == "faster":
        low, high = c["ci"][0]
        return f"speed ratio {low:.2f}-{high:.2f} over the rounds"
    return " / ".join(f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]" for d, (lo, hi) in zip(c["differences"], c["ci"]))


def _searches(spec: PaperSpec, order: Sequence[SystemSpec], records: Dict[str, List[dict]]) -> str:
    """The search settings of the records; when systems differ (a protocol over two papers'
    configs), each setting with the systems that used it."""
    used: Dict[str, List[str]] = {}
    for s in order:
        for r in records.get(s.name, [])[:1]:
            used.setdefault(_search(r), []).append(s.label)
    if len(used) <= 1:
        return next(iter(used), "-")
    return "; ".join(f"{text} for {' and '.join(labels)}" for text, labels in used.items())


def _search(record: dict) -> str:
    if not record:
        return "-"
    text = f"beam {record.get('beam')}, normalisation {record.get('normalize')}"
    if record.get("normalize") == "gnmt":
        text += f", alpha {record.get('alpha')}"
    return text


def _claim_values(c: dict, spec: PaperSpec) -> str:
    if c.get("value_a") is None or c.get("value_b") is None:
        return "-"
    a, b = spec.system(c["a"]).label, spec.system(c["b"]).label
    digits = 0 if c["kind"] == "faster" else 2
    unit = " tok/s" if c["metric"] == "train_tokens_per_s" else (" words/s" if "words" in c["metric"] else "")
    return f"{a} {_num(c['value_a'], digits)}{unit} vs {b} {_num(c['value_b'], digits)}{unit}"


def _gates_section(gates: dict) -> List[str]:
    head, second = gates["units"].get(HEADLINE_GATES), gates["units"].get("decoder.unit2")
    r = head["pearson_r"] if head else None
    r2 = second["pearson_r"] if second else None
    untrained = gates.get("untrained") or {}
    r0 = (untrained.get(HEADLINE_GATES) or {}).get("pearson_r")
    lines = ["## ATR twin gates (ATR paper, section 5.1 and Fig. 3)", "",
             f"Pearson's r between the input gate and the forget gate of {gates.get('run', gates['system'])} "
             f"(hidden-unit means, all (sentence, position) pairs of the {gates['sentences']} test sentences, "
             f"{gates['target']}): **r = {_num(r, 4)}** in the decoder's first unit s~_j = ATR(s_(j-1), y_(j-1)) "
             f"of eq. 13, and r = {_num(r2, 4)} in its second unit s_j = ATR(s~_j, c_j) (the paper: r = "
             f"{gates.get('paper_r')} on newstest2014 for eq. 13). The same model before any update (its "
             f"initialisation, U(±{gates.get('init_scale', '-')})): r = {_num(r0, 4)} in the first decoder unit. "
             "Both gates read p_t and q_t and differ only in the sign of q_t (eq. 7-8), so their correlation "
             "follows how the two terms compare in size; the untrained figure shows what training changed.", "",
             "![ATR input and forget gates by position](gates.png)", "",
             "| unit | Pearson r (trained) | Pearson r (untrained) | pairs | r of position means |",
             "|---|---:|---:|---:|---:|"]
    for unit, g in gates["units"].items():
        lines.append(f"| {unit} | {_num(g['pearson_r'], 4)} | {_num((untrained.get(unit) or {}).get('pearson_r'), 4)} "
                     f"| {g['pairs']:,} | {_num(g.get('pearson_r_of_position_means'), 4)} |")
    return lines + [""]
