"""Everything in ``results/<paper>/`` that is computed from the finished systems.

The table, the significance tests, the orderings, the length figure and the README are
rebuilt from the committed records (``<system>.json``) and translations (``hyp/``) on
every call, so they never need the checkpoints. The ATR gate statistics need the trained
model once; they are kept in ``gates.json`` and the figure is redrawn from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from rnmt.reproduce.corpus import Corpus
from rnmt.reproduce.machine import machine_line
from rnmt.reproduce.spec import Claim, PaperSpec, SystemSpec

SIGNIFICANT = 0.05
BOOTSTRAP_SEED = 12345  # sacrebleu's default, so `sacrebleu --paired-bs` gives the same p-values
# Eq. 13 of the ATR paper is the decoder: s~_j = ATR(s_{j-1}, y_{j-1}) (unit 1), then
# s_j = ATR(s~_j, c_j) (unit 2). Unit 1, the one reading the target words, is the headline.
HEADLINE_GATES = "decoder.unit1"


def _p_value(a: str, b: str, hyps: Dict[str, List[str]], refs: List[str], n: int) -> Optional[float]:
    """Paired bootstrap p-value of BLEU(a) against BLEU(b) (b is the reference system)."""
    from rnmt.evaluate.significance import paired_bootstrap

    _, results = paired_bootstrap([(b, hyps[b]), (a, hyps[a])], [refs], metrics=("bleu",),
                                  n_samples=n, seed=BOOTSTRAP_SEED)
    return results[a]["bleu"].p_value


def baseline_p_values(names: Sequence[str], baseline: str, hyps: Dict[str, List[str]], refs: List[str],
                      n: int) -> Dict[str, Optional[float]]:
    """BLEU p-value of every system against the paper's baseline (None for the baseline)."""
    from rnmt.evaluate.significance import paired_bootstrap

    if baseline not in hyps:
        return {name: None for name in names}
    ordered = [baseline] + [s for s in names if s != baseline and s in hyps]
    _, results = paired_bootstrap([(s, hyps[s]) for s in ordered], [refs], metrics=("bleu",),
                                  n_samples=n, seed=BOOTSTRAP_SEED)
    return {name: results[name]["bleu"].p_value if name in results else None for name in names}


UNTRAINED_BLEU = 1.0  # below this for both systems, an ordering says nothing


def judge_claim(claim: Claim, records: Dict[str, dict], hyps: Dict[str, List[str]], refs: List[str],
                n: int) -> Dict[str, Any]:
    """Whether the miniature shows the paper's ordering, with the numbers that decide it."""
    out: Dict[str, Any] = {"kind": claim.kind, "a": claim.a, "b": claim.b, "text": claim.text,
                           "source": claim.source, "metric": claim.metric}
    if claim.a not in records or claim.b not in records:
        out.update(status="not run", held=None)
        return out
    ra, rb = records[claim.a], records[claim.b]
    va, vb = ra.get(claim.metric), rb.get(claim.metric)
    out.update(value_a=va, value_b=vb)
    if va is None or vb is None:
        out.update(status="no value", held=None)
        return out
    if claim.kind == "faster":
        held = va > vb
        out.update(held=held, status=f"{'held' if held else 'not held'} ({va / vb:.2f}x)" if vb else "n/a")
        return out
    if claim.metric == "test_bleu" and max(va, vb) < UNTRAINED_BLEU:
        # Near-zero BLEU differences are tiny yet "significant" (resampling cannot move a
        # score that is almost constant): no ordering can be read from untrained systems.
        out.update(held=None, status=f"undecided: both below {UNTRAINED_BLEU:g} BLEU (not trained far enough)")
        return out
    p = _p_value(claim.a, claim.b, hyps, refs, n)
    out["p_value"] = p
    significant = p is not None and p < SIGNIFICANT
    if claim.kind == "better":
        held = va > vb
        if held:
            status = "held" if significant else "held, not significant"
        elif va == vb:
            status = "not held (equal scores)"
        else:
            status = "reversed" if significant else "not held, not significant"
    else:  # about: not significantly worse, with fewer parameters
        fewer = ra["params"] < rb["params"]
        worse = va < vb and significant
        held = fewer and not worse
        status = ("held" if held else "not held") + (
            "" if fewer else " (not fewer parameters)") + (" (significantly worse)" if worse else "")
        if held and va > vb and significant:
            status = "held (significantly better)"
    out.update(held=held, significant=significant, status=status)
    return out


