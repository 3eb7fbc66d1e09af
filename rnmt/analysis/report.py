"""``rnmt analyze``: pictures and numbers for a trained model over a set of sentences.

Per sentence (the first ``max_sentences`` non-blank lines of at most ``max_picture_tokens``
subwords a side; longer ones are passed over by name, their figures growing with the square
of their length):

* attention weights, target x source tokens, from a forced decoding of the target (the
  reference when given, otherwise the model's own translation);
* the per-source-position reset and update gates r~, z~ of models that report
  ``source_gates`` in their step extras (cyclic Cseq2seq);
* for ATR units: the dependency weights of eq. 10 (mean over hidden units of g_k) of the
  forward encoder, and of the decoder's first unit over the target words (the ATR paper's
  eq. 13 unit), as lower-triangular heatmaps and as arcs to the strongest previous token.

Over the whole set (every non-blank line): the position-wise mean input and forget gates
of every ATR unit and Pearson's r over all (sentence, position) pairs of their
hidden-unit means (ATR paper, Fig. 3 and section 5.1).

The model is asked only through its interface: ``step``'s extras, and the gates and traces
its ``reports()`` declares (`rnmt.models.reports`).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from rnmt.analysis import plots
from rnmt.analysis.atr import chain_weights, decoder_chain, pearson, position_means, strongest_previous
from rnmt.data import make_translation_batches
from rnmt.data.collate import pad_sequences
from rnmt.data.vocab import BOS_ID, EOS
from rnmt.errors import UserError
from rnmt.search.forced import forced_decode

GATE_TITLES = {"z": ("update gate z~ (mean over units)", "update_gate"),
               "r": ("reset gate r~ (mean over units)", "reset_gate")}


ATR = "atr"  # the unit name (rnmt.cells registry) whose gates and eq. 10 weights are reported

# Subwords a side of a pictured sentence. A heatmap gives every token a labelled row and column
# (plots.CELL_INCHES), so its pixels grow with the square of the length: five sentences of about
# 300 subwords drew 8,000 x 8,000 pictures at 2.8 GB, one line of 1,500 words was killed at 21 GB.
MAX_PICTURE_TOKENS = 150
PICTURE_TOKENS_LIMIT = 300  # the most a caller may ask for (a 300 x 300 heatmap: about 7,400 px a side)


def _reports(model):
    """The model's declaration of what it reports; models outside `TranslationModel`
    (an ensemble, say) report nothing beyond attention."""
    from rnmt.models.reports import Reports

    reports = getattr(model, "reports", None)
    return reports() if callable(reports) else Reports()


class _GateCollector:
    """Per-sentence hidden-unit means of the i and f gates, per unit name."""

    def __init__(self) -> None:
        self.i: Dict[str, List[np.ndarray]] = {}
        self.f: Dict[str, List[np.ndarray]] = {}

    def add(self, name: str, i: torch.Tensor, f: torch.Tensor, lengths: Sequence[int]) -> None:
        im, fm = i.float().mean(-1).cpu().numpy(), f.float().mean(-1).cpu().numpy()
        for b, n in enumerate(lengths):
            self.i.setdefault(name, []).append(im[b, :n])
            self.f.setdefault(name, []).append(fm[b, :n])

    def summary(self, groups: Dict[str, Sequence[str]]) -> Dict[str, dict]:
        out = {}
        for name, members in groups.items():
            members = [m for m in members if m in self.i]
            if not members:
                continue
            seq_i = [s for m in members for s in self.i[m]]
            seq_f = [s for m in members for s in self.f[m]]
            all_i, all_f = np.concatenate(seq_i), np.concatenate(seq_f)
            mean_i, count = position_means(seq_i)
            mean_f, _ = position_means(seq_f)
            out[name] = {
                "pearson_r": pearson(all_i, all_f),
                "pairs": int(all_i.size),
                "pearson_r_of_position_means": pearson(mean_i, mean_f),
                "input": mean_i.tolist(), "forget": mean_f.tolist(), "count": count.tolist(),
            }
        return out


def _labels(vocab, ids: Sequence[int]) -> List[str]:
    return [vocab.id_to_piece(i) for i in ids] + [EOS]


@torch.no_grad()
def analyze(loaded, src_lines: Sequence[str], out_dir: str | Path, tgt_lines: Optional[Sequence[str]] = None,
            max_sentences: int = 5, device: str | torch.device = "cpu", batch_tokens: int = 2000,
            search: Optional[dict] = None, log: Callable[[str], None] = print,
            max_picture_tokens: int = MAX_PICTURE_TOKENS) -> dict:
    """Write the pictures, ``summary.json`` and ``index.html`` into ``out_dir``; returns the
    summary. ``search`` overrides the model's search options when translating (no targets).
    Pictures go to the first ``max_sentences`` sentences of at most ``max_picture_tokens``
    subwords a side (``PICTURE_TOKENS_LIMIT`` at the most); the sentences passed over for their
    length are listed in ``summary["not_pictured"]`` and logged."""
    if not 1 <= max_picture_tokens <= PICTURE_TOKENS_LIMIT:
        raise UserError(f"max_picture_tokens must be from 1 to {PICTURE_TOKENS_LIMIT}, got {max_picture_tokens}")
    model, sv = loaded.model, loaded.src_vocab
    model.eval()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = [k for k, line in enumerate(src_lines) if line.strip() and (tgt_lines is None or tgt_lines[k].strip())]
    src_ids = [sv.encode(src_lines[k]) for k in todo]
    reports = _reports(model)
    enc_units = list(reports.encoder_units(ATR))  # e.g. ["fwd", "bwd"]
    dec_units = list(reports.decoder) if reports.decoder_chain_of(ATR) else []
    tgt_ids: Dict[int, List[int]] = {}

    def fetch(need: Sequence[int]) -> None:
        missing = [n for n in need if n not in tgt_ids]
        if missing:
            tgt_ids.update(_targets(loaded, src_lines, tgt_lines, todo, missing, device, search))

    if dec_units:  # the decoder statistics need every sentence's target
        fetch(range(len(todo)))
    pictured, passed_over = _choose_pictured(src_ids, tgt_ids, fetch, max_sentences, max_picture_tokens)
    summary: dict = {"sentences": len(todo), "pictured": len(pictured), "target": _target_kind(tgt_lines, search),
                     "max_picture_tokens": max_picture_tokens,
                     "encoder_atr": bool(enc_units), "decoder_atr": bool(dec_units), "gates": {},
                     "not_pictured": [{"line": todo[n] + 1, "source_tokens": len(src_ids[n]),
                                       "target_tokens": len(tgt_ids[n]) if n in tgt_ids else None}
                                      for n in passed_over],
                     "per_sentence": []}
    for row in summary["not_pictured"]:
        log(f"line {row['line']}: not pictured ({_sides(row)}; a picture takes at most {max_picture_tokens} "
            f"a side: --max-picture-tokens)")
    if enc_units or dec_units:
        _set_gates(model, src_ids, tgt_ids, enc_units, dec_units, batch_tokens, device, out, summary)
    forced = forced_decode(model, [src_ids[n] for n in pictured], [tgt_ids[n] for n in pictured],
                           batch_tokens, device)
    for n, fd in zip(pictured, forced):
        summary["per_sentence"].append(_sentence_report(loaded, fd, todo[n] + 1, src_lines[todo[n]], enc_units,
                                                        dec_units, device, out))
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "index.html").write_text(render_html(summary), encoding="utf-8")
    for name, g in summary["gates"].items():
        r = "undefined" if g["pearson_r"] is None else f"{g['pearson_r']:.4f}"
        log(f"pearson r(input gate, forget gate) {name}: {r} over {g['pairs']} (sentence, position) pairs")
    log(f"wrote {len(summary['per_sentence'])} sentence reports and index.html to {out}")
    return summary


def _choose_pictured(src_ids: List[List[int]], tgt_ids: Dict[int, List[int]], fetch: Callable[[Sequence[int]], None],
                     max_sentences: int, limit: int) -> Tuple[List[int], List[int]]:
    """(the first ``max_sentences`` sentences with at most ``limit`` subwords a side, the ones
    passed over before them). Targets are fetched only for candidates whose source fits, a few
    at a time, so a model translates little more than it pictures."""
    pictured: List[int] = []
    passed_over: List[int] = []
    n = 0
    while len(pictured) < max_sentences and n < len(src_ids):
        candidates = []
        while n < len(src_ids) and len(candidates) < max_sentences - len(pictured):
            (candidates if len(src_ids[n]) <= limit else passed_over).append(n)
            n += 1
        fetch(candidates)
        for m in candidates:
            (pictured if len(tgt_ids[m]) <= limit else passed_over).append(m)
    return pictured, sorted(passed_over)


def _sides(row: dict) -> str:
    sides = [f"{row['source_tokens']:,} source subwords"]
    if row["target_tokens"] is not None:
        sides.append(f"{row['target_tokens']:,} target subwords")
    return " and ".join(sides)


def _target_kind(tgt_lines: Optional[Sequence[str]], search: Optional[dict]) -> str:
    if tgt_lines is not None:
        return "reference (--tgt)"
    greedy = bool((search or {}).get("greedy", False))
    return "model translation (greedy)" if greedy else "model translation (beam search)"


def _targets(loaded, src_lines: Sequence[str], tgt_lines: Optional[Sequence[str]], todo: List[int],
             need: Sequence[int], device, search: Optional[dict]) -> Dict[int, List[int]]:
    """{sentence: target ids} for the sentences in ``need``: the given references, else the
    model's own translations."""
    tv = loaded.tgt_vocab
    if tgt_lines is not None:
        return {n: tv.encode(tgt_lines[todo[n]]) for n in need}
    from rnmt.search.translator import Translator

    translator = Translator(loaded.model, loaded.src_vocab, tv, loaded.config.search, device)
    opts = dict(search or {})
    greedy = bool(opts.pop("greedy", False))
    results = translator.translate([src_lines[todo[n]] for n in need], greedy=greedy, **opts)
    return {n: r[0].tokens for n, r in zip(need, results)}


