"""The batcher under faults: expired requests, a bounded queue, a poisoned request, closing."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from rnmt.search.beam import SearchStopped
from rnmt.serve.batcher import DynamicBatcher, Expired, QueueFull, SearchOptions, ShuttingDown


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_an_expired_request_stops_its_search_and_frees_the_model_thread():
    steps = []

    def endless(lines, options, should_stop):  # a search that only ends when told to
        while not should_stop():
            steps.append(1)
            time.sleep(0.01)
        raise SearchStopped("stopped")

    async def main():
        batcher = DynamicBatcher(endless, max_wait_ms=0)
        await batcher.start()
        try:
            t0 = time.monotonic()
            with pytest.raises(Expired):
                await batcher.translate(["x"], SearchOptions(), timeout=0.3)
            return time.monotonic() - t0, batcher.stats.expired
        finally:
            await batcher.stop()

    elapsed, expired = run(main())
    assert elapsed < 2 and expired == 1
    n = len(steps)
    time.sleep(0.1)
    assert len(steps) == n  # nothing runs on after the deadline


# -- queue bound, poisoned batch, worker down --------------------------------------------

def test_the_queue_is_bounded():
    gate = threading.Event()

    def held(lines, options):
        assert gate.wait(5)
        return lines

    async def main():
        batcher = DynamicBatcher(held, max_wait_ms=0, max_queue=2)
        await batcher.start()
        try:
            first = batcher.submit(["a"], SearchOptions())
            await asyncio.sleep(0.05)  # the worker takes it: the queue is empty again
            waiting = [batcher.submit([w], SearchOptions()) for w in ("b", "c")]
            with pytest.raises(QueueFull, match="the limit is 2"):
                batcher.submit(["d"], SearchOptions())
            gate.set()
            return await first, await asyncio.gather(*waiting), batcher.stats.rejected
        finally:
            await batcher.stop()

    first, rest, rejected = run(main())
    assert first == ["a"] and rest == [["b"], ["c"]] and rejected == 1


def test_a_poisoned_request_fails_alone_and_its_batch_mates_succeed():
    calls = []

    def model(lines, options):
        calls.append(list(lines))
        if "poison" in lines:
            raise ValueError("cannot translate this")
        return [line.upper() for line in lines]

    async def main():
        batcher = DynamicBatcher(model, max_wait_ms=50)
        await batcher.start()
        try:
            jobs = [batcher.submit([t], SearchOptions()) for t in ("ok1", "poison", "ok2")]
            results = await asyncio.gather(*jobs, return_exceptions=True)
            return results, batcher.stats
        finally:
            await batcher.stop()

    results, stats = run(main())
    assert results[0] == ["OK1"] and results[2] == ["OK2"]
    assert isinstance(results[1], ValueError)
    assert calls[0] == ["ok1", "poison", "ok2"] and stats.retried_batches == 1 and stats.failed == 1


def test_close_rejects_waiting_requests_and_lets_the_running_batch_finish():
    gate, entered = threading.Event(), threading.Event()

    def held(lines, options):
        entered.set()
        assert gate.wait(5)
        return lines

    async def main():
        batcher = DynamicBatcher(held, max_wait_ms=0)
        await batcher.start()
        running = batcher.submit(["running"], SearchOptions())
        while not entered.is_set():
            await asyncio.sleep(0.005)
        waiting = batcher.submit(["waiting"], SearchOptions())
        assert batcher.close(grace=5) == 1
        with pytest.raises(ShuttingDown):
            batcher.submit(["late"], SearchOptions())
        gate.set()
        done = await running
        with pytest.raises(ShuttingDown):
            await waiting
        await batcher.stop()
        return done

    assert run(main()) == ["running"]
