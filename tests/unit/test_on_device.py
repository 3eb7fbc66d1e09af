"""The models on the device of ``pytest --device`` against the same models on the CPU.

Skipped on the CPU itself (the default). On a GPU machine
``pytest --device cuda -m on_device`` runs these with the other on_device tests (forward
equals step, padding, beam search and gradients for every paper config; exact resume), so
the GPU paths (`rnmt.fast.gru_cuda`, CUDA autocast) are checked against the CPU's.
"""

from __future__ import annotations

import pytest
import torch

from rnmt import kernels
from rnmt.cells.gru import GRU
from rnmt.cells.runner import Bidirectional
from rnmt.fast import accelerate, gru_cuda
from rnmt.search import step_graphs
from rnmt.search.beam import beam_search, greedy_search
from tests.unit.test_gru_cuda import MASK
from tests.unit.test_models_zoo import PAPER_CONFIGS, _name, batch, tiny_model

pytestmark = pytest.mark.on_device


@pytest.fixture
def gpu(device):
    if device.type == "cpu":
        pytest.skip("compares another device with the CPU: run with --device cuda")
    return device


@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=_name)
def test_scores_and_gradients_match_the_cpu(path, gpu):
    cpu_model = tiny_model(path).train()
    gpu_model = tiny_model(path).to(gpu).train()
    for module in (cpu_model, gpu_model):  # no dropout draws: the two devices draw differently
        for m in module.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
    results = []
    for model, dev in ((cpu_model, torch.device("cpu")), (gpu_model, gpu)):
        src, src_mask, tgt_in = batch(device=dev)
        scores = torch.log_softmax(model(src, src_mask, tgt_in).float(), -1)
        scores.logsumexp(-1).sum().backward()
        grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
        results.append((scores.detach().cpu(), grads))
    (cpu_scores, cpu_grads), (gpu_scores, gpu_grads) = results
    torch.testing.assert_close(gpu_scores, cpu_scores, atol=1e-4, rtol=1e-4)
    assert gpu_grads.keys() == cpu_grads.keys()
    for name in cpu_grads:
        torch.testing.assert_close(gpu_grads[name], cpu_grads[name], atol=1e-4, rtol=1e-3, msg=name)


@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=_name)
def test_beam_search_finds_what_it_finds_on_the_cpu(path, gpu):
    found = []
    for dev in (torch.device("cpu"), gpu):
        model = tiny_model(path).to(dev)
        src, src_mask, _ = batch(device=dev)
        with torch.no_grad():
            hyps = beam_search(model, src, src_mask, torch.tensor([6, 5, 4], device=dev), beam=3, nbest=2)
        found.append([[(list(h.tokens), float(h.score)) for h in sent] for sent in hyps])
    tokens = [[[t for t, _ in sent] for sent in hyps] for hyps in found]
    assert tokens[1] == tokens[0]
    for got, expected in zip(found[1], found[0]):
        assert [score for _, score in got] == pytest.approx([score for _, score in expected], abs=1e-3)


@pytest.mark.parametrize("path", PAPER_CONFIGS, ids=_name)
def test_searches_replayed_from_cuda_graphs_find_the_same(path, gpu):
    """`rnmt.search.step_graphs` on the GPU: beam and greedy search with the step replayed
    from CUDA graphs give what the eager step gives, compaction's new shapes included (a
    step that cannot be recorded runs eagerly; the benchmarked systems' steps must record)."""
    model = tiny_model(path).to(gpu)
    src, src_mask, _ = batch(device=gpu)
    limits = torch.tensor([6, 5, 4], device=gpu)
    made = []
    graphed_step = step_graphs.GraphedStep

    def recording(step):
        made.append(graphed_step(step))
        return made[-1]

    found = []
    for on in (False, True):
        with torch.no_grad(), step_graphs.use(on), pytest.MonkeyPatch.context() as patch:
            patch.setattr(step_graphs, "GraphedStep", recording)
            beams = beam_search(model, src, src_mask, limits, beam=3, nbest=2)
            greedy = greedy_search(model, src, src_mask, limits)
        found.append(([[(h.tokens, round(h.score, 4)) for h in sent] for sent in beams],
                      [(h.tokens, round(h.score, 4)) for h in greedy]))
    assert found[1] == found[0]
    assert len(made) == 2  # beam and greedy, graphed where the step can be recorded
    if path.stem in ("rnnsearch", "dtmt1", "dtmt4"):  # the benchmarked systems must record
        assert all(g.failed is None and g.recorded >= 1 for g in made), [(g.failed, g.recorded) for g in made]


