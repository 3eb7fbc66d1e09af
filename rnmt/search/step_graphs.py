"""A decoding step replayed from a CUDA graph instead of launched kernel by kernel.

On a GPU a beam search step at translation batch sizes is bound by the host launching
kernels one at a time: RNNSearch-GRU's step is about 30 small kernels, each taking the host
longer to launch than the GPU to run (docs/performance.md, "On a GPU"). A CUDA graph
records the step's kernels once and replays them with one launch. A graph reads and writes
fixed addresses, so `GraphedStep` keeps, for the current row count and memory, a graph
with its own input buffers (previous tokens, state): a call copies the inputs in, replays,
and returns the graph's output tensors, which the next replay overwrites. The beam search
consumes them (selects the surviving rows into new tensors) before it calls again.

The memory (annotations, keys, mask) is read where it lies; a new memory or row count (a
new batch, or the search dropping finished sentences) records a new graph, and the step
that records it runs eagerly, so a graph costs one extra recording per shape. Graphs are
on by default (`use(False)` turns them off), only for CUDA tensors, and never under
autocast (its weight cast cache does not survive capture). On an H100 at 00307e3 they
decoded 1.28x the eager step's sentences/s on the dev set in batches and 1.88x with one
sentence per search, where every search records its own graphs (docs/performance.md).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Dict, Iterator, Optional, Tuple

import torch
from torch import Tensor

from rnmt.models.base import TensorDict

StepFn = Callable[[Tensor, TensorDict, TensorDict], Tuple[Tensor, TensorDict, TensorDict]]

_enabled = True  # searches on CUDA replay graphs unless a caller turns them off


@contextmanager
def use(on: bool) -> Iterator[None]:
    """Within the block, beam search on CUDA replays its model step from CUDA graphs (``on``,
    the default outside any block) or launches it eagerly. Restored on exit; process-wide."""
    global _enabled
    before, _enabled = _enabled, bool(on)
    try:
        yield
    finally:
        _enabled = before


def applies(src: Tensor) -> bool:
    """Graphs are switched on, the search runs on CUDA, and autocast is off there."""
    return _enabled and src.is_cuda and not torch.is_autocast_enabled("cuda")


class CudaGraph:
    """The recorder: a `torch.cuda.CUDAGraph` of ``fn`` (a no-argument function reading and
    writing the entry's buffers), recorded on one side stream per device.

    The lower-level capture calls rather than ``torch.cuda.graph``, whose entry synchronises
    the device and empties the allocator's cache at every recording (a search records one
    graph per shape). The side stream lives as long as the process and runs ``fn`` once
    before its first recording, so that what is made lazily per stream (cuBLAS's workspace)
    is made outside any graph's memory pool.
    """

    _streams: Dict[torch.device, torch.cuda.Stream] = {}

    def __init__(self, fn: Callable[[], tuple]) -> None:
        device = torch.device("cuda", torch.cuda.current_device())
        stream = self._streams.get(device)
        fresh = stream is None
        if stream is None:
            stream = self._streams[device] = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream())
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            if fresh:
                fn()
            self.graph.capture_begin()
            try:
                self.outputs = fn()
            finally:
                self.graph.capture_end()
        torch.cuda.current_stream().wait_stream(stream)

    def replay(self) -> tuple:
        self.graph.replay()
        return self.outputs


class _Entry:
    def __init__(self, key: tuple, prev: Tensor, state: TensorDict, memory: TensorDict) -> None:
        self.key = key
        self.prev = prev.clone()
        self.state = {k: v.clone() for k, v in state.items()}
        self.memory = memory  # held: the graph reads these addresses
        self.graph: Optional[object] = None


class GraphedStep:
    """``model.step`` for one search, replayed from a graph per (rows, memory).

    ``recorder`` makes the graph from a function of the entry's buffers (`CudaGraph`; tests
    on the CPU pass one that re-runs the function on every replay, which exercises the same
    buffers and bookkeeping).
    """

    def __init__(self, step: StepFn, recorder: Callable[[Callable[[], tuple]], object] = CudaGraph) -> None:
        self.step = step
        self.recorder = recorder
        self.entry: Optional[_Entry] = None
        self.recorded = 0  # graphs recorded (one per shape the search went through)
        self.failed: Optional[str] = None  # why recording failed (then every step runs eagerly)

    @staticmethod
    def _key(prev: Tensor, state: TensorDict, memory: TensorDict) -> tuple:
        return (prev.shape, tuple((k, v.shape, v.dtype) for k, v in state.items()),
                tuple((k, v.data_ptr(), v.shape, v.dtype) for k, v in memory.items()))

    def __call__(self, prev: Tensor, state: TensorDict, memory: TensorDict):
        if self.failed is not None:
            return self.step(prev, state, memory)
        key = self._key(prev, state, memory)
        entry = self.entry
        if entry is None or entry.key != key:
            # A new shape: this step runs eagerly (it also initialises whatever the step
            # builds lazily, such as token tables), then the graph is recorded for the next.
            self.entry = None  # release the old graph and buffers first
            result = self.step(prev, state, memory)
            entry = _Entry(key, prev, state, memory)
            try:
                entry.graph = self.recorder(lambda: self.step(entry.prev, entry.state, entry.memory))
            except RuntimeError as exc:  # a step that cannot be captured (e.g. it reads a value on the host)
                self.failed = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                return result
            self.entry = entry
            self.recorded += 1
            return result
        entry.prev.copy_(prev)
        for k, v in state.items():
            entry.state[k].copy_(v)
        return entry.graph.replay()  # type: ignore[attr-defined]
