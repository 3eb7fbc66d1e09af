"""Study. Question: What could a CUDA graph of the whole training update gain on a GPU, at best?
Measured at: 89923c3.
Answer: 4.43x for RNNSearch-GRU and 6.07x for ATR on one batch shape on an H100, replayed weights
equal to eager ones; this led to `train.cuda_graphs` (docs/gpu-performance.md, "On a GPU").

What a CUDA graph of the whole training update would gain: the upper bound, one batch shape.

On a GPU an rnmt training update is bound by the host launching small kernels one target
position at a time (RNNSearch-GRU: about 3,300 kernels per update, the GPU busy 7% of the
time; docs/gpu-performance.md, "On a GPU"), and compiling the step did not help the GRU. A CUDA
graph records the update's kernels once and replays them with one launch. Before building
that into the trainer (shapes bucketed so that few graphs serve an epoch, one memory pool,
docs/gpu.md "What remains"), this measures how much it can gain, on one fixed batch shape
where a single graph serves every update:

* ``eager``: the update as the trainer's GPU path runs it (the GRU through the fused CUDA
  cell and cuDNN, `rnmt/fast/gru_cuda.py`);
* ``eager, no host reads``: the same with nothing read on the host (`rnmt.fast.host_reads`:
  the step loop masks every step, the cuDNN encoder, which reads the sentence lengths,
  gives way to the step loop), which is what a graph can hold;
* ``graphed``: that update (forward, label-smoothed loss, backward, gradient clipping,
  capturable Adam) recorded once with ``torch.cuda.graph`` and replayed with a new batch's
  tokens copied into its input buffers.

Every variant runs the same update function on the same batches, so their ratio is the
launch overhead alone. A check trains two copies of the model from one initialisation
(dropout off, so that both draw nothing at random) for ``--check`` updates, one eagerly and
one by replay, and reports the largest parameter difference.

On the CPU (``--device cpu``) only the eager updates run, and ``host_syncs`` counts the host
synchronisations (``aten::_local_scalar_dense``: ``.item()``, ``bool(tensor)``) in the part
of the update a graph would hold that runs the same code on both devices (forward, loss,
backward, clipping with no host reads; the GPU's capturable Adam reads nothing back, the
CPU's Adam reads its step count): a graph can be recorded only where that count is 0. The
synthetic batches (random tokens, source and target lengths drawn between half and all of
the shape) need no corpus:

    python -m benchmarks.studies.graphed_update --device cuda --out results/gpu/graphed-update.json
    python -m benchmarks.studies.graphed_update --device cpu --dims 32,64 --batch 4 --src-len 9 \\
        --tgt-len 7 --updates 3 --warmup 1 --vocab 50
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.nn.functional as F

from benchmarks import REPO
from benchmarks.gpu import SYSTEMS, commit, machine, sync
from rnmt import deferred_grads, kernels
from rnmt.config import load_config
from rnmt.data.vocab import PAD_ID
from rnmt.fast import host_reads
from rnmt.models import build_model
from rnmt.models.base import uniform_init_
from rnmt.training.update_graphs import HostReads

GRAPH_SYSTEMS = ("rnnsearch-gru", "atr", "dtmt4")  # cseq2seq1's re-reading steps a data-dependent number of rows


def build(system: str, dims: List[int], vocab: int, dropout: bool, seed: int, device: torch.device):
    config, label = SYSTEMS[system]
    sets = [f"model.emb_size={dims[0]}", f"model.hidden_size={dims[1]}"]
    if not dropout:
        sets += ["model.dropout=0.0", "model.rnn_dropout=0.0"]
    cfg = load_config(str(REPO / config), sets, warn_deprecated=False)
    torch.manual_seed(seed)
    model = build_model(cfg.model, vocab, vocab)
    uniform_init_(model, cfg.train.init_scale)
    return model.to(device).train(), cfg, label


def synthetic_batches(n: int, rows: int, src_len: int, tgt_len: int, vocab: int, seed: int,
                      device: torch.device) -> List[Dict[str, torch.Tensor]]:
    """``n`` batches of one shape: random tokens, each row's lengths between half and all of
    the shape (the longest row at full length, as a real batch's padding has it)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        src_lens = torch.randint(max(1, src_len // 2), src_len + 1, (rows,), generator=g)
        tgt_lens = torch.randint(max(1, tgt_len // 2), tgt_len + 1, (rows,), generator=g)
        src_lens[0], tgt_lens[0] = src_len, tgt_len
        src_mask = torch.arange(src_len)[None] < src_lens[:, None]
        tgt_mask = torch.arange(tgt_len)[None] < tgt_lens[:, None]
        src = torch.randint(4, vocab, (rows, src_len), generator=g).masked_fill(~src_mask, PAD_ID)
        tgt = torch.randint(4, vocab, (rows, tgt_len + 1), generator=g)
        tgt_in, tgt_out = tgt[:, :-1].masked_fill(~tgt_mask, PAD_ID), tgt[:, 1:].masked_fill(~tgt_mask, PAD_ID)
        out.append({k: v.to(device) for k, v in
                    dict(src=src, src_mask=src_mask, tgt_in=tgt_in, tgt_out=tgt_out).items()})
    return out


def make_update(model, optimizer: Optional[torch.optim.Optimizer], clip: float,
                smoothing: float) -> Callable[[Dict[str, torch.Tensor]], torch.Tensor]:
    """One update on a batch's tensors (without an optimiser: up to the clipped gradients)."""
    params = [p for p in model.parameters() if p.requires_grad]

    def update(batch: Dict[str, torch.Tensor]) -> torch.Tensor:
        model.zero_grad(set_to_none=False)  # the graph's gradients keep their addresses
        logits = model(batch["src"], batch["src_mask"], batch["tgt_in"])
        loss = F.cross_entropy(logits.float().flatten(0, 1), batch["tgt_out"].flatten(), ignore_index=PAD_ID,
                               label_smoothing=smoothing)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip, foreach=True)
        if optimizer is not None:
            optimizer.step()
        return loss.detach()

    return update


def adam(model, device: torch.device) -> torch.optim.Optimizer:
    # capturable: the step count lives on the device, so the recorded step advances it
    return torch.optim.Adam(model.parameters(), lr=1e-3, capturable=device.type == "cuda")


class GraphedUpdate:
    """The update recorded once (after ``warmup`` eager updates on a side stream, as CUDA
    graphs ask) into input buffers of the batches' shape; a call copies a batch in and replays."""

    def __init__(self, update, example: Dict[str, torch.Tensor], warmup: int) -> None:
        self.inputs = {k: v.clone() for k, v in example.items()}
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(warmup):
                update(self.inputs)
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.loss = update(self.inputs)

    def __call__(self, batch: Dict[str, torch.Tensor]) -> torch.Tensor:
        for k, v in batch.items():
            self.inputs[k].copy_(v)
        self.graph.replay()
        return self.loss


def timed(fn: Callable[[Dict[str, torch.Tensor]], Any], batches, warmup: int, updates: int,
          device: torch.device, tokens: float) -> Dict[str, Any]:
    for i in range(warmup):
        fn(batches[i % len(batches)])
    sync(device)
    times = []
    for i in range(updates):
        start = time.perf_counter()
        fn(batches[i % len(batches)])
        sync(device)
        times.append(time.perf_counter() - start)
    times.sort()
    total = sum(times)
    return {"updates": updates, "seconds": total, "ms_per_update_median": 1000 * times[len(times) // 2],
            "target_tokens_per_s": tokens * updates / total}


def run_system(system: str, args, device: torch.device, log) -> Dict[str, Any]:
    batches = synthetic_batches(8, args.batch, args.src_len, args.tgt_len, args.vocab, args.seed, device)
    tokens = sum(float((b["tgt_out"] != PAD_ID).sum()) for b in batches) / len(batches)
    model, cfg, label = build(system, args.dims, args.vocab, dropout=True, seed=args.seed, device=device)
    row: Dict[str, Any] = {"system": system, "label": label, "params": sum(p.numel() for p in model.parameters()),
                           "shape": {"rows": args.batch, "src_len": args.src_len, "tgt_len": args.tgt_len},
                           "target_tokens_per_update": tokens}
    update = make_update(model, adam(model, device), cfg.train.clip_norm or 5.0, 0.1)
    with deferred_grads.enabled(False):
        row["eager"] = timed(update, batches, args.warmup, args.updates, device, tokens)
        log(f"[{system}] eager: {row['eager']['target_tokens_per_s']:,.0f} tok/s, "
            f"{row['eager']['ms_per_update_median']:.1f} ms/update")
        with host_reads.forbidden(), kernels.use(False):
            scan = HostReads()  # the capturable Adam of a GPU reads nothing back; the CPU's Adam does
            with scan:
                make_update(model, None, cfg.train.clip_norm or 5.0, 0.1)(batches[0])
            row["host_syncs"], row["host_syncs_where"] = scan.count, scan.where
            row["eager_no_host_reads"] = timed(update, batches, args.warmup, args.updates, device, tokens)
            log(f"[{system}] eager, no host reads: {row['eager_no_host_reads']['target_tokens_per_s']:,.0f} tok/s; "
                f"host syncs in the update: {scan.count}")
            if device.type == "cuda":
                row.update(graphed_rows(system, update, batches, args, device, tokens, log))
                if "graphed" in row:
                    row["graphed_over_eager"] = (row["graphed"]["target_tokens_per_s"]
                                                 / row["eager"]["target_tokens_per_s"])
    return row


def graphed_rows(system: str, update, batches, args, device: torch.device, tokens: float,
                 log: Callable[[str], None]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    try:
        torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        graphed = GraphedUpdate(update, batches[0], warmup=3)
        sync(device)
        out["record_seconds"] = time.perf_counter() - start
        out["graphed"] = timed(graphed, batches, args.warmup, args.updates, device, tokens)
        out["graphed_peak_allocated_mib"] = torch.cuda.max_memory_allocated(device) / 2 ** 20
        log(f"[{system}] graphed: {out['graphed']['target_tokens_per_s']:,.0f} tok/s, "
            f"{out['graphed']['ms_per_update_median']:.1f} ms/update (recorded in {out['record_seconds']:.1f} s)")
        out["check"] = check(system, args, device)
        log(f"[{system}] check after {args.check} updates: largest parameter difference "
            f"{out['check']['max_abs_diff']:.2e}")
    except Exception as exc:  # noqa: BLE001  (a failed recording is the finding: say what failed)
        out["graph_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
        log(f"[{system}] graph failed: {out['graph_error']}")
    return out


def check(system: str, args, device: torch.device) -> Dict[str, Any]:
    """Two copies from one initialisation, dropout off: ``check`` updates eagerly and by
    replay on the same batches, both after the same three eager warm-up updates."""
    batches = synthetic_batches(args.check, args.batch, args.src_len, args.tgt_len, args.vocab, args.seed + 1, device)
    eager_model, cfg, _ = build(system, args.dims, args.vocab, dropout=False, seed=args.seed, device=device)
    graph_model = copy.deepcopy(eager_model)
    eager = make_update(eager_model, adam(eager_model, device), cfg.train.clip_norm or 5.0, 0.1)
    for _ in range(3):  # what GraphedUpdate's warm-up does to its model
        eager(batches[0])
    graphed = GraphedUpdate(make_update(graph_model, adam(graph_model, device), cfg.train.clip_norm or 5.0, 0.1),
                            batches[0], warmup=3)
    losses = []
    for b in batches:
        losses.append((float(eager(b)), float(graphed(b))))
    diff = max(float((p - q).detach().abs().max()) for p, q in zip(eager_model.parameters(),
                                                                   graph_model.parameters()))
    return {"updates": len(batches), "max_abs_diff": diff, "losses_eager_graphed": losses}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--systems", default=",".join(GRAPH_SYSTEMS))
    p.add_argument("--dims", default="256,512", help="embedding,hidden (the peer size)")
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--batch", type=int, default=64, help="rows per batch")
    p.add_argument("--src-len", type=int, default=30)
    p.add_argument("--tgt-len", type=int, default=32)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--updates", type=int, default=50)
    p.add_argument("--check", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--commit", default=None)
    p.add_argument("--out", default=None, help="JSON file to write")
    args = p.parse_args(argv)
    args.dims = [int(x) for x in args.dims.split(",")]
    systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in systems if s not in GRAPH_SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown system: {', '.join(unknown)} (choose from {', '.join(GRAPH_SYSTEMS)})")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and device.index is not None:  # plain "cuda" is the current device
        torch.cuda.set_device(device)
    command = " ".join(["python", "-m", "benchmarks.studies.graphed_update", *sys.argv[1:]])
    payload: Dict[str, Any] = {"meta": {"commit": commit(args.commit), "command": command, **machine(device)},
                               "systems": []}
    for system in systems:
        payload["systems"].append(run_system(system, args, device, log=print))
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
