"""The scripted walks the export traces (rnmt.export.loops) compute what rnmt's own walks
compute: the runner in both directions with padding, Cseq2seq's re-reading context, and
ATR's context-aware encoder; and the manifest records `rnmt translate`'s defaults."""

from __future__ import annotations

import pytest
import torch

from rnmt import cells
from rnmt.export.examples import Shapes, source_batch
from rnmt.export.loops import build_loops, scripted_walks
from rnmt.export.survey import tiny_model


def padded(batch=3, length=9, size=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, size, generator=g)
    mask = torch.arange(length).unsqueeze(0) < torch.tensor([length, 4, 1][:batch]).unsqueeze(1)
    return x, mask


@pytest.mark.parametrize("unit", ["gru", "lstm", "atr", "tgru"])
@pytest.mark.parametrize("reverse", [False, True])
def test_the_scripted_walk_equals_the_runner(unit, reverse):
    torch.manual_seed(0)
    cell = cells.build(unit, 8, 6).eval()
    holder = torch.nn.ModuleDict({"cell": cell})
    x, mask = padded()
    want_out, want_last, _ = cells.run_cell(cell, x, mask, reverse=reverse)
    loops = build_loops(holder, lambda: cells.run_cell(cell, x, mask, reverse=reverse))
    assert list(loops) == ["cell"]
    with scripted_walks(holder, loops), torch.no_grad():
        x2, mask2 = padded(batch=2, length=5, seed=3)  # another batch and length than the loop was made with
        got_out, got_last, _ = cells.run_cell(cell, x, mask, reverse=reverse)
        other = cells.run_cell(cell, x2, mask2, reverse=reverse)
    torch.testing.assert_close(got_out, want_out, rtol=0, atol=1e-6)
    torch.testing.assert_close(got_last, want_last, rtol=0, atol=1e-6)
    assert torch.allclose(other[0], cells.run_cell(cell, x2, mask2, reverse=reverse)[0], atol=1e-6)
    assert "<locals>" not in cells.run_cell.__qualname__  # the runner's own function is back


@pytest.mark.parametrize("config", ["cseq2seq/cseq2seq1-ls.yaml", "cseq2seq/cseq2seq2.yaml",
                                    "atr/rnnsearch-atr-ca.yaml", "survey/seq2seq-sutskever.yaml"])
def test_scripted_models_encode_and_step_as_the_model(config):
    model = tiny_model(config)
    src, mask = source_batch(Shapes(3, 8, 1), 23)
    with torch.no_grad():
        memory = model.encode(src, mask)
        state = model.init_state(memory)
        prev = torch.tensor([2, 5, 7])
        want = model.step(prev, state, memory)[0]
        loops = build_loops(model, lambda: model.step(prev, state, model.encode(src, mask)))
        assert len(loops) >= 1
        with scripted_walks(model, loops):
            memory2 = model.encode(src, mask)
            got = model.step(prev, model.init_state(memory2), memory2)[0]
    for name in memory:
        torch.testing.assert_close(memory2[name], memory[name], rtol=0, atol=1e-6)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_the_manifest_records_translates_defaults():
    from rnmt.cli import build_parser
    from rnmt.config import Config
    from rnmt.export.manifest import search_defaults
    from rnmt.models.loading import LoadedModel
    from rnmt.search.limits import default_input_limit

    cfg = Config()
    cfg.search.max_len_ratio, cfg.search.max_len_offset, cfg.search.beam = 1.2, 7, 4
    defaults = search_defaults(LoadedModel(None, None, None, cfg, {}, None))  # type: ignore[arg-type]
    args = build_parser().parse_args(["translate", "--model", "m"])
    assert defaults["max_output_tokens"] == args.max_output_tokens
    assert args.max_input_tokens is None  # translate's default: the limit computed from the cap
    assert defaults["max_input_tokens"] == default_input_limit(1.2, 7, args.max_output_tokens)
    assert (defaults["beam"], defaults["max_len_ratio"], defaults["max_len_offset"]) == (4, 1.2, 7)
    assert defaults["alpha"] == cfg.search.alpha and defaults["normalize"] == cfg.search.normalize
