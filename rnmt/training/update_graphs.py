"""The teacher-forced forward and backward of a training update replayed from CUDA graphs.

On a GPU a recurrent model's update is bound by the host launching small kernels one time
step at a time: an RNNSearch-GRU update at the peer size launched about 3,300 kernels and
kept an H200 busy 7% of the time (docs/performance.md, "On a GPU"). A CUDA graph records
those kernels once and replays them with one launch. A graph reads and writes fixed
addresses and has fixed shapes, so (``train.cuda_graphs``, `choose`):

* each batch is padded to a bucket shape (rows, source and target lengths rounded up to a
  multiple of `BUCKET`), so that a few dozen graphs serve every batch of an epoch. The
  padding changes nothing that is learnt: padded source positions are masked out of the
  encoder and attention, padded target positions out of the loss, and a padded row is a
  one-token source (``</s>``) whose target is all padding, so its loss and gradients are
  zero (`pad_batch`; the tests compare gradients with the unpadded batch);
* a shape seen for the first time runs eagerly (that is the batch's own update; it also
  makes what a stream makes lazily, such as cuBLAS's workspace), then its graph is
  recorded; later batches of that shape are copied into the graph's input buffers and
  replayed. Recording runs no kernel, so the gradients are those of the eager run;
* the backward accumulates into the parameters' ``.grad``, which therefore keep their
  addresses between updates (the trainer zeroes them in place instead of freeing them);
  the optimiser, clipping and the non-finite check stay outside the graphs, as does
  anything that reads a value on the host;
* every graph draws its memory from one pool: they never run at the same time and hand
  nothing to each other (their only outputs, the loss sums, are kept apart), so the pool
  holds about one update's activations, not one per shape.

Nothing inside reads a value on the host (`rnmt.fast.host_reads`): the step loop masks
every step instead of asking which hold no padding, and the GRU's cuDNN sequence calls,
which read the sentence lengths, give way to the step loop (its fused CUDA step is kept).
Under bf16 autocast the weights are cast inside the graph at every use (autocast's cache of
casts does not survive a capture, so it is off there). Graphs need a CUDA device, one
process, and a model whose step is one graph (``compilable_step``; the Cseq2seq re-reading
is data-dependent). `declines` says why not otherwise.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from rnmt.data.collate import Batch
from rnmt.data.vocab import EOS_ID, PAD_ID
from rnmt.fast import host_reads

BUCKET = 8  # rows and lengths rounded up to a multiple of this
Shape = Tuple[int, int, int]  # rows, source length, target length
LossFn = Callable[[Tensor, Tensor, Tensor], Tuple[Tensor, Tensor]]  # (logits, target, mask) -> (loss, nll) sums
INPUTS = ("src", "src_mask", "tgt_in", "tgt_out", "tgt_mask")


def bucket_shape(rows: int, src_len: int, tgt_len: int, bucket: int = BUCKET) -> Shape:
    def up(n: int) -> int:
        return -(-n // bucket) * bucket

    return up(rows), up(src_len), up(tgt_len)


def pad_batch(batch: Batch, shape: Shape) -> Batch:
    """``batch`` padded to ``shape`` (see the module docstring): the same real tokens, masks
    False on every added position, added rows a one-token source and an all-padding target."""
    rows, src_len, tgt_len = shape
    b, s, t = batch.src.size(0), batch.src.size(1), batch.tgt_in.size(1)
    if (b, s, t) == shape:
        return batch

    def grown(x: Tensor, length: int, fill) -> Tensor:
        out = x.new_full((rows, length), fill)
        out[:b, : x.size(1)] = x
        return out

    src = grown(batch.src, src_len, PAD_ID)
    src_mask = grown(batch.src_mask, src_len, False)
    src[b:, 0] = EOS_ID
    src_mask[b:, 0] = True
    src_lens = batch.src_lens.new_ones(rows)
    src_lens[:b] = batch.src_lens
    return replace(batch, src=src, src_mask=src_mask, src_lens=src_lens,
                   tgt_in=grown(batch.tgt_in, tgt_len, PAD_ID), tgt_out=grown(batch.tgt_out, tgt_len, PAD_ID),
                   tgt_mask=grown(batch.tgt_mask, tgt_len, False))


# What reads a tensor's value on the host (a CUDA graph's recording cannot): seen as Python
# calls, since on the CPU several of them (tolist, cpu, numpy, equal) dispatch no operation
HOST_READS = frozenset({"item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__",
                        "equal", "nonzero", "masked_select", "unique", "unique_consecutive"})


class HostReads(TorchFunctionMode):
    """Counts, within the block, the host reads of tensor values: the calls of `HOST_READS`
    and the operations of `HOST_READING_OPS` that others make (boolean indexing's nonzero). Code that runs alike on
    the CPU and a GPU, checked on the CPU, could be recorded into a CUDA graph when the count
    is 0; ``where`` names the first few reads."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.where: List[str] = []
        self._reading = False  # inside a counted call: its own scalar read is not another
        self._scalars = _ScalarReads(self)

    def seen(self, name: str) -> None:
        self.count += 1
        if len(self.where) < 5:
            self.where.append(name)

    def __enter__(self):
        self._scalars.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self._scalars.__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", None)
        if name not in HOST_READS or self._reading:
            return func(*args, **(kwargs or {}))
        self.seen(name)
        self._reading = True
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self._reading = False


# Operations whose CUDA kernels read a value on the host (a scalar, or an output's size)
HOST_READING_OPS = ("_local_scalar_dense", "nonzero", "masked_select", "equal", "is_nonzero", "_unique",
                    "_unique2", "unique_dim", "unique_consecutive")


class _ScalarReads(TorchDispatchMode):
    def __init__(self, owner: HostReads) -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if not self.owner._reading and (name in HOST_READING_OPS or (name in ("index", "index_put", "index_put_")
                                                                     and _bool_index(args))):
            self.owner.seen(f"aten::{name}")
        return func(*args, **(kwargs or {}))


def _bool_index(args) -> bool:
    """A boolean mask among the indices (``x[mask]``): its nonzero sizes the output."""
    return len(args) > 1 and any(isinstance(i, Tensor) and i.dtype == torch.bool for i in args[1] or ())


def declines(model: torch.nn.Module, device: torch.device, distributed: bool) -> Optional[str]:
    """Why ``train.cuda_graphs`` cannot replay this run's updates, or None."""
    if device.type != "cuda":
        return "CUDA graphs need a CUDA device"
    if distributed:
        return "one process only (DDP's gradient hooks run outside a graph)"
    if not getattr(model, "compilable_step", False):
        return "the model's update is not one fixed graph (no step loop, or a data-dependent one)"
    return None


def choose(setting: object, model: torch.nn.Module, device: torch.device, distributed: bool,
           amp_dtype: Optional[torch.dtype], compile_step: object) -> Tuple[bool, Optional[str]]:
    """Whether ``train.cuda_graphs`` (true, false or auto) replays this run's updates, and a
    line for the log (None: nothing to say). ``auto`` replays them on CUDA in fp32 for every
    model whose update is one graph: on an H100 at the peer size RNNSearch-GRU trained 2.26x
    and ATR 2.70x faster than eagerly, a DTMT#4 update replayed in 70 ms against 751 ms
    (results/gpu/, docs/performance.md). Left to the eager update: bf16 autocast (not timed
    under graphs on a GPU; ``true`` forces them) and ``train.compile_step: true`` (the
    compiled step was asked for)."""
    if setting is False:
        return False, None
    why = declines(model, device, distributed)
    if setting is True:
        return (False, f"train.cuda_graphs: the updates run eagerly ({why})") if why else (True, None)
    if device.type != "cuda":
        return False, None  # auto is for GPUs; the CPU's update is matrix products, not launches
    if why is None and amp_dtype is not None:
        why = "bf16 autocast, not yet timed under graphs on a GPU: true forces them"
    if why is None and compile_step is True:
        why = "train.compile_step: true asks for the compiled step instead"
    return (False, f"train.cuda_graphs auto: the updates run eagerly ({why})") if why else (True, None)


class _SideStream:
    """One side stream per device for recording, as CUDA graphs ask."""

    streams: Dict[torch.device, torch.cuda.Stream] = {}


class CudaGraphRecorder:
    """Runs ``fn`` eagerly on the side stream (its result, ``first``, is the batch's), then
    records it into a graph drawing on ``pool``; ``replay`` runs the graph and returns the
    recorded outputs. A recording that fails (an operation a graph cannot hold) leaves
    ``error`` set, ``first`` still valid."""

    def __init__(self, fn: Callable[[], Tuple[Tensor, Tensor]], pool: Tuple[int, int]) -> None:
        device = torch.device("cuda", torch.cuda.current_device())
        stream = _SideStream.streams.get(device)
        if stream is None:
            stream = _SideStream.streams[device] = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream())
        self.graph = torch.cuda.CUDAGraph()
        self.error: Optional[str] = None
        with torch.cuda.stream(stream):
            self.first = fn()
            self.graph.capture_begin(pool=pool)
            try:
                self.outputs = fn()
            except RuntimeError as exc:
                self.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            finally:
                try:
                    self.graph.capture_end()
                except RuntimeError as exc:  # after a failed capture, ending it fails too
                    self.error = self.error or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        torch.cuda.current_stream().wait_stream(stream)

    def replay(self) -> Tuple[Tensor, Tensor]:
        self.graph.replay()
        return self.outputs


