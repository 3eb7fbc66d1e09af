#!/usr/bin/env bash
# The Bible distillation measurement of docs/distill.md: the teacher run distilled into a
# 64-unit GRU and a 128-unit ATR RNNSearch, two seeds each, with the same students trained
# on the original data as baselines; the report lands in results/distill/.
#
#   nohup results/distill/run.sh TEACHER_RUN [WORK] &      # from the repository root
#
# TEACHER_RUN: the converged teacher's run directory (rnmt reproduce atr --converge ...
# --systems rnnsearch-gru --seeds 1 writes it under OUT/atr-converged/runs/rnnsearch-gru).
# WORK (default runs/distill-bible) keeps everything; run the same line again after a kill or a
# reboot and it continues where it stopped (rnmt distill is resumable stage by stage). It runs
# niced and logs to WORK/run.log.
#
# The teacher is frozen at the start: its best checkpoint is copied to WORK/teacher (a run
# still training replaces its best.safetensors; the distillation records the copy's digest).
# Without TEACHER_DONE=1 the script refuses a teacher whose training has not ended
# (TEACHER_RUN/trained.json, written by rnmt reproduce when early stopping ends the run).
#
# JOBS (default 2): student and baseline runs trained side by side (rnmt distill --jobs).
#
# PAUSE_WHILE_TIMING (a pgrep -f pattern, e.g. 'rnmt.reproduce.worker'): other long jobs on this
# machine, stopped (SIGSTOP) while the report times the models and continued (SIGCONT) when
# rnmt distill exits, so that no speed is measured beside them.
#
# SHORT=1: an end-to-end check of this script on a short budget (MAX_LINES training pairs,
# default 300; STEPS updates per student, default 60, validated once on 100 dev sentences;
# one speed round); its report stays in
# WORK/distill-short and results/distill/ is not touched.
set -euo pipefail
cd "$(dirname "$0")/../.."
TEACHER_RUN=${1:?usage: results/distill/run.sh TEACHER_RUN [WORK]}
WORK=${2:-runs/distill-bible}
PYTHON=${PYTHON:-python}
mkdir -p "$WORK"
LOG="$WORK/run.log"
say() { echo "[$(date -u +%FT%TZ)] $*" | tee -a "$LOG"; }

if [ "${SHORT:-0}" != 1 ] && [ "${TEACHER_DONE:-0}" != 1 ] && [ ! -f "$TEACHER_RUN/trained.json" ]; then
    say "error: $TEACHER_RUN has not finished training (no trained.json); wait for it, or set TEACHER_DONE=1"
    exit 2
fi
if [ ! -f "$WORK/teacher/best.safetensors" ]; then
    rm -rf "$WORK/teacher.tmp" && mkdir -p "$WORK/teacher.tmp"
    cp "$TEACHER_RUN/best.safetensors" "$TEACHER_RUN/config.yaml" "$WORK/teacher.tmp/"
    cp "$TEACHER_RUN"/plan.json "$TEACHER_RUN"/spm*.model "$WORK/teacher.tmp/" 2>/dev/null || true
    mv "$WORK/teacher.tmp" "$WORK/teacher"
    say "teacher frozen: $TEACHER_RUN/best.safetensors -> $WORK/teacher ($(sha256sum "$WORK/teacher/best.safetensors" | cut -c1-12))"
fi

ARGS=(distill --teacher "$WORK/teacher"
      --student results/distill/student-gru.yaml --student results/distill/student-atr.yaml
      --seeds 1 2 --beam 5 --drop-worst 5 --threads 1 --jobs "${JOBS:-2}" --speed-threads 1)
if [ "${SHORT:-0}" = 1 ]; then
    OUT="$WORK/distill-short"
    STEPS=${STEPS:-60}
    ARGS+=(--out "$OUT" --max-lines "${MAX_LINES:-300}" --chunk-lines 50 --set "train.max_steps=$STEPS"
           --set "train.validate_every=$STEPS" --set train.log_every=20 --set train.warmup_steps=20
           --set data.dev_max_sentences=100 --speed-rounds 1 --bootstrap 200)
else
    OUT="$WORK/distill"
    ARGS+=(--out "$OUT" --chunk-lines 500 --speed-rounds 3 --bootstrap 1000)
fi
say "start: $PYTHON -m rnmt ${ARGS[*]}"
nice -n 10 "$PYTHON" -m rnmt "${ARGS[@]}" >>"$LOG" 2>&1 &
DISTILL=$!
if [ -n "${PAUSE_WHILE_TIMING:-}" ]; then
    # The report stage logs "report: N models on M test sentences" before it times anything.
    resume_others() { pkill -CONT -f "$PAUSE_WHILE_TIMING" || true; }
    trap resume_others EXIT
    trap 'exit 1' INT TERM
    (from=$(wc -l < "$LOG")
     while kill -0 "$DISTILL" 2>/dev/null; do
         if tail -n +"$((from + 1))" "$LOG" | grep -q 'report: .* models on'; then
             pkill -STOP -f "$PAUSE_WHILE_TIMING" && say "paused '$PAUSE_WHILE_TIMING' while the report times the models"
             break
         fi
         sleep 5
     done) &
fi
status=0
wait "$DISTILL" || status=$?
[ "$status" = 0 ] || { say "rnmt distill stopped with status $status; run this script again to resume"; exit 1; }
say "done: $OUT/report.md"
if [ "${SHORT:-0}" != 1 ]; then
    cp "$OUT/report.json" "$OUT/report.md" results/distill/
    mkdir -p results/distill/hyp && cp "$OUT"/hyp/*.txt results/distill/hyp/
    cp "$OUT/filter.json" results/distill/
    say "copied the report to results/distill/"
fi
