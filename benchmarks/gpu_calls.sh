#!/usr/bin/env bash
# The device calls docs/gpu.md plans, each run on the GPU machine from the repository
# root after `bash benchmarks/gpu_pack.sh --peers` here (carry .gpudata and .whl); results go
# to $OUT. Pick one:
#
#   bash benchmarks/gpu_calls.sh same-call    # fairseq and rnmt RNNSearch-GRU in one call (fp32,
#                                             # bf16/fp16) with the profiles; then rnmt's fp32 row
#                                             # again, decoding with and without CUDA graphs;
#                                             # Cseq2seq-I; then the GPU tests (about 7 min)
#   UPDATES=2000 bash benchmarks/gpu_calls.sh bf16-parity
#                                             # rnmt reproduce bf16 on the GPU, RNNSearch, two
#                                             # seeds at equal updates (about 4.5 min), packed
#                                             # into one archive (a call brings back few files)
#
#   bash benchmarks/gpu_calls.sh equal-length # fairseq and rnmt RNNSearch-GRU, fp32, each trained
#                                             # 1,000 updates before decoding (equal output lengths),
#                                             # rnmt decoding with and without CUDA graphs; then
#                                             # graphs against eager on one sentence per call
#                                             # (about 6 min)
#   bash benchmarks/gpu_calls.sh compile      # train.compile_step: fairseq and rnmt RNNSearch-GRU
#                                             # in fp32 in one process, the rnmt row trained
#                                             # eagerly and then with the compiled step, profiles
#                                             # of both; DTMT#4 the same; then the GPU tests, the
#                                             # compiled step's included (about 8 min; compiling
#                                             # is most of it). PRECISIONS=fp32,bf16 adds bf16/fp16
#   bash benchmarks/gpu_calls.sh graphed      # the whole training update as one CUDA graph, one batch
#                                             # shape: RNNSearch-GRU, ATR, DTMT#4 eager against
#                                             # replayed, with the replay's parameters checked against
#                                             # eager training (benchmarks/studies/graphed_update.py; about 2
#                                             # min); then train.cuda_graphs off and on for
#                                             # RNNSearch-GRU and ATR beside fairseq (about 4 min);
#                                             # then the GPU tests (about 2.5 min)
#   bash benchmarks/gpu_calls.sh graphs-next  # the GPU tests at train.cuda_graphs: auto (the default
#                                             # since b51b898); DTMT#4 with graphs once its shapes are
#                                             # recorded, against eager (about 7 min); BF16=1 adds
#                                             # RNNSearch-GRU and ATR in bf16 with and without graphs
#                                             # (about 3 min more); TESTS=0 leaves the tests out
#   bash benchmarks/gpu_calls.sh cpu-bf16     # the device's host CPU (a Xeon with AVX-512 bf16 and
#                                             # AMX) for issue #33: peak RSS of bf16 against fp32
#                                             # training on two of its cores (about 3 min);
#                                             # PEERS=1 adds rnmt fp32/bf16 against fairseq's
#                                             # LSTM there (about 4 min more)
#
# Settings: GRAPHED_ARGS (more options for graphed's benchmarks/studies/graphed_update.py, e.g. toy sizes
# for a DEVICE=cpu smoke test); PRECISIONS (same-call's rows, default fp32,bf16); PAPER=1 adds the papers' sizes
# (PAPER_PRECISIONS, default fp32) after Cseq2seq-I; TESTS=0 leaves the GPU tests out of
# same-call, TESTS=1 runs them beside bf16-parity (correctness only: nothing there is timed
# against anything else). Two calls that fit one 15-minute lease with a start:
#   PRECISIONS=fp32 PAPER=1 TESTS=0 bash benchmarks/gpu_calls.sh same-call   (about 5 min)
#   TESTS=1 UPDATES=2000 bash benchmarks/gpu_calls.sh bf16-parity            (about 4.5 min)
set -o pipefail
export PYTHONUNBUFFERED=1
commit=$(cat .gpudata/COMMIT)
device="${DEVICE:-cuda}"  # DEVICE=cpu: a smoke test of this script where there is no GPU
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
mkdir -p /tmp/g && tar -xJf .gpudata/pack.tar.xz -C /tmp/g