class _Entry:
    """A batch's input buffers and loss scale (a graph reads these addresses), and its graph."""

    def __init__(self, batch: Batch, scale: float) -> None:
        self.inputs = {k: getattr(batch, k).clone() for k in INPUTS}
        self.scale = torch.full((), scale, device=batch.src.device)
        self.graph = None


def host_rss_mib() -> Optional[float]:
    """This process's resident memory now (Linux's /proc), or None where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except (OSError, ValueError, IndexError):
        return None


def host_budget_mib() -> float:
    """Host memory the graphs of one run may take: an eighth of the machine's, at most 8 GiB.
    A graph keeps every kernel it records on the host, about 8-10 KB each: on an H100 72
    RNNSearch-GRU graphs (about 3,300 kernels an update) took 2.5 GB, 20 DTMT#4 graphs (about
    29,000) 4.8 GB (results/gpu/, the processes' peak RSS against eager ones)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except (OSError, ValueError, AttributeError):
        total = 32768.0
    return min(8192.0, total / 8)


class UpdateGraphs:
    """The forward and backward of each (padded) batch, replayed from a graph per shape.

    ``recorder`` makes a graph from a function of an entry's buffers (by default a
    `CudaGraphRecorder` on this object's own memory pool; tests on the CPU pass one that runs
    the function again on every replay, which exercises the same padding, buffers and
    bookkeeping). Recording stops once the graphs' host memory (the process's resident memory
    grown over the recordings, ``rss``) reaches ``budget_mib`` (`host_budget_mib`): batches of
    a shape seen later run eagerly, the recorded shapes are still replayed. The shapes seen
    first are the commonest, so the replays cover most batches.
    """

    def __init__(self, model: torch.nn.Module, loss_fn: LossFn, amp_dtype: Optional[torch.dtype] = None,
                 recorder: Optional[Callable[[Callable[[], Tuple[Tensor, Tensor]]], object]] = None,
                 log: Callable[[str], None] = lambda _: None, budget_mib: Optional[float] = None,
                 rss: Callable[[], Optional[float]] = host_rss_mib) -> None:
        self.model = model
        self.loss_fn = loss_fn
        self.amp_dtype = amp_dtype  # autocast's dtype, None for fp32
        self.recorder = recorder or self._cuda_graph
        self._pool: Optional[Tuple[int, int]] = None
        self.log = log
        self.entries: Dict[Shape, _Entry] = {}
        self.replays = 0
        self.eager = 0  # updates of shapes left unrecorded by the budget
        self.failed: Optional[str] = None  # why a recording failed (from then on every update runs eagerly)
        self.budget_mib = host_budget_mib() if budget_mib is None else budget_mib
        self.host_mib = 0.0  # resident memory the recordings added
        self.full = False  # the budget is spent: no more recordings
        self.rss = rss

    def _cuda_graph(self, fn: Callable[[], Tuple[Tensor, Tensor]]) -> CudaGraphRecorder:
        # A pool of this object's own: the allocator forgets a pool once every graph recorded
        # into it is gone, and recording into a forgotten handle fails an internal assertion
        # (seen on an H100 when a second model trained with graphs in the same process).
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        return CudaGraphRecorder(fn, self._pool)

    def _count_host_memory(self, before: Optional[float]) -> None:
        after = self.rss()
        if before is None or after is None:  # unmeasurable: a count stands in (64 graphs)
            self.host_mib += self.budget_mib / 64
        else:
            self.host_mib += max(0.0, after - before)
        if self.host_mib >= self.budget_mib:
            self.full = True
            self.log(f"train.cuda_graphs: {len(self.entries)} batch shapes recorded, {self.host_mib:,.0f} MiB of "
                     f"host memory (the budget: {self.budget_mib:,.0f}); batches of shapes not yet seen run eagerly")

    def _forward_backward(self, entry: _Entry) -> Tuple[Tensor, Tensor]:
        x = entry.inputs
        with host_reads.forbidden():
            with torch.autocast(x["src"].device.type, dtype=self.amp_dtype or torch.bfloat16,
                                enabled=self.amp_dtype is not None, cache_enabled=False):
                logits = self.model(x["src"], x["src_mask"], x["tgt_in"])
                loss, nll = self.loss_fn(logits, x["tgt_out"], x["tgt_mask"])
            (loss * entry.scale).backward()
        return loss.detach(), nll.detach()

    def __call__(self, batch: Batch, scale: float) -> Tuple[Tensor, Tensor]:
        """Accumulate ``scale`` times the gradient of the batch's loss sum into ``.grad``;
        return (loss sum, nll sum), valid until the next call."""
        if self.failed is not None:
            return self._forward_backward(_Entry(batch, scale))
        shape = bucket_shape(batch.src.size(0), batch.src.size(1), batch.tgt_in.size(1))
        entry = self.entries.get(shape)
        if entry is None and self.full:
            self.eager += 1
            return self._forward_backward(_Entry(batch, scale))
        padded = pad_batch(batch, shape)
        if entry is None:
            for p in self.model.parameters():  # the graph accumulates into fixed addresses
                if p.requires_grad and p.grad is None:
                    p.grad = torch.zeros_like(p)
            entry = _Entry(padded, scale)
            before = self.rss()
            entry.graph = graph = self.recorder(lambda: self._forward_backward(entry))
            if getattr(graph, "error", None) is not None:
                self.failed = graph.error  # type: ignore[attr-defined]
                self.entries.clear()  # their graphs and buffers go
                self.log(f"train.cuda_graphs: recording failed ({self.failed}); the updates run eagerly from here")
            else:
                self.entries[shape] = entry
                self._count_host_memory(before)
            return graph.first  # type: ignore[attr-defined]
        for k in INPUTS:
            entry.inputs[k].copy_(getattr(padded, k))
        entry.scale.fill_(scale)
        self.replays += 1
        return entry.graph.replay()  # type: ignore[attr-defined]
