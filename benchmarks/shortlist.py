"""Lexical shortlists: decoding speed and BLEU of a model with and without one.

    python -m benchmarks.shortlist --model RUN [--model RUN2 ...] --shortlist FILE
        [--sizes 100,50 50,10] [--src test.es --ref test.en] [--beam 5] [--rounds 3] [--json OUT]
    python -m benchmarks.shortlist --runtime --model EXPORT_DIR ... (an export written with
        rnmt export --shortlists, translated by rnmt_runtime on one thread)

For each model, each round translates the whole source file with the whole vocabulary and
then with the shortlist at each ``FREQUENT,BEST`` size, in that order, one thread, the
model's own search settings except ``--beam``; a way's speed is its best round's
sentences/s, and its ratio is against the whole vocabulary's best round of the same model.
Prints and (``--json``) records BLEU and chrF against the references, the BLEU difference
from the whole vocabulary (paired bootstrap), the lines whose output equals the whole
vocabulary's, the changed lines that a word outside the list forced, and the mean size of
a line's list (its batch's). Stop every other job on the machine while it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from benchmarks.constraints import commit  # the checkout's short commit


def sizes(text: str) -> Tuple[int, int]:
    frequent, best = text.split(",")
    return int(frequent), int(best)


class Decoder:
    """One model as the benchmark drives it: rnmt's PyTorch model, or an export in the runtime."""

    def __init__(self, path: str, runtime: bool, int8: bool) -> None:
        self.runtime = runtime
        if runtime:
            import rnmt_runtime

            self.model: Any = rnmt_runtime.load(path, threads=1)
            self.src_vocab, self.tgt_vocab = self.model.src_vocab, self.model.tgt_vocab
        else:
            import rnmt

            self.model = rnmt.load(path, device="cpu", int8=int8)
            self.src_vocab, self.tgt_vocab = self.model.loaded.src_vocab, self.model.loaded.tgt_vocab

    def use(self, path: Optional[str], way: Optional[Tuple[int, int]]) -> Any:
        """Switch to the shortlist at ``way``'s sizes (None: the whole vocabulary); returns it."""
        self.model.use_shortlist(None if way is None else path, *(way or (0, 0)))
        return self.model.shortlist if self.runtime else self.model._translator.shortlist

    def translate(self, lines: List[str], beam: int) -> List[str]:
        if self.runtime:
            import rnmt_runtime

            return [hyps[0].text for hyps in self.model.translate(lines, rnmt_runtime.Options(beam=beam))]
        return self.model.translate(lines, beam=beam)

    def batches(self, ids: List[List[int]], beam: int) -> Any:
        """(indices, source batch) as the translator batches ``ids``."""
        if self.runtime:
            import rnmt_runtime
            from rnmt_runtime.limits import sentences_per_batch, token_batches

            plan = self.model.plan(rnmt_runtime.Options(beam=beam))
            per_batch = sentences_per_batch(beam, len(self.tgt_vocab))
            return ((idx, src) for idx, src, _ in token_batches(ids, plan.batch_tokens, per_batch,
                                                                  self.model.model.eos_id, self.model.model.pad_id))
        from rnmt.data import make_translation_batches
        from rnmt.search.limits import sentences_per_batch as per_batch_torch

        translator = self.model._translator
        per_batch = per_batch_torch(max(beam, translator.search.nbest), len(self.tgt_vocab))
        return ((idx, src) for idx, src, _ in make_translation_batches(ids, translator.search.batch_tokens,
                                                                       max_sentences=per_batch))


def batch_lists(decoder: Decoder, src: List[str], shortlist: Any, beam: int) -> List[set]:
    """Each line's candidate words: its batch's shortlist, batched as the translator batches."""
    todo = [i for i, line in enumerate(src) if line.strip()]  # blank lines are never searched
    ids = [decoder.src_vocab.encode(src[i]) for i in todo]
    lists: List[set] = [set() for _ in src]
    for idx, batch in decoder.batches(ids, beam):
        words = set(shortlist.rows(batch).tolist())
        for i in idx:
            lists[todo[i]] = words
    return lists


