"""`GraphedStep`'s buffers and bookkeeping on the CPU, with a recorder that re-runs the step
on every replay and writes into the outputs of its recording, as a CUDA graph does (the
graph itself is compared on the GPU in tests/unit/test_on_device.py)."""

import pytest
import torch

from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt.search import beam_search, fused_step, greedy_search, step_graphs
from rnmt.search.step_graphs import GraphedStep


class Rerun:
    """A stand-in for a CUDA graph: replay() runs the recorded function again and copies its
    results into the tensors of the recording, so a caller that kept an output of an earlier
    step sees it overwritten, as with a real graph."""

    def __init__(self, fn):
        self.fn = fn
        self.outputs = fn()

    def replay(self):
        fresh = self.fn()
        for mine, new in zip(self._flat(self.outputs), self._flat(fresh)):
            mine.copy_(new)
        return self.outputs

    @staticmethod
    def _flat(outputs):
        log_probs, state, extras = outputs
        return [log_probs, *state.values(), *extras.values()]


def tiny_model(arch, seed=0):
    torch.manual_seed(seed)
    model = build_model(ModelConfig(arch=arch, emb_size=8, hidden_size=8, src_vocab_size=12, tgt_vocab_size=15))
    for p in model.parameters():
        torch.nn.init.uniform_(p, -1.0, 1.0)
    return model.eval()


SRC = torch.tensor([[5, 6, 7, 8, 3], [4, 5, 3, 0, 0], [8, 8, 8, 3, 0], [9, 3, 0, 0, 0], [6, 7, 3, 0, 0]])


@pytest.fixture
def rerun_graphs(monkeypatch):
    """Beam and greedy search take the graphed step on the CPU, recorded by `Rerun`."""
    made = []

    def graphed(step):
        g = GraphedStep(step, recorder=Rerun)
        made.append(g)
        return g

    monkeypatch.setattr(step_graphs, "applies", lambda src: True)
    monkeypatch.setattr(step_graphs, "GraphedStep", graphed)
    return made


@pytest.mark.parametrize("arch,attention", [("rnnsearch", True), ("cseq2seq1", False), ("dtmt", True)])
def test_searches_are_unchanged(arch, attention, rerun_graphs):
    model = tiny_model(arch)
    mask = SRC != 0
    max_len = torch.tensor([9, 6, 8, 3, 7])
    with torch.no_grad():
        graphed_beam = beam_search(model, SRC, mask, max_len, beam=3, nbest=3, return_attention=attention)
        graphed_greedy = greedy_search(model, SRC, mask, max_len, return_attention=attention)
    assert rerun_graphs and all(g.recorded >= 1 for g in rerun_graphs)
    # compaction (sentences finishing at different lengths) records a graph per row count
    assert rerun_graphs[0].recorded >= 2
    step_graphs_off = pytest.MonkeyPatch()
    step_graphs_off.setattr(step_graphs, "applies", lambda src: False)
    # the same eager step the graphs replay (the CPU's fused step rounds its sums differently)
    step_graphs_off.setattr(fused_step, "applies", lambda model, src: False)
    try:
        beam = beam_search(model, SRC, mask, max_len, beam=3, nbest=3, return_attention=attention)
        greedy = greedy_search(model, SRC, mask, max_len, return_attention=attention)
    finally:
        step_graphs_off.undo()
    for a, b in zip(graphed_beam, beam):
        assert [(h.tokens, h.score) for h in a] == [(h.tokens, h.score) for h in b]
        for h, g in zip(a, b):
            if attention:
                torch.testing.assert_close(h.attention, g.attention)
    for h, g in zip(graphed_greedy, greedy):
        assert (h.tokens, h.score) == (g.tokens, g.score)
        if attention:
            torch.testing.assert_close(h.attention, g.attention)


def test_a_new_shape_records_and_the_same_shape_replays():
    calls = []

    def step(prev, state, memory):
        calls.append(prev.clone())
        return prev.float().unsqueeze(1) + memory["m"].sum(), {"s": state["s"] + 1}, {}

    graphed = GraphedStep(step, recorder=Rerun)
    memory = {"m": torch.ones(2)}
    out, state, _ = graphed(torch.tensor([1, 2]), {"s": torch.zeros(2)}, memory)
    assert graphed.recorded == 1 and out.tolist() == [[3.0], [4.0]]
    out, state, _ = graphed(torch.tensor([5, 6]), state, memory)  # replayed with the new inputs
    assert graphed.recorded == 1 and out.tolist() == [[7.0], [8.0]] and state["s"].tolist() == [2.0, 2.0]
    graphed(torch.tensor([5]), {"s": torch.zeros(1)}, memory)  # fewer rows: a new graph
    graphed(torch.tensor([5]), {"s": torch.zeros(1)}, {"m": torch.ones(2)})  # another memory: too
    assert graphed.recorded == 3


def test_off_by_default_and_only_for_cuda():
    assert not step_graphs.applies(torch.zeros(1))
    with step_graphs.use(True):
        assert not step_graphs.applies(torch.zeros(1))  # a CPU tensor


def test_a_step_that_cannot_be_recorded_runs_eagerly():
    def refuse(fn):
        raise RuntimeError("operation not permitted when stream is capturing")

    graphed = GraphedStep(lambda prev, state, memory: (prev + 1, state, {}), recorder=refuse)
    assert graphed(torch.tensor([1]), {}, {})[0].tolist() == [2]
    assert graphed.failed == "operation not permitted when stream is capturing"
    assert graphed(torch.tensor([4]), {}, {})[0].tolist() == [5] and graphed.recorded == 0


def test_blocking_repeats_replays_like_the_eager_step(rerun_graphs):
    """`RepeatsBlocked` keeps each row's output in a fixed-width state buffer so that a
    graphed step keeps its shapes; replayed, it blocks what the eager step blocks."""
    from rnmt.search.repeats import with_repeats_blocked

    model = tiny_model("rnnsearch", seed=2)
    mask = SRC != 0
    max_len = torch.tensor([12, 10, 11, 6, 9])
    blocked = with_repeats_blocked(model, 2, max_len)
    with torch.no_grad():
        graphed = beam_search(blocked, SRC, mask, max_len, beam=3, nbest=2)
    assert rerun_graphs and rerun_graphs[0].failed is None and rerun_graphs[0].recorded >= 1
    with pytest.MonkeyPatch.context() as off, torch.no_grad():
        off.setattr(step_graphs, "applies", lambda src: False)
        eager = beam_search(blocked, SRC, mask, max_len, beam=3, nbest=2)
    assert [[(h.tokens, h.score) for h in s] for s in graphed] == [[(h.tokens, h.score) for h in s] for s in eager]
