"""`distill`: the stages of `rnmt.distill` in order, each skipped when its record says done.

Layout of the output directory::

    distill.json            what is distilled (`rnmt.distill.setup`)
    data/original.SRC|TGT   the training pairs distilled (the first --max-lines of data.train)
    data/spm*.model         the teacher's vocabulary, which every run uses
    decode/chunk-K.jsonl    the teacher's translations, chunk by chunk (`rnmt.distill.decode`)
    data/distilled.SRC|TGT  the pairs the filters keep; filter.json their counts
    shortlist.json          with --shortlist: a lexical shortlist of the distilled pairs
    runs/NAME/ROLE.seedK    the students', fine-tunings' and baselines' runs
    export/                 the exported students, where `rnmt.export` exists
    report.json, report.md  the comparison (`rnmt.distill.report`)
    stages/*.done           one record per finished stage or run
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from rnmt.distill import decode as decoding
from rnmt.distill.filters import filter_pairs
from rnmt.distill.options import DistillOptions
from rnmt.distill.setup import MANIFEST, Student, Teacher, check_students, check_teachers, claim_out_dir, manifest
from rnmt.distill.students import DATA_DIR, STAGES_DIR, final_student, planned_runs, train_runs
from rnmt.errors import UserError
from rnmt.training.checkpoint import atomic_write_text

SHORTLIST = "shortlist.json"  # with --shortlist: the lexical shortlist of the distilled pairs

Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def distill(teachers: Sequence[str], students: Sequence[str], out: str, options: Optional[DistillOptions] = None,
            log: Optional[Log] = None, command: Optional[str] = None) -> Dict[str, Any]:
    """Run (or resume) a distillation; returns the report (module docstring for the layout)."""
    from rnmt.reproduce.run import code_commit
    from rnmt.training import run_lock

    options = options or DistillOptions()
    log = log or _stderr
    options.check()
    commit = code_commit()  # the code this process runs, whatever the checkout holds by the report
    teacher = check_teachers(teachers)
    chosen = check_students(students, teacher, str(teachers[0]), options.overrides)
    corpus = _corpus_files(chosen)
    out_dir = Path(out)
    record = manifest(teacher, chosen, options)
    resuming = claim_out_dir(out_dir, record)  # before anything is written
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = run_lock.hold(out_dir)  # one distillation process per directory
    try:
        if not resuming:
            atomic_write_text(out_dir / MANIFEST, json.dumps(record, indent=1) + "\n")
        else:
            log(f"distill: resuming the distillation in {out_dir}")
        sources, references = _data_stage(out_dir, teacher, corpus, options, log)
        _decode_stage(out_dir, teacher, sources, references, options, log)
        counts = _filter_stage(out_dir, teacher, sources, options, log)
        if options.shortlist:
            _shortlist_stage(out_dir, teacher, log)
        runs = {s.name: planned_runs(s, out_dir, options, _joint(teacher)) for s in chosen}
        train_runs(runs, out_dir, options.jobs, log)
        notes = _export_stage(out_dir, runs, options, log)
        return _report_stage(out_dir, teacher, chosen, runs, counts, options, notes, (commit, command), log)
    finally:
        lock.release()


def _joint(teacher: Teacher) -> bool:
    return teacher.src_vocab.to_bytes() == teacher.tgt_vocab.to_bytes()


def _corpus_files(students: Sequence[Student]) -> List[Tuple[str, str]]:
    """The (source, target) files of the training pairs to distil: the first student
    config's data.train (every student trains on the same distilled corpus)."""
    from rnmt.config import config_from_dict
    from rnmt.training.preflight import train_files

    def files_of(s: Student) -> Tuple[List[Tuple[str, str]], Any]:
        cfg = config_from_dict(s.tree, source=str(s.path))
        return [(str(Path(f.src).resolve()), str(Path(f.tgt).resolve())) for f in train_files(cfg)], \
            str(Path(str(cfg.data.test)).resolve())  # check_students made sure there is one

    first, test = files_of(students[0])
    for other in students[1:]:
        files, other_test = files_of(other)
        if files != first or other_test != test:
            raise UserError(f"student configs {students[0].path} and {other.path} name different data.train or "
                            f"data.test: the students of one distillation share its corpus and its test set")
    return first