def length_table(spec: PaperSpec, order: Sequence[SystemSpec], hyps: Dict[str, List[str]],
                 src_lines: List[str], refs: List[str], out_dir: Path) -> Optional[str]:
    """BLEU by source length in the paper's grouping; writes by_length.png, returns Markdown."""
    if not spec.by_length:
        return None
    from rnmt.evaluate.by_length import bleu_by_length, format_markdown, source_lengths
    from rnmt.evaluate.plots import plot_by_length

    form, boundaries = spec.by_length["form"], spec.by_length["boundaries"]
    labels = {s.name: s.label for s in order if s.name in hyps}
    systems = {labels[name]: hyps[name] for name in labels}
    results = bleu_by_length(source_lengths(src_lines), systems, [refs], boundaries)
    rows = {form: results[form]}
    plot_by_length(rows[form], list(systems), form, out_dir / "by_length.png")
    return format_markdown(rows, list(systems))


def gate_statistics(spec: PaperSpec, runs_dir: Path, corpus: Corpus, out_dir: Path, device: str,
                    log: Callable[[str], None]) -> Optional[dict]:
    """ATR twin-gate statistics of the paper's gate system over the test set (forced
    decoding of the references), cached in ``gates.json``; draws ``gates.png``."""
    if not spec.gates:
        return None
    cache = out_dir / "gates.json"
    name = spec.gates["system"]
    if cache.is_file():
        stats = json.loads(cache.read_text(encoding="utf-8"))
    else:
        run_dir = runs_dir / name
        if not (run_dir / "best.safetensors").is_file() or not (out_dir / f"{name}.json").is_file():
            return None
        from rnmt.data import read_lines
        from rnmt.models import load_model
        from rnmt.reproduce.gates import atr_gate_statistics
        from rnmt.train.trainer import pick_device

        src_path, ref_path = corpus.files("test")
        pairs = [(s, t) for s, t in zip(read_lines(src_path), read_lines(ref_path)) if s.strip() and t.strip()]
        device_ = pick_device(device)
        loaded = load_model(run_dir, device_)
        log(f"[{spec.paper}/{name}] ATR gate statistics over {len(pairs)} test sentences")
        units = atr_gate_statistics(loaded.model, [loaded.src_vocab.encode(s) for s, _ in pairs],
                                    [loaded.tgt_vocab.encode(t) for _, t in pairs], device_)
        stats = {"system": name, "paper_r": spec.gates.get("paper_r"),
                 "target": "teacher-forced references", "sentences": len(pairs), "units": units}
        cache.write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")
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