def _set_gates(model, src_ids: List[List[int]], tgt_ids: Dict[int, List[int]], enc_units: List[str],
               dec_units: List[str], batch_tokens: int, device, out: Path, summary: dict) -> None:
    """The ATR units' gate statistics over the whole set (``summary["gates"]``) and their
    position-wise pictures (``summary["set_images"]``)."""
    collector = _GateCollector()
    for idx, src, mask in make_translation_batches(src_ids, batch_tokens):
        src, mask = src.to(device), mask.to(device)
        lengths = mask.sum(1).tolist()
        if enc_units:
            gates = model.encoder_gates(src, mask)
            for d in enc_units:
                collector.add(f"encoder.{d}", gates[f"{d}.i"], gates[f"{d}.f"], lengths)
        if dec_units:
            tgts = [np.asarray(tgt_ids[n], dtype=np.int64) for n in idx]
            tgt_in = torch.from_numpy(pad_sequences(tgts, prefix=BOS_ID)).to(device)
            trace = model.decoder_trace(src, mask, tgt_in)
            steps = [len(t) + 1 for t in tgts]
            for u in dec_units:
                collector.add(f"decoder.{u}", trace[f"{u}.i"], trace[f"{u}.f"], steps)
    groups = {f"encoder.{d}": [f"encoder.{d}"] for d in enc_units}
    if len(enc_units) > 1:
        groups["encoder (both directions)"] = [f"encoder.{d}" for d in enc_units]
    groups.update({f"decoder.{u}": [f"decoder.{u}"] for u in dec_units})
    summary["gates"] = collector.summary(groups)
    curves = {k: {"input": np.array(v["input"]), "forget": np.array(v["forget"]),
                  "r": v["pearson_r"], "pairs": v["pairs"]}
              for k, v in summary["gates"].items() if k != "encoder (both directions)"}
    summary["set_images"] = []
    for side, title in (("encoder", "ATR encoder: position-wise mean gates"),
                        ("decoder", "ATR decoder (target positions): mean gates")):
        side_curves = {k: v for k, v in curves.items() if k.startswith(side)}
        if side_curves:
            plots.gate_positions(side_curves, out / f"gates_{side}.png",
                                 title=f"{title} over {len(src_ids)} sentences")
            summary["set_images"].append(f"gates_{side}.png")


