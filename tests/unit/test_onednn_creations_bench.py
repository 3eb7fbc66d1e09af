"""benchmarks/studies/onednn_creations.py: reading oneDNN's creation log."""

from __future__ import annotations

from tests.support import load_benchmark

bench = load_benchmark("studies.onednn_creations")

LOG = """\
step output of the trainer
onednn_verbose,v1,primitive,create:cache_miss,cpu,matmul,brg_matmul:avx10_1_512_amx,undef,src:bf16,,1860x256:256x1536,3.5
onednn_verbose,v1,primitive,create:cache_hit,cpu,matmul,brg_matmul:avx10_1_512_amx,undef,src:bf16,,1860x256:256x1536,0.01
onednn_verbose,v1,primitive,create:cache_miss,cpu,reorder,jit:uni,undef,src:f32 dst:bf16,,78x512,1.25
onednn_verbose,v1,info,cpu,runtime:threadpool
MEASURED 2.5000
"""


def test_the_log_gives_creations_their_time_hits_and_the_measured_seconds():
    misses, miss_ms, hits, seconds = bench.tally(LOG)
    assert (misses, hits, seconds) == (2, 1, 2.5)
    assert abs(miss_ms - 4.75) < 1e-9


def test_a_log_without_creations_counts_none():
    assert bench.tally("MEASURED 1.0\n") == (0, 0.0, 0, 1.0)
