"""The runtime without PyTorch against ``rnmt translate``: speed, memory, agreement, size.

    python -m benchmarks.deploy --model RUN_OR_CHECKPOINT [--input FILE] [--beam 5] [--threads 1 2]

Exports the model twice (``rnmt export``, fp32 and ``--int8``) into ``--work``, then
translates ``--input`` (default: the bundled Bible test set, 517 verses) with each of four
decoders, each in its own process, once per thread count: ``rnmt translate`` in fp32 and with
``--int8``, and ``rnmt translate --model EXPORT`` (the runtime) on the fp32 and the int8
export. Every run prints a 5-best list (``--nbest 5`` at the same beam: the same search, its
1-best and score read from the list).

Reported (docs/deploy.md, "Runtime", quotes one run):

* sentences/s of each decoder (``--speed``: the translation loop, model loading excluded)
  and the runtime's ratio to ``rnmt translate`` of the same precision;
* the peak resident memory of each process (``wait4``'s ``ru_maxrss``, loading included);
* agreement: the share of lines whose 1-best equals ``rnmt translate``'s (fp32) and the
  largest score difference on those lines (the scores printed with 4 decimals); the
  self-BLEU of every output against ``rnmt translate`` fp32's (sacrebleu);
* installed size of the runtime's dependency closure (onnxruntime, sentencepiece, numpy and
  what they require) against rnmt's (torch and the rest), from the installed files of the
  distributions in this environment;
* the CPU's model name and the vector flags that matter (from /proc/cpuinfo).

The machine may be loaded by other work: compare the ratios within one run, not figures
across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Dict, List

from benchmarks import REPO, module_env

FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_int8", "amx_bf16")


def cpu() -> Dict[str, object]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {"model": "unknown", "flags": []}
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = set((re.search(r"^flags\s*:\s*(.*)$", text, re.M) or re.search("$", "")).group(0).split())
    return {"model": model.group(1) if model else "unknown", "flags": [f for f in FLAGS if f in flags],
            "cpus": os.cpu_count()}


def measured(cmd: List[str], out: Path) -> Dict[str, float]:
    """Run ``cmd`` (stdout into ``out``); its sentences/s (from ``--speed``), wall seconds and peak RSS."""
    start = time.perf_counter()
    with open(out, "w", encoding="utf-8") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.PIPE, text=True, env=module_env(), cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"error: {' '.join(cmd)} failed:\n{err}")
    speed = re.search(r"([\d.]+) sentences/s", err)
    return {"sentences_per_s": float(speed.group(1)) if speed else float("nan"),
            "wall_s": round(time.perf_counter() - start, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def nbest(path: Path) -> Dict[int, List[tuple]]:
    lists: Dict[int, List[tuple]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        i, text, score = line.split(" ||| ")
        lists.setdefault(int(i), []).append((text, float(score)))
    return lists


def agreement(ours: Path, reference: Path) -> Dict[str, float]:
    import sacrebleu

    a, b = nbest(ours), nbest(reference)
    same = [i for i in b if a[i][0][0] == b[i][0][0]]
    diff = max((abs(a[i][0][1] - b[i][0][1]) for i in same), default=0.0)
    hyp, ref = [a[i][0][0] for i in sorted(b)], [b[i][0][0] for i in sorted(b)]
    return {"same_1best": round(len(same) / len(b), 4), "lines": len(b), "max_score_diff": round(diff, 5),
            "self_bleu": round(sacrebleu.corpus_bleu(hyp, [ref]).score, 2)}


def installed_mib(roots: List[str]) -> Dict[str, object]:
    """Size of the installed files of ``roots`` and every distribution they require."""
    seen: Dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = re.split(r"[ ;<>=!~\[(]", todo.pop(), maxsplit=1)[0].strip()
        key = name.lower().replace("_", "-")
        if not key or key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = dist
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
    total = 0
    for dist in seen.values():
        for f in dist.files or []:
            try:
                total += os.path.getsize(dist.locate_file(f))
            except OSError:
                pass
    return {"mib": round(total / 2 ** 20, 1), "distributions": sorted(seen)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="training run or checkpoint")
    p.add_argument("--input", default=str(REPO / "data" / "sample" / "test.es"))
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--work", default="deploy-bench", help="exports and outputs go here")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rnmt = [sys.executable, "-m", "rnmt"]
    exports = {"fp32": work / "export-fp32", "int8": work / "export-int8"}
    for precision, directory in exports.items():
        if not (directory / "manifest.json").is_file():
            subprocess.run(rnmt + ["export", args.model, "--out", str(directory), "--force"]
                           + (["--int8"] if precision == "int8" else []), check=True, env=module_env(), cwd=REPO)
    decoders = {"rnmt translate fp32": ["--model", args.model],
                "rnmt translate --int8": ["--model", args.model, "--int8"],
                "runtime fp32": ["--model", str(exports["fp32"])], "runtime int8": ["--model", str(exports["int8"])]}
    shown = Path(args.input).resolve()
    shown_input = str(shown.relative_to(REPO)) if shown.is_relative_to(REPO) else args.input  # no machine paths
    results: Dict[str, object] = {"cpu": cpu(), "beam": args.beam, "input": shown_input, "runs": {}}
    for threads in args.threads:
        for name, model in decoders.items():
            out = work / f"{name.replace(' ', '_').replace('-', '')}.t{threads}.txt"
            cmd = rnmt + ["translate", *model, "--input", args.input, "--beam", str(args.beam), "--nbest", "5",
                          "--threads", str(threads), "--speed"]
            results["runs"][f"{name}, {threads} thread(s)"] = run = measured(cmd, out)
            run["output"] = out.name  # in --work
            print(f"{name}, {threads} thread(s): {run}", file=sys.stderr, flush=True)
    for threads in args.threads:
        ref = work / f"rnmt_translate_fp32.t{threads}.txt"
        for name in ("runtime fp32", "runtime int8", "rnmt translate --int8"):
            out = work / f"{name.replace(' ', '_').replace('-', '')}.t{threads}.txt"
            results.setdefault("agreement", {})[f"{name} vs rnmt translate fp32, {threads} thread(s)"] = \
                agreement(out, ref)
        results["agreement"][f"runtime int8 vs runtime fp32, {threads} thread(s)"] = agreement(
            work / f"runtime_int8.t{threads}.txt", work / f"runtime_fp32.t{threads}.txt")
    runtime, full = ["onnxruntime", "sentencepiece", "numpy"], ["rnmt", "torch", "numpy", "sentencepiece", "sacrebleu",
                                                                "PyYAML", "tqdm", "safetensors", "matplotlib", "ninja"]
    serve = ["fastapi", "uvicorn"]
    results["installed"] = {"runtime": installed_mib(runtime), "rnmt": installed_mib(full),
                            "runtime with serve": installed_mib(runtime + serve),
                            "rnmt with serve": installed_mib(full + serve)}
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