def test_blocking_repeats_records_and_blocks_as_on_the_cpu(gpu):
    """`rnmt.search.repeats` on the GPU, its step replayed from a CUDA graph (no host
    synchronisation in it): the same outputs as on the CPU."""
    from rnmt.search.repeats import with_repeats_blocked

    path = next(p for p in PAPER_CONFIGS if p.stem == "rnnsearch")
    made, graphed_step = [], step_graphs.GraphedStep

    def recording(step):
        made.append(graphed_step(step))
        return made[-1]

    found = []
    for dev in (torch.device("cpu"), gpu):
        model = tiny_model(path).to(dev)
        src, src_mask, _ = batch(device=dev)
        limits = torch.tensor([9, 8, 7], device=dev)
        with torch.no_grad(), step_graphs.use(True), pytest.MonkeyPatch.context() as patch:
            patch.setattr(step_graphs, "GraphedStep", recording)
            hyps = beam_search(with_repeats_blocked(model, 2, limits), src, src_mask, limits, beam=3, nbest=2)
        found.append([[(list(h.tokens), round(float(h.score), 3)) for h in sent] for sent in hyps])
    assert found[1] == found[0]
    assert made and all(g.failed is None and g.recorded >= 1 for g in made), [(g.failed, g.recorded) for g in made]


@pytest.mark.parametrize("reset_bias", [True, False])
def test_the_cuda_gru_paths_compute_the_units_expressions(reset_bias, gpu):
    torch.manual_seed(0)
    layer = accelerate(Bidirectional(GRU(5, 7, reset_bias=reset_bias), GRU(5, 7, reset_bias=reset_bias))).to(gpu)
    with torch.no_grad():
        for p in layer.parameters():
            p.uniform_(-0.5, 0.5)
    x = torch.randn(4, 6, 5, device=gpu, requires_grad=True)
    mask = MASK.to(gpu)
    h = torch.randn(4, 7, device=gpu, requires_grad=True)
    outs = []
    for mode in (False, True):
        with gru_cuda.use(mode), kernels.use(False):
            assert gru_cuda.bidirectional_applies(layer.fwd, layer.bwd, x) == mode
            out = layer(x, mask)
            step = layer.fwd.step(layer.fwd.project_inputs(x[:, 0]), h)
            loss = out.outputs.pow(2).sum() + out.last_fwd.sum() + out.last_bwd.pow(2).sum() + step.pow(2).sum()
            outs.append([out.outputs, out.last_fwd, out.last_bwd, step,
                         *torch.autograd.grad(loss, [x, h, *layer.parameters()])])
    for a, b in zip(outs[1], outs[0]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_under_bf16_autocast_the_gru_state_stays_fp32(gpu):
    torch.manual_seed(0)
    layer = accelerate(Bidirectional(GRU(8, 16), GRU(8, 16))).to(gpu)
    x = torch.randn(3, 5, 8, device=gpu)
    with torch.autocast(gpu.type, dtype=torch.bfloat16):
        out = layer(x, None)
        step = layer.fwd.step(layer.fwd.project_inputs(x[:, 0]), out.last_fwd)
    assert out.outputs.dtype == step.dtype == torch.float32
    with torch.no_grad():
        exact = layer(x, None)
    torch.testing.assert_close(out.outputs, exact.outputs, atol=0.05, rtol=0.05)