def _sentence_report(loaded, fd, line: int, source: str, enc_units: List[str], dec_units: List[str], device,
                     out: Path) -> dict:
    """One pictured sentence: its attention, source gates and dependency pictures and figures."""
    model, sv, tv = loaded.model, loaded.src_vocab, loaded.tgt_vocab
    stem = f"line{line:05d}"
    src_lab, tgt_lab = _labels(sv, fd.src_ids), _labels(tv, fd.tgt_ids)
    entry = {"line": line, "source": source, "target": tv.decode(fd.tgt_ids), "forced_log_prob": fd.score,
             "images": []}
    if fd.attention is not None:
        name = f"{stem}_attention.png"
        plots.heatmap(fd.attention, tgt_lab, src_lab, out / name, vmin=0.0,
                      title=f"line {line}: attention weights", xlabel="source tokens",
                      ylabel="target tokens (step j predicts this token)", colorbar_label="attention weight")
        entry["images"].append(name)
    for key, values in sorted(fd.source_gates.items(), reverse=True):
        title, suffix = GATE_TITLES.get(key, (f"source gate {key}", f"gate_{key}"))
        name = f"{stem}_{suffix}.png"
        plots.heatmap(values, tgt_lab, src_lab, out / name, vmin=0.0, vmax=1.0, cmap="gray",
                      title=f"line {line}: {title}", xlabel="source tokens",
                      ylabel="target tokens (step j predicts this token)", colorbar_label=title)
        entry["images"].append(name)
    src = torch.tensor([fd.src_ids + [sv.eos_id]], device=device)
    if "fwd" in enc_units:
        # Eq. 10's weights depend only on the gates: g_{t,k} = i_k * prod_{l=k+1..t} f_l.
        gates = model.encoder_gates(src, torch.ones_like(src, dtype=torch.bool))
        _, mean, _ = chain_weights(gates["fwd.i"], gates["fwd.f"], full=False)
        entry.update(_dependencies(mean[0].cpu().numpy(), src_lab, out, f"{stem}_encoder",
                                   f"line {line}: forward encoder", "source token k (input)",
                                   "source position t (state h_t)", entry["images"], "encoder"))
    if dec_units:
        tgt_in = torch.tensor([[BOS_ID] + fd.tgt_ids], device=device)
        trace = model.decoder_trace(src, torch.ones_like(src, dtype=torch.bool), tgt_in)
        _, mean, _ = decoder_chain(trace, full=False, units=dec_units)
        n = len(dec_units)
        inputs = mean[0, 0::n, 0::n].cpu().numpy()  # the first unit's states on the word inputs y_{k-1}
        in_lab = ["<s>"] + [tv.id_to_piece(i) for i in fd.tgt_ids]
        entry.update(_dependencies(inputs, in_lab, out, f"{stem}_decoder",
                                   f"line {line}: decoder unit 1 (inputs y_(j-1))",
                                   "previous target token y_(k-1) (input)",
                                   "decoder step j (state s~_j reads y_(j-1))", entry["images"], "decoder"))
    return entry


