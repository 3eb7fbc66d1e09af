"""Data-parallel training with ``torch.distributed``, launched by ``torchrun``.

``torchrun --nproc-per-node N -m rnmt train CONFIG`` starts N processes and sets the
standard environment variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
``MASTER_PORT``); multi-node runs use torchrun's own rendezvous flags (``--nnodes``,
``--rdzv-backend``, ``--rdzv-endpoint``, ...). `init_distributed` reads that environment
and joins the process group with NCCL when the run trains on CUDA and gloo otherwise.
A plain ``rnmt train`` (no torchrun) is a world of one and never touches torch.distributed.

Everything the trainer needs from the group goes through `DistContext`, whose methods are
no-ops in a world of one, so the single-process code path stays exactly what it was.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, List, Sequence

import torch
import torch.distributed as dist

from rnmt.errors import UserError


def launched_by_torchrun() -> bool:
    """True when the environment describes a process group (``WORLD_SIZE`` and ``RANK`` set)."""
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


@dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str = ""  # "" when torch.distributed is not in use

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def all_reduce_sum(self, values: Sequence[float], device: torch.device) -> List[float]:
        """Sum a few numbers over all ranks (float64, so token counts stay exact)."""
        if not self.enabled:
            return [float(v) for v in values]
        t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t.tolist()

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        """Rank ``src``'s value of ``obj`` on every rank."""
        if not self.enabled:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=src)
        return box[0]

    def all_gather_object(self, obj: Any) -> List[Any]:
        if not self.enabled:
            return [obj]
        out: List[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out


def init_distributed(device_name: str = "auto", timeout_minutes: float = 60.0) -> DistContext:
    """Join the process group torchrun described, or return a world of one.

    The backend is NCCL when this run trains on CUDA, gloo otherwise (CPU). With CUDA, each
    process uses the GPU of its ``LOCAL_RANK``.
    """
    if not launched_by_torchrun():
        return DistContext()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if world <= 1:
        return DistContext(rank=rank, world_size=world, local_rank=local_rank)
    if not dist.is_available():
        raise UserError("this PyTorch build has no torch.distributed; train with one process")
    cuda = uses_cuda(device_name)
    backend = "nccl" if cuda else "gloo"
    if cuda:
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, timeout=timedelta(minutes=timeout_minutes))
    return DistContext(rank=dist.get_rank(), world_size=dist.get_world_size(), local_rank=local_rank,
                       backend=backend)


def uses_cuda(device_name: str) -> bool:
    if device_name == "auto":
        return torch.cuda.is_available()
    return device_name.startswith("cuda")


def shutdown(ctx: DistContext) -> None:
    """Leave the process group. All ranks meet first: a rank tearing down its connections
    while another still uses them can abort the other (seen with gloo). The short pause
    releases the GIL so that gloo's work thread can finish the barrier's Python side before
    anything is torn down (`rnmt train` under torchrun then leaves without destructors:
    rnmt/commands/train.py says why)."""
    if ctx.enabled and dist.is_initialized():
        try:
            dist.barrier()
            time.sleep(0.2)
        finally:
            dist.destroy_process_group()