def _done(out: Path, stage: str) -> Path:
    return out / STAGES_DIR / f"{stage}.done"


def _mark(out: Path, stage: str, record: Dict[str, Any]) -> None:
    path = _done(out, stage)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def _data_stage(out: Path, teacher: Teacher, corpus: List[Tuple[str, str]], options: DistillOptions,
                log: Log) -> Tuple[List[str], List[str]]:
    """The pairs to distil, copied into DIR/data (a later edit of the user's files cannot
    shift a resumed decoding), and the teacher's vocabulary beside them."""
    from rnmt.data import iter_parallel, read_lines

    data = out / DATA_DIR
    src_file, tgt_file = data / f"original.{teacher.src}", data / f"original.{teacher.tgt}"
    if not _done(out, "data").is_file():
        sources, references = [], []
        for src_path, tgt_path in corpus:
            for _, s, t in iter_parallel(src_path, tgt_path):
                sources.append(s)
                references.append(t)
        if options.max_lines is not None:
            sources, references = sources[:options.max_lines], references[:options.max_lines]
        data.mkdir(parents=True, exist_ok=True)
        _write_lines(src_file, sources)
        _write_lines(tgt_file, references)
        if _joint(teacher):
            teacher.src_vocab.save(data / "spm.model")
        else:
            teacher.src_vocab.save(data / "spm.src.model")
            teacher.tgt_vocab.save(data / "spm.tgt.model")
        _mark(out, "data", {"pairs": len(sources), "from": [list(c) for c in corpus]})
        log(f"data: {len(sources):,} training pairs to distil")
    return read_lines(src_file), read_lines(tgt_file)


def _decode_stage(out: Path, teacher: Teacher, sources: List[str], references: List[str], options: DistillOptions,
                  log: Log) -> None:
    if _done(out, "decode").is_file():
        return
    import torch

    from rnmt.api import load

    model = load([str(p) for p in teacher.paths], device=options.device)
    torch.set_num_threads(options.threads)
    what = f"beam {options.beam}" + (f", best of {options.nbest} by chrF" if options.nbest > 1 else "")
    log(f"decode: {len(sources):,} lines with the teacher ({len(teacher.paths)} model(s), {what}), "
        f"{options.chunk_lines} lines a chunk")
    decoding.decode_all(model, sources, references, out / decoding.DECODE_DIR, options.chunk_lines, options.beam,
                        options.nbest, log)
    _mark(out, "decode", {"lines": len(sources)})


def _filter_stage(out: Path, teacher: Teacher, sources: List[str], options: DistillOptions, log: Log) -> dict:
    if _done(out, "filter").is_file():
        return json.loads((out / "filter.json").read_text(encoding="utf-8"))
    decoded = decoding.read_chunks(out / decoding.DECODE_DIR, len(sources), options.chunk_lines)
    result = filter_pairs(sources, decoded, options.min_ratio, options.max_ratio, options.drop_worst)
    if not result.kept:
        raise UserError(f"the filters dropped all {len(sources):,} distilled pairs ({result.dropped}): nothing to "
                        f"train a student on; is the teacher trained?")
    data = out / DATA_DIR
    _write_lines(data / f"distilled.{teacher.src}", [sources[i] for i in result.kept])
    _write_lines(data / f"distilled.{teacher.tgt}", [decoded[i][0] for i in result.kept])
    counts = result.counts(len(sources))
    atomic_write_text(out / "filter.json", json.dumps(counts, indent=1) + "\n")
    _mark(out, "filter", counts)
    log(f"filter: kept {counts['kept']:,} of {counts['pairs']:,} pairs; dropped {counts['dropped']}")
    return counts