def _dependencies(mean: np.ndarray, labels: List[str], out: Path, stem: str, title: str, xlabel: str,
                  ylabel: str, images: List[str], key: str) -> dict:
    heads = strongest_previous(mean)
    weights = [None if h is None else float(mean[t, h]) for t, h in enumerate(heads)]
    plots.heatmap(mean, labels, labels, out / f"{stem}_dependency.png", lower_triangle=True, vmin=0.0,
                  title=f"{title}: dependency weights g_k (ATR eq. 10)", xlabel=xlabel, ylabel=ylabel,
                  colorbar_label="mean over hidden units of g_k")
    plots.dependency_arcs(labels, heads, weights, out / f"{stem}_arcs.png",
                          title=f"{title}: strongest previous token")
    images += [f"{stem}_dependency.png", f"{stem}_arcs.png"]
    return {f"{key}_strongest_previous": [
        {"position": t, "token": labels[t], "previous": None if h is None else labels[h],
         "previous_position": h, "weight": w} for t, (h, w) in enumerate(zip(heads, weights))]}


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def render_html(summary: dict) -> str:
    """A self-contained page (no scripts, fonts or styles from elsewhere)."""
    e = html.escape
    parts = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\"><title>rnmt analyze</title>",
             "<style>body{font-family:sans-serif;margin:1.5em;max-width:100%}img{max-width:100%;"
             "border:1px solid #ccc;margin:4px}table{border-collapse:collapse}td,th{border:1px solid #bbb;"
             "padding:2px 8px;text-align:right}.t{text-align:left}</style></head><body>",
             "<h1>rnmt analyze</h1>",
             f"<p>{summary['sentences']} sentences; pictures for the first {summary['pictured']} of at most "
             f"{summary['max_picture_tokens']} subwords a side. Target side: {e(summary['target'])}.</p>"]
    if summary["not_pictured"]:
        passed = "; ".join(f"line {row['line']} ({_sides(row)})" for row in summary["not_pictured"])
        parts.append(f"<p>Not pictured, longer than that: {e(passed)}.</p>")
    if summary["gates"]:
        parts.append("<h2>ATR input and forget gates</h2><table><tr><th class=t>unit</th><th>Pearson r "
                     "(all pairs)</th><th>pairs</th><th>r of position means</th></tr>")
        for name, g in summary["gates"].items():
            parts.append(f"<tr><td class=t>{e(name)}</td><td>{_fmt(g['pearson_r'])}</td><td>{g['pairs']}</td>"
                         f"<td>{_fmt(g['pearson_r_of_position_means'])}</td></tr>")
        parts.append("</table>")
        for img in summary.get("set_images", []):
            parts.append(f"<div><img src=\"{e(img)}\" alt=\"{e(img)}\"></div>")
    for s in summary["per_sentence"]:
        parts.append(f"<h2>line {s['line']}</h2><p><b>source:</b> {e(s['source'])}<br>"
                     f"<b>target:</b> {e(s['target'])}<br><b>forced log-probability:</b> "
                     f"{s['forced_log_prob']:.3f}</p>")
        for img in s["images"]:
            parts.append(f"<div><img src=\"{e(img)}\" alt=\"{e(img)}\"></div>")
        for key, label in (("encoder_strongest_previous", "forward encoder"),
                           ("decoder_strongest_previous", "decoder unit 1")):
            if key in s:
                parts.append(f"<p>Strongest previous token ({label}):</p><table><tr><th>t</th>"
                             "<th class=t>token</th><th class=t>strongest previous</th><th>k</th>"
                             "<th>mean g_k</th></tr>")
                for row in s[key]:
                    parts.append(f"<tr><td>{row['position']}</td><td class=t>{e(row['token'])}</td>"
                                 f"<td class=t>{e(row['previous'] or '-')}</td>"
                                 f"<td>{'-' if row['previous_position'] is None else row['previous_position']}</td>"
                                 f"<td>{_fmt(row['weight'])}</td></tr>")
                parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