def render_readme(spec: PaperSpec, order: Sequence[SystemSpec], records: Dict[str, dict],
                  p_values: Dict[str, Optional[float]], claims: List[dict], corpus: Corpus,
                  settings: Dict[str, Any], command: str, length_md: Optional[str],
                  gates: Optional[dict], missing: Sequence[str]) -> str:
    base_label = spec.system(spec.baseline).label
    first = next(iter(records.values()), {})
    lines = [f"# {spec.paper}: miniature reproduction", "",
             f"{spec.title}. Systems of {spec.tables}.", "",
             "Written by `rnmt reproduce`; rerunning the command regenerates this page. Command:", "",
             f"    {command}", "",
             "## Set-up", "",
             f"- **Corpus**: {corpus.describe()}.",
             f"- **Vocabulary**: one joint BPE model of {settings['vocab_size']:,} pieces, trained once on the "
             "training set and shared by every system.",
             f"- **Size**: embeddings {first.get('emb_size', settings['emb_size'])}, hidden "
             f"{first.get('hidden_size', settings['hidden_size'])} (the papers use 620/1000 or 1024/1024); "
             "every other setting is the paper config's (optimiser, schedule, dropout, batch size, search).",
             f"- **Budget**: {settings['budget']:g} minutes of training steps per system (time spent "
             f"validating is not counted); validation every {settings['validate_every']} steps with greedy search "
             f"on the first {settings['dev_sentences']} dev sentences; the checkpoint with the best dev BLEU is "
             "decoded.",
             f"- **Seeds**: training seed {settings['seed']} for every system; bootstrap resampling "
             f"{settings['bootstrap']} samples, seed {BOOTSTRAP_SEED}.",
             f"- **Decoding**: the paper's beam settings ({_search(first)}); BLEU and chrF by sacrebleu on "
             f"detokenised output (`{first.get('bleu_signature', '-')}`).",
             ]
    if settings.get("overrides"):
        lines.append(f"- **Extra overrides** for every system: `{' '.join(settings['overrides'])}`.")
    machines = sorted({machine_line(r["machine"]) for r in records.values() if r.get("machine")})
    lines.append("- **Machine**: " + ("; ".join(machines) if machines else "-") + ".")
    if missing:
        lines.append(f"- **Not finished yet**: {', '.join(missing)} (rerun the command to continue).")
    lines += ["", "## Results", "",
              f"The paper's column is its {spec.paper_metric}: a different language pair, corpus and scale, "
              "quoted for the ordering, not for the value. Train speed is target subword tokens per second of "
              "training steps; decoding speed is output words per second over the whole test set.", ""]
    header = ["system", "params (paper)", "params", "BLEU (paper)", "BLEU", "chrF", f"p vs {base_label}",
              "train tok/s", "decode words/s"]
    if spec.greedy_speed:
        header += ["greedy words/s", "paper train / test words/s"]
    header += ["steps", "epochs", "train min", "dev BLEU", "dev ppl"]
    lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for s in order:
        r = records.get(s.name)
        if r is None:
            cells = [s.label, s.paper_params or "-", "-", _num(s.paper_bleu), "not run"] + ["-"] * (len(header) - 5)
        else:
            cells = [s.label, s.paper_params or "-", _millions(r.get("params")), _num(s.paper_bleu),
                     _num(r.get("test_bleu")), _num(r.get("test_chrf")),
                     "baseline" if s.name == spec.baseline else _p(p_values.get(s.name)),
                     _num(r.get("train_tokens_per_s"), 0), _num(r.get("decode_words_per_s"), 0)]
            if spec.greedy_speed:
                cells += [_num(r.get("greedy_decode_words_per_s"), 0), s.paper_speed or "-"]
            cells += [_num(r.get("steps")), _num(r.get("epochs")), _num(r.get("train_minutes")),
                      _num(r.get("best_dev_bleu")), _num(r.get("dev_ppl"), 1)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"p: paired bootstrap resampling of test BLEU against {base_label} (sacrebleu); "
              f"below {SIGNIFICANT} the difference is unlikely to be chance. dev ppl: per-token perplexity of the "
              "validation sentences at the last validation; it still orders systems whose BLEU is near zero after "
              "a short budget.", ""]
    if claims:
        lines += ["## The paper's orderings", "",
                  "| paper says | source | here | p | verdict |", "|---|---|---|---:|---|"]
        for c in claims:
            lines.append(f"| {c['text']} | {c['source']} | {_claim_values(c, spec)} | {_p(c.get('p_value'))} | "
                         f"{c['status']} |")
        lines += ["", "p: paired bootstrap test of the first system's BLEU against the second's. "
                  "`held, not significant`: the ordering is the paper's but within what resampling the test set "
                  "can produce by chance. `undecided`: both systems are below "
                  f"{UNTRAINED_BLEU:g} BLEU, where differences say nothing about the paper's claim.", ""]
    if length_md:
        figure = {"disjoint": "Cseq2seq Fig. 2", "longer_than": "DTMT Fig. 3"}.get(spec.by_length["form"], "")
        lines += [f"## BLEU by source length ({figure})", "", "![BLEU by source length](by_length.png)", "",
                  length_md.strip(), ""]
    if gates:
        lines += _gates_section(gates)
    return "\n".join(lines).rstrip() + "\n"


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
    lines = ["## ATR twin gates (ATR paper, section 5.1 and Fig. 3)", "",
             f"Pearson's r between the input gate and the forget gate of {gates['system']} (hidden-unit means, "
             f"all (sentence, position) pairs of the {gates['sentences']} test sentences, {gates['target']}): "
             f"**r = {_num(r, 4)}** in the decoder's first unit s~_j = ATR(s_(j-1), y_(j-1)) of eq. 13, and "
             f"r = {_num(r2, 4)} in its second unit s_j = ATR(s~_j, c_j) (the paper: r = {gates.get('paper_r')} on "
             "newstest2014 for eq. 13).", "",
             "![ATR input and forget gates by position](gates.png)", "",
             "| unit | Pearson r | pairs | r of position means |", "|---|---:|---:|---:|"]
    for unit, g in gates["units"].items():
        lines.append(f"| {unit} | {_num(g['pearson_r'], 4)} | {g['pairs']:,} | "
                     f"{_num(g.get('pearson_r_of_position_means'), 4)} |")
    return lines + [""]
