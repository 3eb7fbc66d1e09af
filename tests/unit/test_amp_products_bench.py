"""benchmarks/amp_products.py: its census counts each product's FLOPs under its dtypes, and
its path counter sees rnmt's fp32 fast paths."""

from __future__ import annotations

import torch

from tests.support import load_benchmark

amp = load_benchmark("amp_products")


def test_census_counts_flops_by_operand_dtype():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    with amp.ProductCensus() as census:
        torch.mm(a, b)
        torch.addmm(torch.zeros(3, 5), a, b)
        torch.mm(a.bfloat16(), b.bfloat16())
    assert census.flops[("mm", "float32", "float32")] == 2 * 3 * 4 * 5
    assert census.flops[("addmm", "float32", "float32")] == 2 * 3 * 4 * 5
    assert census.flops[("mm", "bfloat16", "bfloat16")] == 2 * 3 * 4 * 5
    assert sum(census.fp32_sites.values()) == 4 * 3 * 4 * 5


def test_fast_path_counter_sees_deferred_products_in_fp32_and_bf16_training_passes():
    from rnmt import deferred_grads
    from rnmt.config import ModelConfig
    from rnmt.models import build_model

    model = build_model(ModelConfig(arch="rnnsearch", emb_size=8, hidden_size=12), 20, 20).train()
    src, tgt = torch.randint(4, 20, (2, 5)), torch.randint(4, 20, (2, 4))
    with amp.FastPaths() as counted:
        model(src, src != 0, tgt).sum().backward()
    assert counted.calls["deferred weight-gradient product"] > 0
    with amp.FastPaths() as counted, torch.autocast("cpu", dtype=torch.bfloat16):
        model(src, src != 0, tgt).float().sum().backward()
    assert counted.calls["deferred weight-gradient product"] > 0  # bf16 products, one weight product per pass
    with amp.FastPaths() as counted, torch.autocast("cpu", dtype=torch.bfloat16), deferred_grads.enabled(False):
        model(src, src != 0, tgt).float().sum().backward()
    assert counted.calls["deferred weight-gradient product"] == 0
