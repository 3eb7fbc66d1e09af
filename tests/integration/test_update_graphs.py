"""`train.cuda_graphs`: a training update's forward and backward replayed from CUDA graphs.

What the CPU can check: the bucket padding changes no loss and no gradient for any model
that takes the graphs, and the graph bookkeeping (first sight eager, then replays into the
same buffers, gradients accumulated in place) gives the eager gradients, with a stand-in
recorder that runs the function again on every replay. On a GPU (`pytest --device cuda -m
on_device`) a run trained from graphs ends where the eager one does.
"""

from __future__ import annotations

import pytest
import torch

from rnmt import deferred_grads, kernels
from rnmt.data.collate import Batch
from rnmt.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rnmt.fast import gru_cuda, host_reads
from rnmt.models.base import RecurrentTranslationModel
from rnmt.training import update_graphs
from rnmt.training.loss import label_smoothed_nll
from rnmt.training.update_graphs import UpdateGraphs, bucket_shape, pad_batch
from tests.integration.test_compile_step import PAPER_CONFIGS, SRC_V, TGT_V, tiny
from tests.support import REPO


def make_batch(seed: int, src_lens, tgt_lens) -> Batch:
    """Random pairs with these lengths (source with its </s>, target without BOS/EOS)."""
    g = torch.Generator().manual_seed(seed)
    rows, s, t = len(src_lens), max(src_lens), max(tgt_lens) + 1
    src = torch.full((rows, s), PAD_ID)
    tgt_in = torch.full((rows, t), PAD_ID)
    tgt_out = torch.full((rows, t), PAD_ID)
    for r, (ls, lt) in enumerate(zip(src_lens, tgt_lens)):
        src[r, : ls - 1] = torch.randint(4, SRC_V, (ls - 1,), generator=g)
        src[r, ls - 1] = EOS_ID
        words = torch.randint(4, TGT_V, (lt,), generator=g)
        tgt_in[r, 0], tgt_in[r, 1: lt + 1] = BOS_ID, words
        tgt_out[r, :lt], tgt_out[r, lt] = words, EOS_ID
    mask = tgt_out != PAD_ID
    return Batch(src=src, src_mask=src != PAD_ID, src_lens=torch.tensor(src_lens), tgt_in=tgt_in, tgt_out=tgt_out,
                 tgt_mask=mask, indices=list(range(rows)), ntokens=int(mask.sum()))


def loss_and_grads(model, batch: Batch):
    model.zero_grad(set_to_none=True)
    logits = model(batch.src, batch.src_mask, batch.tgt_in)
    loss, nll = label_smoothed_nll(logits, batch.tgt_out, batch.tgt_mask, 0.1)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_bucket_shapes_round_up_to_multiples():
    assert bucket_shape(1, 1, 1) == (8, 8, 8)
    assert bucket_shape(8, 9, 16) == (8, 16, 16)
    assert bucket_shape(33, 17, 40, bucket=16) == (48, 32, 48)


def test_padding_keeps_the_real_tokens_and_adds_only_masked_positions_and_empty_rows():
    batch = make_batch(0, [5, 3, 7], [4, 2, 6])
    padded = pad_batch(batch, (8, 8, 8))
    assert padded.src.shape == padded.src_mask.shape == (8, 8) and padded.tgt_in.shape == (8, 8)
    for name in ("src", "src_mask", "tgt_in", "tgt_out", "tgt_mask"):
        small = getattr(batch, name)
        assert torch.equal(getattr(padded, name)[:3, : small.size(1)], small), name
    assert not padded.src_mask[:3, 7:].any() and not padded.tgt_mask[:, 7:].any()
    # added rows: a one-token source </s>, no target token (nothing in the loss)
    assert (padded.src[3:, 0] == EOS_ID).all() and padded.src_mask[3:].sum() == 5
    assert not padded.tgt_mask[3:].any() and (padded.tgt_out[3:] == PAD_ID).all()
    assert padded.ntokens == batch.ntokens
    assert pad_batch(batch, (3, 7, 7)) is batch  # already the shape