gpu_bench() {  # benchmarks/gpu.py on the packed corpus, naming the packed commit
    python3 -m benchmarks.gpu --device "$device" --commit "$commit" --data /tmp/g/data --prepared /tmp/g/prepared "$@"
}

run_tests() {  # the GPU tests; the image has pytest, the wheels of docs/gpu.md are the fallback
    python3 -c "import pytest" 2>/dev/null || {
        python3 -m pip install -q --no-index --no-deps --target /tmp/pt .whl/test/*.whl
        export PYTHONPATH=/tmp/pt
    }
    RNMT_KERNELS=0 timeout 300 python3 -m pytest -p no:cacheprovider --device "$device" -m on_device \
        tests/unit/test_on_device.py tests/unit/test_models_zoo.py tests/integration/test_train.py \
        tests/integration/test_compile_step.py tests/integration/test_graphed_update.py \
        tests/integration/test_update_graphs.py tests/unit/test_shortlist.py 2>&1 \
        | tee "$OUT/tests-$1.log" | tail -15
}

case "${1:-}" in
same-call)
    bash benchmarks/peers/gpu_install.sh /tmp/peers-site 2>&1 | tail -3
    gpu_bench \
        --systems rnnsearch-gru --precisions "${PRECISIONS:-fp32,bf16}" --paper-systems "" --peers fairseq \
        --peer-site /tmp/peers-site --seconds 15 --decode-seconds 30 --profile \
        --profile-systems rnnsearch-gru --budget-minutes 4 --tag "${TAG:-same-call}" --out "$OUT" 2>&1 \
        | tee "$OUT/${TAG:-same-call}.log"
    # CUDA graphs in a process of their own, so that a failure there cannot cost the rows above:
    # the fp32 row decodes without them, then with them, on the same model
    gpu_bench \
        --systems rnnsearch-gru --precisions fp32 --paper-systems "" --seconds 15 --decode-seconds 30 \
        --step-graphs --budget-minutes 1.5 --tag "${TAG:-same-call}-graphs" --out "$OUT" 2>&1 \
        | tee -a "$OUT/${TAG:-same-call}.log"
    # Cseq2seq-I, whose re-reading of the source now runs as one cuDNN call per target step
    gpu_bench \
        --systems cseq2seq1 --precisions fp32 --paper-systems "" --seconds 15 --decode-seconds 20 \
        --budget-minutes 1.5 --tag "${TAG:-same-call}-cseq2seq1" --out "$OUT" 2>&1 \
        | tee -a "$OUT/${TAG:-same-call}.log"
    # the papers' sizes, seconds per update (the GPU has kept plain autograd since c95554b)
    if [ "${PAPER:-0}" = 1 ]; then
        gpu_bench \
            --systems "" --paper-precisions "${PAPER_PRECISIONS:-fp32}" --paper-seconds 12 --budget-minutes 1.5 \
            --tag "${TAG:-same-call}-paper" --out "$OUT" 2>&1 | tee -a "$OUT/${TAG:-same-call}.log"
    fi
    if [ "${TESTS:-1}" = 1 ]; then run_tests "${TAG:-same-call}"; fi
    ;;
compile)
    bash benchmarks/peers/gpu_install.sh /tmp/peers-site 2>&1 | tail -3
    gpu_bench \
        --systems rnnsearch-gru --precisions "${PRECISIONS:-fp32}" --paper-systems "" --peers fairseq \
        --peer-site /tmp/peers-site --seconds 15 --decode-sentences 0 --compile-step --budget-minutes 4 \
        --profile --profile-systems rnnsearch-gru --profile-sentences 1 \
        --tag "${TAG:-compile}" --out "$OUT" 2>&1 | tee "$OUT/${TAG:-compile}.log"
    # the model with the most work per step (five units' worth per target position)
    gpu_bench \
        --systems dtmt4 --precisions fp32 --paper-systems "" --seconds 15 --decode-sentences 0 --compile-step \
        --budget-minutes 1.5 --tag "${TAG:-compile}-dtmt4" --out "$OUT" 2>&1 | tee -a "$OUT/${TAG:-compile}.log"
    if [ "${TESTS:-1}" = 1 ]; then run_tests "${TAG:-compile}"; fi
    ;;
graphed)
    # the upper bound: one batch shape, one graph (about 2 min)
    # shellcheck disable=SC2086
    python3 -m benchmarks.studies.graphed_update --device "$device" --commit "$commit" ${GRAPHED_ARGS:-} \
        --out "$OUT/graphed-update.json" 2>&1 | tee "$OUT/graphed-update.log"
    # the trainer's own graphs (train.cuda_graphs, a graph per padded batch shape) against its eager
    # updates and fairseq, the warm-up long enough to record most of an epoch's shapes (about 4 min)
    bash benchmarks/peers/gpu_install.sh /tmp/peers-site 2>&1 | tail -3
    for graphs in off on; do
        peers=$( [ "$graphs" = off ] && echo "--peers fairseq --peer-site /tmp/peers-site" )
        # shellcheck disable=SC2086
        gpu_bench --systems "${GRAPH_SYSTEMS:-rnnsearch-gru,atr}" --precisions fp32 --paper-systems "" $peers \
            --cuda-graphs "$graphs" --warmup 600 --seconds 40 --steps 300 --decode-sentences 0 --budget-minutes 3 \
            --tag "graphs-$graphs" --out "$OUT" 2>&1 | grep -v -i "warn" | tee -a "$OUT/graphs.log"
    done
    if [ "${TESTS:-1}" = 1 ]; then run_tests graphed; fi
    ;;
graphs-next)
    # What the graphed call left open (docs/gpu.md, "What remains"). First the GPU tests at the
    # default train.cuda_graphs: auto, which trains their fp32 runs from graphs (about 2.5 min)
    if [ "${TESTS:-1}" = 1 ]; then run_tests graphs-auto; fi
    # DTMT#4 once its shapes are recorded: a warm-up of up to half the seconds records most of
    # the epoch's 72, then the window; eager beside it (about 4.5 min)
    for graphs in on off; do
        secs=$( [ "$graphs" = on ] && echo "${DTMT_SECONDS:-180}" || echo 50 )
        gpu_bench --systems dtmt4 --precisions fp32 --paper-systems "" --cuda-graphs "$graphs" --warmup 600 \
            --seconds "$secs" --steps 300 --decode-sentences 0 --budget-minutes 4 --tag "dtmt4-graphs-$graphs" \
            --out "$OUT" 2>&1 | grep -v -i "warn" | tee -a "$OUT/dtmt4-graphs.log"
    done
    # BF16=1: bf16 autocast under graphs, which auto leaves eager (about 3 min more)
    if [ "${BF16:-0}" = 1 ]; then
        for graphs in off on; do
            gpu_bench --systems rnnsearch-gru,atr --precisions bf16 --paper-systems "" --cuda-graphs "$graphs" \
                --warmup 600 --seconds 40 --steps 300 --decode-sentences 0 --budget-minutes 2 \
                --tag "bf16-graphs-$graphs" --out "$OUT" 2>&1 | grep -v -i "warn" | tee -a "$OUT/bf16-graphs.log"
        done
    fi
    ;;
equal-length)
    bash benchmarks/peers/gpu_install.sh /tmp/peers-site 2>&1 | tail -3
    # 1,000 updates each (the 15 s runs of same-call left the two models emitting translations of
    # 19 and 35 subwords per sentence, so sentences/s and output tokens/s disagreed)
    gpu_bench \
        --systems rnnsearch-gru --precisions fp32 --paper-systems "" --peers fairseq --peer-site /tmp/peers-site \
        --steps "${STEPS:-1000}" --seconds 120 --peer-steps "${STEPS:-1000}" --decode-seconds 60 --step-graphs \
        --budget-minutes 5 --tag "${TAG:-equal-length}" --out "$OUT" 2>&1 | tee "$OUT/${TAG:-equal-length}.log"
    # a server's requests: one sentence per search, so every search records its own graphs
    gpu_bench \
        --systems rnnsearch-gru --precisions fp32 --paper-systems "" --steps "${STEPS:-1000}" --seconds 120 \
        --decode-sentences 150 --decode-chunk 1 --decode-seconds 40 --step-graphs --budget-minutes 2 \
        --tag "${TAG:-equal-length}-one-line" --out "$OUT" 2>&1 | tee -a "$OUT/${TAG:-equal-length}.log"
    ;;
cpu-bf16)
    grep -m1 "model name" /proc/cpuinfo
    grep -o -w -E "avx512f|avx512_bf16|amx_bf16|amx_tile" /proc/cpuinfo | sort -u | tr "\n" " "; echo
    # rnmt's C++ kernels build on first use where a compiler is present; without them the
    # figures are of PyTorch's fallbacks, which the JSON's log then says
    python3 -c "from rnmt import kernels; print('rnmt kernels:', 'built' if kernels.extension() else 'unavailable')" 2>&1 | tail -2
    CUDA_VISIBLE_DEVICES="" taskset -c 0,1 python3 -m benchmarks.shape_rss --precisions fp32,bf16 \
        --variants "${VARIANTS:-none,default}" --rounds 1 --threads 2 --out "$OUT/shape-rss-device-cpu.json" 2>&1 \
        | tee "$OUT/shape-rss-device-cpu.log"
    if [ "${PEERS:-0}" = 1 ]; then
        # rnmt fp32 and bf16 against fairseq's LSTM (fp32: its CPU path) on the same two cores
        bash benchmarks/peers/gpu_install.sh /tmp/peers-site 2>&1 | tail -3
        CUDA_VISIBLE_DEVICES="" taskset -c 0,1 python3 -m benchmarks.gpu --device cpu --threads 2 \
            --commit "$commit" --data /tmp/g/data --prepared /tmp/g/prepared --systems rnnsearch-gru \
            --precisions fp32,bf16 --paper-systems "" --peers fairseq --peer-site /tmp/peers-site \
            --seconds 60 --peer-warmup 10 --peer-steps 40 --decode-sentences 0 --tag device-cpu --out "$OUT" 2>&1 \
            | tee "$OUT/peers-device-cpu.log" | grep -E "ratio|tok/s|error" | tail -12
    fi
    ;;
bf16-parity)
    rm -rf /tmp/r
    if [ "${TESTS:-0}" = 1 ]; then run_tests bf16-parity > /dev/null & tests=$!; fi
    export RNMT_COMMIT="$commit"  # the records' commit: the device's copy may carry a stale git directory
    timeout "${LIMIT:-420}" python3 -m rnmt reproduce bf16 --updates "${UPDATES:-2000}" --jobs 4 --threads 2 \
        --device "$device" --systems rnnsearch-fp32,rnnsearch-bf16 --data /tmp/g/data/bible-es-en --out /tmp/r \
        > "$OUT/bf16-gpu.log" 2>&1
    echo "reproduce exited $?"
    tail -5 "$OUT/bf16-gpu.log"
    mkdir -p /tmp/pack/bf16-gpu
    cp -r /tmp/r/bf16/*.md /tmp/r/bf16/*.json /tmp/r/bf16/hyp /tmp/pack/bf16-gpu/ 2>/dev/null
    for run in /tmp/r/bf16/runs/*/; do
        [ -f "$run/log.jsonl" ] && cp "$run/log.jsonl" "/tmp/pack/bf16-gpu/$(basename "$run").log.jsonl"
    done
    tar -C /tmp/pack -czf "$OUT/bf16-gpu.tgz" bf16-gpu
    if [ -n "${tests:-}" ]; then wait "$tests"; tail -5 "$OUT/tests-bf16-parity.log"; fi
    ;;
*)
    echo "usage: bash benchmarks/gpu_calls.sh same-call|compile|graphed|graphs-next|equal-length|bf16-parity|cpu-bf16" >&2
    exit 2
    ;;
esac