def _shortlist_stage(out: Path, teacher: Teacher, log: Log) -> None:
    """DIR/shortlist.json: IBM Model 1 over the distilled pairs with the teacher's vocabularies,
    which every student shares (`rnmt shortlist`'s defaults)."""
    from rnmt.data import read_lines
    from rnmt.search.shortlist import build_shortlist

    if _done(out, "shortlist").is_file():
        return
    data = out / DATA_DIR
    src, tgt = read_lines(data / f"distilled.{teacher.src}"), read_lines(data / f"distilled.{teacher.tgt}")
    pairs = list(zip(teacher.src_vocab.encode_batch(src), teacher.tgt_vocab.encode_batch(tgt)))
    text, _ = build_shortlist(pairs, teacher.src_vocab, teacher.tgt_vocab,
                              {"built_from": [f"distilled.{teacher.src}", f"distilled.{teacher.tgt}"]})
    atomic_write_text(out / SHORTLIST, text)
    _mark(out, "shortlist", {"shortlist": SHORTLIST, "pairs": len(pairs)})
    log(f"shortlist: {out / SHORTLIST} from {len(pairs):,} distilled pairs")


def _export_stage(out: Path, runs: Dict[str, List[dict]], options: DistillOptions, log: Log) -> List[str]:
    from rnmt.distill.export import export_students

    return export_students(out, [final_student(planned, seed) for planned in runs.values() for seed in options.seeds],
                           options.int8, log, options.shortlist)


def _report_stage(out: Path, teacher: Teacher, students: Sequence[Student], runs: Dict[str, List[dict]],
                  counts: dict, options: DistillOptions, notes: List[str], started: Tuple[str, Optional[str]],
                  log: Log) -> dict:
    from rnmt.data import read_lines
    from rnmt.distill.measure import measure_models
    from rnmt.distill.report import build_report, render_markdown

    if _done(out, "report").is_file() and (out / "report.json").is_file():
        return json.loads((out / "report.json").read_text(encoding="utf-8"))
    test = runs[students[0].name][0]["tree"]["data"]["test"]
    sources = read_lines(f"{test}.{teacher.src}")
    refs = read_lines(f"{test}.{teacher.tgt}")
    models: Dict[str, List[Path]] = {"teacher": list(teacher.paths)}
    run_of: Dict[str, str] = {}
    for name, planned in runs.items():
        for seed in options.seeds:
            final = final_student(planned, seed)
            models[f"{name}.student.seed{seed}"] = [final["dir"]]
            run_of[f"{name}.student.seed{seed}"] = str(final["dir"])
        for run in planned:
            if run["role"] == "baseline":
                models[run["key"]] = [run["dir"]]
                run_of[run["key"]] = str(run["dir"])
    log(f"report: {len(models)} models on {len(sources)} test sentences")
    data = out / DATA_DIR
    distilled = (read_lines(data / f"distilled.{teacher.src}"), read_lines(data / f"distilled.{teacher.tgt}"))
    measured = measure_models(models, sources, options.speed_threads, options.speed_rounds, log, distilled)
    for key, run_dir in run_of.items():
        measured[key]["run"] = run_dir
    shown_test = students[0].tree["data"]["test"]  # as the config gives it (a record names no local paths)
    extra = {"provenance": _provenance(*started, options), "test": shown_test, "test_sentences": len(sources),
             "bootstrap": options.bootstrap, "speed_threads": options.speed_threads,
             "speed_rounds": options.speed_rounds, "options": options.identity(),
             "decode": {"beam": options.beam, "nbest": options.nbest}, "notes": notes}
    report = build_report([s.name for s in students], options.seeds, measured, refs, options.bootstrap, counts, extra)
    hyp_dir = out / "hyp"
    hyp_dir.mkdir(exist_ok=True)
    for key, m in measured.items():
        _write_lines(hyp_dir / f"{key}.txt", m["hyps"])
    atomic_write_text(out / "report.json", json.dumps(report, indent=1) + "\n")
    atomic_write_text(out / "report.md", render_markdown(report))
    _mark(out, "report", {"report": "report.json"})
    log(f"report: {out / 'report.md'}")
    return report


def _provenance(commit: str, command: Optional[str], options: DistillOptions) -> Dict[str, Any]:
    import torch

    from rnmt.reproduce.machine import describe_machine, machine_line

    machine = describe_machine(torch.device("cpu"), options.speed_threads)
    return {"commit": commit, "command": command or " ".join(sys.argv), "machine": machine_line(machine),
            "machine_info": machine}