def measure(path: str, shortlist_path: str, ways: List[Optional[Tuple[int, int]]], src: List[str], ref: List[str],
            beam: int, rounds: int, int8: bool = False, runtime: bool = False) -> Dict[str, Any]:
    from sacrebleu.metrics import BLEU, CHRF

    from rnmt.evaluation.significance import difference_interval

    decoder = Decoder(path, runtime, int8)
    decoder.translate(src[:8], beam)  # kernels and first-call costs outside the timing
    best: Dict[int, float] = {}
    outputs: Dict[int, List[str]] = {}
    for _ in range(rounds):
        for k, way in enumerate(ways):
            decoder.use(shortlist_path, way)
            start = time.perf_counter()
            outputs[k] = decoder.translate(src, beam)
            best[k] = min(best.get(k, float("inf")), time.perf_counter() - start)
    rows = []
    for k, way in enumerate(ways):
        shortlist = decoder.use(shortlist_path, way)
        diff = difference_interval(outputs[k], outputs[0], ref)
        lists = None if shortlist is None else batch_lists(decoder, src, shortlist, beam)
        encode = decoder.tgt_vocab.encode
        changed = [i for i in range(len(src)) if outputs[k][i] != outputs[0][i]]
        rows.append({
            "shortlist": None if way is None else {"frequent": way[0], "best": way[1]},
            # the words a line's search chose among (its batch's list), averaged over the lines
            "mean_list_words": (len(decoder.tgt_vocab) if lists is None else
                                round(sum(len(w) for w in lists if w) / sum(1 for w in lists if w), 1)),
            "bleu": round(BLEU().corpus_score(outputs[k], [ref]).score, 2),
            "chrf": round(CHRF().corpus_score(outputs[k], [ref]).score, 2),
            # BLEU minus the whole vocabulary's, its paired bootstrap 95% interval and p (1,000 resamples)
            "bleu_difference": [round(diff.observed, 2), round(diff.low, 2), round(diff.high, 2)],
            "p": round(diff.p_value, 3),
            "same_as_whole": len(src) - len(changed),
            # changed lines whose whole-vocabulary output has a word outside the line's list (the
            # others changed because the softmax over the listed words ranks the beam otherwise)
            "changed_by_unlisted_words": 0 if lists is None else sum(
                1 for i in changed if not set(encode(outputs[0][i])) <= lists[i]),
            "sentences_per_s": round(len(src) / best[k], 1),
            "speedup": round(best[0] / best[k], 2),
        })
    return {"model": path, "vocabulary": len(decoder.tgt_vocab), "rows": rows}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True, help="run directory or checkpoint (repeatable)")
    ap.add_argument("--shortlist", required=True, help="the shortlist file (rnmt shortlist)")
    ap.add_argument("--sizes", nargs="+", type=sizes, default=[(100, 50), (50, 10)], metavar="FREQUENT,BEST")
    ap.add_argument("--src", default="../shared/data/bible-es-en/test.es")
    ap.add_argument("--ref", default="../shared/data/bible-es-en/test.en")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--int8", action="store_true", help="decode with int8 products, with and without the shortlist")
    ap.add_argument("--runtime", action="store_true", help="the models are export directories: rnmt_runtime decodes")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args(argv)

    import torch

    from rnmt.reproduce.machine import cpu_bf16, cpu_model

    torch.set_num_threads(args.threads)
    src = Path(args.src).read_text(encoding="utf-8").splitlines()
    ref = Path(args.ref).read_text(encoding="utf-8").splitlines()
    ways: List[Optional[Tuple[int, int]]] = [None, *args.sizes]
    result = {"commit": commit(), "command": "python -m benchmarks.shortlist " + " ".join(argv or sys.argv[1:]),
              "machine": f"{cpu_model()} ({cpu_bf16()}), {args.threads} thread(s), PyTorch {torch.__version__}",
              "beam": args.beam, "rounds": args.rounds, "sentences": len(src), "int8": args.int8,
              "runtime": args.runtime,
              "models": [measure(m, args.shortlist, ways, src, ref, args.beam, args.rounds, args.int8, args.runtime)
                         for m in args.model]}
    for m in result["models"]:
        print(f"{m['model']} (vocabulary {m['vocabulary']:,})")
        print("  shortlist      list words  BLEU   chrF   same  sent/s  speedup  BLEU difference [95%], p")
        for r in m["rows"]:
            name = "whole" if r["shortlist"] is None else f"{r['shortlist']['frequent']},{r['shortlist']['best']}"
            print(f"  {name:12s} {r['mean_list_words']:>10,.0f}  {r['bleu']:5.2f}  {r['chrf']:5.2f}  "
                  f"{r['same_as_whole']:4d}  {r['sentences_per_s']:6.1f}  {r['speedup']:5.2f}x  "
                  f"{r['bleu_difference'][0]:+.2f} [{r['bleu_difference'][1]:+.2f}, {r['bleu_difference'][2]:+.2f}], "
                  f"p {r['p']:.3f}")
    print(result["machine"])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
