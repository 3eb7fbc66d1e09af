"""The dynamic batcher on its own, with a fake model: grouping, budgets, cancellation, errors."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import List

import pytest

from rnmt.serve.batcher import DynamicBatcher, SearchOptions


class FakeModel:
    """Upper-cases lines and records every call; can be held to keep the worker busy."""

    def __init__(self, delay: float = 0.0) -> None:
        self.calls: List[List[str]] = []
        self.delay = delay
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def __call__(self, lines: List[str], options: SearchOptions) -> List[str]:
        self.entered.set()
        assert self.gate.wait(5), "test gate never opened"
        if self.delay:
            time.sleep(self.delay)
        if any(line == "boom" for line in lines):
            raise ValueError("model failure")
        self.calls.append(list(lines))
        return [f"{line.upper()}/{options.beam}" for line in lines]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_concurrent_requests_share_one_call_and_get_their_own_results():
    model = FakeModel()

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=50)
        await batcher.start()
        try:
            jobs = [batcher.translate([f"a{i}", f"b{i}"], SearchOptions(beam=2)) for i in range(5)]
            return await asyncio.gather(*jobs), batcher.stats
        finally:
            await batcher.stop()

    results, stats = run(main())
    assert results == [[f"A{i}/2", f"B{i}/2"] for i in range(5)]
    assert len(model.calls) == 1 and len(model.calls[0]) == 10
    assert stats.requests == 5 and stats.batches == 1 and stats.max_batch_requests == 5


def test_requests_with_different_options_are_not_mixed():
    model = FakeModel()

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=30)
        await batcher.start()
        try:
            jobs = [batcher.translate([str(i)], SearchOptions(beam=1 + i % 2)) for i in range(6)]
            return await asyncio.gather(*jobs)
        finally:
            await batcher.stop()

    results = run(main())
    assert results == [[f"{i}/{1 + i % 2}"] for i in range(6)]
    assert sorted(map(sorted, model.calls)) == [["0", "2", "4"], ["1", "3", "5"]]


def test_budgets_limit_the_batch():
    model = FakeModel()

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=30, max_batch_sentences=3, max_batch_tokens=1000)
        await batcher.start()
        try:
            await asyncio.gather(*[batcher.translate([str(i)], SearchOptions()) for i in range(7)])
            by_tokens = DynamicBatcher(model, max_wait_ms=30, max_batch_tokens=10)
            await by_tokens.start()
            try:
                model.calls.clear()
                await asyncio.gather(*[by_tokens.translate(["x"], SearchOptions(), cost=4) for _ in range(5)])
            finally:
                await by_tokens.stop()
        finally:
            await batcher.stop()

    run(main())
    assert [len(c) for c in model.calls] == [2, 2, 1]  # 4 + 4 tokens fit in 10, a third would not


def test_without_batching_requests_are_served_one_at_a_time():
    model = FakeModel()

    async def main():
        batcher = DynamicBatcher(model, batching=False, max_wait_ms=50)
        await batcher.start()
        try:
            return await asyncio.gather(*[batcher.translate([str(i), "x"], SearchOptions()) for i in range(4)])
        finally:
            await batcher.stop()

    results = run(main())
    assert results == [[f"{i}/None", "X/None"] for i in range(4)]
    assert [len(c) for c in model.calls] == [2, 2, 2, 2]


def test_a_cancelled_request_is_dropped_and_does_not_block_the_others():
    model = FakeModel()
    model.gate.clear()

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=0)
        await batcher.start()
        try:
            first = batcher.submit(["first"], SearchOptions())
            while not model.entered.is_set():  # the worker is now stuck in the model
                await asyncio.sleep(0.005)
            gone = batcher.submit(["gone"], SearchOptions())
            kept = batcher.submit(["kept"], SearchOptions())
            gone.cancel()
            model.gate.set()
            return await first, await kept, batcher.stats
        finally:
            await batcher.stop()

    first, kept, stats = run(main())
    assert first == ["FIRST/None"] and kept == ["KEPT/None"]
    assert all("gone" not in call for call in model.calls)
    assert stats.dropped == 1


def test_a_model_error_fails_only_its_batch():
    model = FakeModel()

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=0)
        await batcher.start()
        try:
            with pytest.raises(ValueError, match="model failure"):
                await batcher.translate(["boom"], SearchOptions())
            return await batcher.translate(["fine"], SearchOptions())
        finally:
            await batcher.stop()

    assert run(main()) == ["FINE/None"]


def test_stop_fails_waiting_requests_and_submit_needs_a_running_batcher():
    model = FakeModel()
    model.gate.clear()

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=0)
        with pytest.raises(RuntimeError):
            batcher.submit(["x"], SearchOptions())
        await batcher.start()
        busy = batcher.submit(["busy"], SearchOptions())
        while not model.entered.is_set():
            await asyncio.sleep(0.005)
        waiting = batcher.submit(["waiting"], SearchOptions())
        model.gate.set()
        await batcher.stop()
        return busy, waiting

    busy, waiting = run(main())
    assert busy.done() and waiting.done()
    assert isinstance(waiting.exception(), RuntimeError)


# -- several workers -----------------------------------------------------------------------

class OverlapModel:
    """Sleeps in every call and records how many calls ran at once."""

    def __init__(self, delay: float) -> None:
        self.delay, self.lock = delay, threading.Lock()
        self.inside = self.most = 0
        self.calls: List[List[str]] = []

    def __call__(self, lines: List[str], options: SearchOptions) -> List[str]:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self.calls.append(list(lines))
        time.sleep(self.delay)
        with self.lock:
            self.inside -= 1
        return [line.upper() for line in lines]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_translate_that_many_batches_at_once_each_job_its_own_results(workers):
    model = OverlapModel(0.2)

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=1, max_batch_sentences=2, workers=workers)
        await batcher.start()
        try:
            jobs = [batcher.translate([f"a{i}", f"b{i}"], SearchOptions()) for i in range(6)]
            start = time.monotonic()
            results = await asyncio.gather(*jobs)
            return results, time.monotonic() - start
        finally:
            await batcher.stop()

    results, seconds = run(main())
    assert results == [[f"A{i}", f"B{i}"] for i in range(6)]
    assert len(model.calls) == 6 and all(len(c) == 2 for c in model.calls)  # one full batch per job
    assert model.most == workers
    assert seconds >= 0.2 * 6 / workers - 0.05


def test_with_several_workers_one_collects_at_a_time_so_batches_still_fill():
    """Requests arriving together at idle workers share one batch rather than being split
    between workers collecting at once; while that batch translates, the next worker collects
    the requests arriving after it."""
    model = OverlapModel(0.3)

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=100, workers=3)
        await batcher.start()
        try:
            await asyncio.sleep(0.05)  # every worker idle
            first = [batcher.submit([f"a{i}"], SearchOptions()) for i in range(6)]
            await asyncio.sleep(0.2)  # that batch is with the model now
            rest = [batcher.submit([f"b{i}"], SearchOptions()) for i in range(4)]
            return await asyncio.gather(*first, *rest)
        finally:
            await batcher.stop()

    results = run(main())
    assert results == [[f"A{i}"] for i in range(6)] + [[f"B{i}"] for i in range(4)]
    assert [len(c) for c in model.calls] == [6, 4]
    assert model.most == 2


def test_close_with_several_batches_in_progress_lets_them_finish_and_rejects_the_waiting():
    from rnmt.serve.batcher import ShuttingDown

    model = OverlapModel(0.3)

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=1, max_batch_sentences=1, workers=2)
        await batcher.start()
        try:
            jobs = [batcher.submit([f"l{i}"], SearchOptions()) for i in range(4)]
            await asyncio.sleep(0.1)  # two batches with the model, two waiting
            rejected = batcher.close(grace=5)
            outcomes = await asyncio.gather(*jobs, return_exceptions=True)
            return rejected, outcomes
        finally:
            await batcher.stop()

    rejected, outcomes = run(main())
    assert rejected == 2
    assert outcomes[:2] == [["L0"], ["L1"]]
    assert all(isinstance(o, ShuttingDown) for o in outcomes[2:])