GRAPHABLE = [p for p in PAPER_CONFIGS if p.parent.name != "cseq2seq" or p.stem in ("rnnsearch", "rnnsearch-minus")]


@pytest.mark.parametrize("path", GRAPHABLE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_bucket_padding_changes_no_loss_and_no_gradient(path):
    model = tiny(path).train()  # dropout 0: the padded batch draws no different masks
    if not isinstance(model, RecurrentTranslationModel) or not model.compilable_step:
        return  # declined by `update_graphs.declines`
    batch = make_batch(1, [6, 4, 5], [3, 5, 2])
    # the code a GPU runs (PyTorch expressions, plain autograd, no cuDNN sequence calls)
    with kernels.use(False), deferred_grads.enabled(False), gru_cuda.use("everywhere"), host_reads.forbidden():
        loss, grads = loss_and_grads(model, batch)
        padded_loss, padded_grads = loss_and_grads(model, pad_batch(batch, bucket_shape(3, 6, 6)))
    torch.testing.assert_close(padded_loss, loss, rtol=1e-5, atol=1e-5)
    assert padded_grads.keys() == grads.keys()
    for name in grads:
        torch.testing.assert_close(padded_grads[name], grads[name], rtol=1e-4, atol=1e-6, msg=name)


class Rerun:
    """A stand-in for a CUDA graph: the function once at recording, then at every replay."""

    recorded = 0

    def __init__(self, fn) -> None:
        Rerun.recorded += 1
        self.fn = fn
        self.first = fn()

    def replay(self):
        return self.fn()


def test_graph_bookkeeping_accumulates_the_eager_gradients_in_place():
    model = tiny(REPO / "configs" / "papers" / "atr" / "rnnsearch-atr.yaml").train()
    batches = [make_batch(2, [6, 4, 5], [3, 5, 2]), make_batch(3, [5, 6], [4, 4]),  # one bucket
               make_batch(4, [12, 3], [9, 2])]  # another
    scales = [0.5, 0.25, 1.0]
    expected = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    losses = []
    for batch, scale in zip(batches, scales):
        loss, grads = loss_and_grads(model, batch)
        losses.append(loss)
        for n, g in grads.items():
            expected[n] += scale * g
    model.zero_grad(set_to_none=True)
    Rerun.recorded = 0
    graphs = UpdateGraphs(model, lambda logits, t, m: label_smoothed_nll(logits, t, m, 0.1), recorder=Rerun)
    grads_before = {}
    for i, (batch, scale) in enumerate(zip(batches, scales)):
        loss, nll = graphs(batch, scale)
        torch.testing.assert_close(loss, losses[i], rtol=1e-5, atol=1e-5)
        if i == 0:
            grads_before = {n: p.grad for n, p in model.named_parameters()}
    assert Rerun.recorded == 2 and graphs.replays == 1 and len(graphs.entries) == 2
    for n, p in model.named_parameters():
        assert p.grad is grads_before[n]  # the same tensors throughout: a graph's fixed addresses
        torch.testing.assert_close(p.grad, expected[n], rtol=1e-4, atol=1e-6, msg=n)


def test_recording_stops_at_the_host_memory_budget_and_later_shapes_run_eagerly():
    model = tiny(REPO / "configs" / "papers" / "atr" / "rnnsearch-atr.yaml").train()
    resident = [1000.0]

    class Costly(Rerun):  # each recording holds 30 MiB more of the process's memory
        def __init__(self, fn):
            super().__init__(fn)
            resident[0] += 30.0

    lines = []
    graphs = UpdateGraphs(model, lambda x, t, m: label_smoothed_nll(x, t, m, 0.1), recorder=Costly,
                          log=lines.append, budget_mib=50.0, rss=lambda: resident[0])
    a, b, c = make_batch(2, [6, 4, 5], [3, 5, 2]), make_batch(4, [12, 3], [9, 2]), make_batch(5, [20], [17])
    for batch in (a, b, c, a, c, b):
        loss, _ = graphs(batch, 1.0)
        model.zero_grad(set_to_none=False)
        torch.testing.assert_close(loss, loss_and_grads(model, batch)[0], rtol=1e-5, atol=1e-5)
        model.zero_grad(set_to_none=False)
    # a and b recorded (60 MiB >= 50: full), c's two batches eager, a and b replayed once each
    assert len(graphs.entries) == 2 and graphs.full and graphs.host_mib == 60.0
    assert graphs.eager == 2 and graphs.replays == 2
    assert sum("batches of shapes not yet seen run eagerly" in x for x in lines) == 1
    # where the process's memory cannot be read, a count stands in: 64 graphs to the budget
    counted = UpdateGraphs(model, lambda x, t, m: label_smoothed_nll(x, t, m, 0.1), recorder=Rerun,
                           budget_mib=64.0, rss=lambda: None)
    counted(a, 1.0)
    assert counted.host_mib == 1.0 and not counted.full
    assert 0 < update_graphs.host_budget_mib() <= 8192


def test_graphs_decline_what_they_cannot_replay():
    by_name = {f"{p.parent.name}/{p.stem}": p for p in PAPER_CONFIGS}
    atr = tiny(by_name["atr/rnnsearch-atr"])
    cuda = torch.device("cuda")
    assert update_graphs.declines(atr, cuda, distributed=False) is None
    assert "CUDA device" in update_graphs.declines(atr, torch.device("cpu"), False)
    assert "one process" in update_graphs.declines(atr, cuda, True)
    assert "not one fixed graph" in update_graphs.declines(tiny(by_name["cseq2seq/cseq2seq1-ls"]), cuda, False)
    assert "not one fixed graph" in update_graphs.declines(tiny(by_name["survey/transformer-base"]), cuda, False)


def test_auto_replays_fp32_updates_on_a_gpu_for_the_models_that_take_graphs():
    by_name = {f"{p.parent.name}/{p.stem}": p for p in PAPER_CONFIGS}
    atr, cyclic = tiny(by_name["atr/rnnsearch-atr"]), tiny(by_name["cseq2seq/cseq2seq1-ls"])
    cuda, cpu = torch.device("cuda"), torch.device("cpu")

    def choose(setting, model=atr, device=cuda, distributed=False, amp=None, compile_step="auto"):
        return update_graphs.choose(setting, model, device, distributed, amp, compile_step)

    assert choose("auto") == (True, None)
    assert choose("auto", compile_step=False) == (True, None)
    assert choose("auto", device=cpu) == (False, None)  # nothing to say on the CPU
    assert choose(False) == (False, None)
    assert choose(True) == (True, None)
    assert choose(True, amp=torch.bfloat16) == (True, None)  # true forces them under autocast too
    for kwargs, reason in [({"amp": torch.bfloat16}, "bf16 autocast"),
                           ({"compile_step": True}, "train.compile_step: true"),
                           ({"model": cyclic}, "not one fixed graph"),
                           ({"distributed": True}, "one process")]:
        use, line = choose("auto", **kwargs)
        assert not use and line.startswith("train.cuda_graphs auto: the updates run eagerly (") and reason in line
    use, line = choose(True, device=cpu)
    assert not use and "CUDA graphs need a CUDA device" in line


def test_a_cpu_run_leaves_auto_graphs_off_with_the_plans_reason_only(tmp_path, tiny_corpus):
    import rnmt
    from tests.support import tiny_config_tree

    lines = []
    rnmt.train(tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"]),
               ["train.max_steps=1", "train.validate_every=0"], out=tmp_path / "run", log=lines.append)
    assert [x for x in lines if "cuda_graphs" in x] == ["  cuda_graphs: false (train.cuda_graphs auto: not on a GPU)"]


def test_a_cpu_run_asked_for_graphs_trains_eagerly_and_says_why(tmp_path, tiny_corpus):
    import rnmt
    from tests.support import tiny_config_tree

    lines = []
    summary = rnmt.train(tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"]),
                         ["train.max_steps=2", "train.validate_every=0", "train.cuda_graphs=true"],
                         out=tmp_path / "run", log=lines.append)
    assert summary["steps"] == 2
    assert any("train.cuda_graphs: the updates run eagerly (CUDA graphs need a CUDA device)" in x for x in lines)


@pytest.mark.on_device
def test_a_run_trained_from_graphs_ends_where_the_eager_run_does(tmp_path, tiny_corpus, device):
    if device.type == "cpu":
        pytest.skip("CUDA graphs: run with --device cuda")
    import rnmt
    from rnmt.models import load_model
    from tests.support import tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"].update(arch="atr-rnnsearch", cell="atr", dropout=0.0)  # no dropout: the same draws
    tree["train"].update(device=str(device), validate_every=0, max_steps=12, amp="none", compile_step=False)
    tree["data"]["batch_tokens"] = 300  # small batches: a dozen updates go through several shapes, some twice
    lines = []
    rnmt.train(tree, [], out=tmp_path / "eager", log=lambda *_: None)
    rnmt.train(tree, ["train.cuda_graphs=true"], out=tmp_path / "graphs", log=lines.append)
    assert any("replayed from a CUDA graph per batch shape" in x for x in lines)
    from tests.integration.test_train import train_losses

    a, b = train_losses(tmp_path / "eager"), train_losses(tmp_path / "graphs")
    assert sorted(a) == sorted(b) == list(range(1, 13))
    for step in a:  # padding changes the products' shapes, so their rounding: close, not equal
        assert b[step] == pytest.approx(a[step], rel=1e-3), step
    eager = load_model(tmp_path / "eager" / "ckpt-12.safetensors").model.state_dict()
    graphs = load_model(tmp_path / "graphs" / "ckpt-12.safetensors").model.state_dict()
    for k in eager:  # per tensor (Adam can turn a rounding-sized gradient into a step of lr)
        assert float((graphs[k] - eager[k]).norm()) <= 1e-2 * float(eager[k].norm()) + 1e-6, k


@pytest.mark.on_device
def test_models_trained_one_after_another_in_one_process_each_record_their_graphs(device):
    """Each UpdateGraphs records into a pool of its own: one shared handle outlived the first
    model's graphs, and the second model's first recording failed the allocator's internal
    assertion (an H100, benchmarks/gpu.py training RNNSearch-GRU, then ATR, with graphs)."""
    if device.type == "cpu":
        pytest.skip("CUDA graphs: run with --device cuda")
    import gc

    batches = [make_batch(2, [6, 4, 5], [3, 5, 2]).to(device), make_batch(3, [5, 6], [4, 4]).to(device)]
    for name in ("atr/rnnsearch-gru", "atr/rnnsearch-atr", "dtmt/dtmt4"):
        model = tiny(REPO / "configs" / "papers" / f"{name}.yaml").to(device).train()
        loss_fn = lambda logits, t, m: label_smoothed_nll(logits, t, m, 0.1)  # noqa: E731
        expected = loss_and_grads(model, batches[1])
        model.zero_grad(set_to_none=True)
        graphs = UpdateGraphs(model, loss_fn)
        graphs(batches[0], 1.0)  # recorded (one bucket for both batches)
        model.zero_grad(set_to_none=False)
        loss, _ = graphs(batches[1], 1.0)  # replayed
        assert graphs.failed is None and graphs.replays == 1, name
        assert float(loss) == pytest.approx(float(expected[0]), rel=1e-3), name
        for n, p in model.named_parameters():  # padded shapes round differently: close, per tensor
            e = expected[1][n]
            assert float((p.grad - e).norm()) <= 1e-2 * float(e.norm()) + 1e-6, f"{name}: {n}"
        del model, graphs, loss
        gc.collect()
        torch.cuda.empty_cache()


@pytest.mark.on_device
@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_the_default_on_a_gpu_replays_graphs_and_a_resumed_run_ends_where_an_uninterrupted_one_does(
        tmp_path, tiny_corpus, device, dropout):
    """`train.cuda_graphs: auto` on a GPU in fp32: ATR's updates replayed; stopped at update 5
    and resumed (its graphs recorded again, a shape's first batch eager), the run ends with the
    weights of one that was not stopped, with dropout drawn inside the graphs too."""
    if device.type == "cpu":
        pytest.skip("CUDA graphs: run with --device cuda")
    from tests.support import assert_resume_is_exact, tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"].update(arch="atr-rnnsearch", cell="atr", dropout=dropout)
    tree["train"].update(device=str(device), validate_every=0, amp="none")
    tree["data"]["batch_tokens"] = 300  # several shapes, some seen twice
    lines = []
    assert_resume_is_exact(tree, tmp_path, steps=10, stop_at=5, log=lines.append)
    assert any("replayed from a CUDA graph per batch shape" in x for x in lines)


def test_the_trainer_with_graphs_trains_as_without(tmp_path, tiny_corpus):
    """The trainer's side (scale per batch, gradients zeroed in place, accumulation over two
    batches per update) with the stand-in recorder, against the eager trainer."""
    from rnmt.config import config_from_dict
    from rnmt.training.trainer import Trainer
    from tests.support import tiny_config_tree

    tree = tiny_config_tree(tiny_corpus["train"], tiny_corpus["dev"])
    tree["model"].update(arch="atr-rnnsearch", cell="atr", dropout=0.0)
    tree["train"].update(validate_every=0, max_steps=5, accumulate=2)
    tree["data"]["batch_tokens"] = 300
    eager = Trainer(config_from_dict(tree), tmp_path / "eager", log=lambda *_: None)
    eager.run()
    replayed = Trainer(config_from_dict(tree), tmp_path / "graphs", log=lambda *_: None)
    eps = replayed.cfg.train.label_smoothing
    replayed.update_graphs = UpdateGraphs(replayed.model, lambda x, t, m: label_smoothed_nll(x, t, m, eps),
                                          recorder=Rerun)
    replayed.run()
    assert replayed.update_graphs.replays > 0 and all(p.grad is not None for p in replayed.model.parameters())
    for (name, a), b in zip(eager.model.state_dict().items(), replayed.model.state_dict().values()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)


def test_graph_shapes_counts_the_distinct_buckets_of_each_epoch():
    from types import SimpleNamespace

    from tests.support import load_benchmark

    graph_shapes = load_benchmark("studies.graph_shapes")
    epochs = {0: [[0, 1], [2]], 1: [[1, 2], [0]]}  # pairs' (src, tgt) lengths: (3, 2), (9, 4), (5, 12)
    trainer = SimpleNamespace(corpus=SimpleNamespace(src_lens=[3, 9, 5], tgt_lens=[2, 4, 12]),
                              sampler=SimpleNamespace(epoch_batches=lambda e: epochs[e]))
    # epoch 1: (8, 16, 8), (8, 8, 16); epoch 2: (8, 16, 16), (8, 8, 8)
    assert graph_shapes.count(trainer, 2, 8) == [(2, 2), (4, 4)]
    assert graph_shapes.count(trainer, 2, 16) == [(2, 1), (4, 1)]


@pytest.mark.parametrize("path", GRAPHABLE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_what_a_graph_records_reads_nothing_back_to_the_host(path):
    """A graph cannot hold a host read (``.item()``, ``bool(tensor)``: each calls
    ``aten::_local_scalar_dense``): the recorded forward and backward of every model that
    takes the graphs, on the GPU's code path, has none."""
    batch = pad_batch(make_batch(5, [6, 4, 5], [3, 5, 2]), (8, 8, 8))
    for dropout in (0.0, 0.1):  # without dropout the GRU's fused paths apply, with it dropout's draws
        model = tiny(path, dropout=dropout).train()
        if update_graphs.declines(model, torch.device("cuda"), False) is not None:
            return
        graphs = UpdateGraphs(model, lambda x, t, m: label_smoothed_nll(x, t, m, 0.1), recorder=Rerun)
        entry = update_graphs._Entry(batch, 0.5)
        reads = update_graphs.HostReads()
        with kernels.use(False), deferred_grads.enabled(False), gru_cuda.use("everywhere"), reads:
            graphs._forward_backward(entry)
        assert reads.count == 0, (dropout, reads.where)


def test_graphs_run_the_update_under_the_runs_autocast():
    """bf16 runs take the graphs too: the recorded forward runs under autocast (its cache of
    weight casts off, which a capture cannot keep)."""
    model = tiny(REPO / "configs" / "papers" / "atr" / "rnnsearch-atr.yaml").train()
    seen = []

    def loss_fn(logits, target, mask):
        seen.append((logits.dtype, torch.is_autocast_enabled("cpu")))
        return label_smoothed_nll(logits, target, mask, 0.1)

    batch = make_batch(6, [6, 4, 5], [3, 5, 2])
    UpdateGraphs(model, loss_fn, amp_dtype=torch.bfloat16, recorder=Rerun)(batch, 1.0)
    UpdateGraphs(model, loss_fn, recorder=Rerun)(batch, 1.0)
    assert seen == [(torch.bfloat16, True), (torch.float32, False)]
    assert all(p.grad.dtype == torch.float32 for p in model.parameters())  # the weights' own dtype


def test_a_failed_recording_leaves_the_update_eager_and_says_so():
    class Fails(Rerun):
        error = "operation not permitted when stream is capturing"

    model = tiny(REPO / "configs" / "papers" / "atr" / "rnnsearch-atr.yaml").train()
    batches = [make_batch(7, [6, 4, 5], [3, 5, 2]), make_batch(8, [5, 6, 3], [4, 4, 2])]  # one bucket
    expected = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    for batch in batches:
        _, grads = loss_and_grads(model, batch)
        for n, g in grads.items():
            expected[n] += g
    model.zero_grad(set_to_none=True)
    lines = []
    graphs = UpdateGraphs(model, lambda x, t, m: label_smoothed_nll(x, t, m, 0.1), recorder=Fails, log=lines.append)
    for batch in batches:
        graphs(batch, 1.0)
    assert graphs.failed == Fails.error and not graphs.entries and graphs.replays == 0
    assert lines == [f"train.cuda_graphs: recording failed ({Fails.error}); the updates run eagerly from here"]
    for n, p in model.named_parameters():  # the first batch's eager run and the second's, no more
        torch.testing.assert_close(p.grad, expected[n], rtol=1e-4, atol=1e-6, msg=n)


def test_host_reads_counts_the_reads_of_values_on_the_host():
    x = torch.arange(4.0)
    reads = update_graphs.HostReads()
    with reads:
        y = (x * 2).sum()
        assert reads.count == 0
        float(y), bool(x.any()), x.tolist(), x.cpu(), torch.equal(x, x), x.item() if x.numel() == 1 else None
        torch.nn.functional.embedding(torch.tensor([1]), torch.ones(3, 2), max_norm=1.0)  # none: renorm in C++
    assert reads.where == ["__float__", "__bool__", "tolist", "cpu", "equal"] and reads.count == 5
    with reads:
        torch.tensor([2.0]).item()  # counted once, not again for the scalar read inside
        x[x > 1]  # boolean indexing: a nonzero, whose output size a GPU reads back
    assert reads.count == 7 and reads.where[-1:] == ["equal"]  # where keeps the first five


@pytest.mark.parametrize("name", ["atr/rnnsearch-atr", "dtmt/dtmt4", "atr/rnnsearch-gru", "survey/luong-general"])
def test_forbidding_host_reads_changes_no_value(name):
    """The step loop's every-step masking (and the GRU's step loop instead of cuDNN's
    sequence call, here its CPU stand-in) computes what the fast paths compute."""
    model = tiny(REPO / "configs" / "papers" / f"{name}.yaml").train()
    batch = make_batch(9, [6, 4, 5], [3, 5, 2])  # padding in both directions' walks
    with kernels.use(False), deferred_grads.enabled(False), gru_cuda.use("everywhere"):
        loss, grads = loss_and_grads(model, batch)
        with host_reads.forbidden():
            loss_f, grads_f = loss_and_grads(model, batch)
    torch.testing.assert_close(loss_f, loss, rtol=1e-6, atol=1e-6)
    for n in grads:
        torch.testing.assert_close(grads_f[n], grads[n], rtol=1e-5, atol=1e-7, msg=n)
