"""Dynamic batching: concurrent requests are translated together by the model workers.

Requests are put on an asyncio queue as jobs (lines, search options, future). A worker
task takes the first job, keeps collecting jobs with the same search options for at most
``max_wait_ms`` or until the batch holds ``max_batch_tokens`` source tokens or
``max_batch_sentences`` lines, runs one ``translate`` call on all their lines in a model
thread (so the event loop keeps serving other clients) and hands every job its share of
the results. Jobs with different options wait for the next batch; jobs whose client has
gone away are dropped without being translated.

With ``workers`` > 1 that many batches are translated at once, each on its own model
thread (for a translate function that may be called from several threads, as the runtime's
is): one worker collects a batch at a time, so batches fill as they would with one, and
the next collects while the others translate.

With ``batching=False`` the worker serves one request at a time (the baseline the load
benchmark compares against).

Bounds (docs/serving.md): at most ``max_queue`` requests wait (`QueueFull` beyond); every
job has a deadline, and the search of a batch stops as soon as every job in it has expired
or been abandoned (the model thread does not go on working for nobody); a batch that fails
is retried one job at a time, so one poisoned request fails alone; `close` rejects the
waiting jobs at once and gives the batch in progress ``grace`` seconds.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence


@dataclass(frozen=True)
class SearchOptions:
    """The options that must be equal for two requests to share a batch."""

    beam: Optional[int] = None
    alpha: Optional[float] = None
    coverage: Optional[float] = None
    nbest: Optional[int] = None
    no_repeat_ngram: Optional[int] = None
    min_output_tokens: Optional[int] = None
    return_alignment: bool = False
    constrained: bool = False  # the constrained search costs more: such requests batch together


class QueueFull(Exception):
    """The queue holds ``max_queue`` requests already."""


class ShuttingDown(RuntimeError):
    """The server is stopping: the request was not (or no longer) translated."""


class Expired(Exception):
    """The request's deadline passed before its translation was done."""


@dataclass
class BatcherStats:
    requests: int = 0  # requests translated
    dropped: int = 0  # requests whose client left before translation
    rejected: int = 0  # requests refused because the queue was full
    expired: int = 0  # requests whose deadline passed (their search was stopped)
    failed: int = 0  # requests whose translation raised (alone, after a retry)
    retried_batches: int = 0  # failed batches retried one request at a time
    batches: int = 0  # translate calls
    sentences: int = 0
    max_batch_requests: int = 0
    busy_seconds: float = 0.0

    def as_dict(self) -> Dict[str, Any]:
        return {
            "requests": self.requests, "dropped": self.dropped, "batches": self.batches,
            "sentences": self.sentences, "max_batch_requests": self.max_batch_requests,
            "mean_batch_requests": round(self.requests / self.batches, 3) if self.batches else 0.0,
            "busy_seconds": round(self.busy_seconds, 3), "rejected": self.rejected, "expired": self.expired,
            "failed": self.failed, "retried_batches": self.retried_batches,
        }


@dataclass
class _Job:
    lines: List[str]
    options: SearchOptions
    cost: int
    future: asyncio.Future
    constraints: Optional[List[List[str]]] = None  # per line, with options.constrained
    enqueued: float = field(default_factory=time.monotonic)
    deadline: float = float("inf")  # time.monotonic() after which nobody waits for the result

    def abandoned(self, now: float) -> bool:
        # Read from the model thread: done() is a plain attribute read, a stale answer
        # only delays the stop by one search step.
        return self.future.done() or now >= self.deadline


# translate(lines, options) -> one result per line
TranslateFn = Callable[[List[str], SearchOptions], List[Any]]


class _Waiting:
    """The jobs waiting for the model: the queue they arrive on and the ones held back for a
    later batch (other options, or over the budget), and how a batch is made of them."""

    def __init__(self, stats: BatcherStats, batching: bool, max_wait: float, max_batch_tokens: int,
                 max_batch_sentences: int) -> None:
        self.stats, self.batching, self.max_wait = stats, batching, max_wait
        self.max_batch_tokens, self.max_batch_sentences = max_batch_tokens, max_batch_sentences
        self.queue: Optional[asyncio.Queue] = None
        self.held: Deque[_Job] = collections.deque()  # taken from the queue, waiting for their batch

    def __len__(self) -> int:
        return len(self.held) + (self.queue.qsize() if self.queue is not None else 0)

    def take_all(self) -> List[_Job]:
        """Every waiting job, held or queued; none waits after."""
        jobs = list(self.held)
        self.held.clear()
        while self.queue is not None and not self.queue.empty():
            jobs.append(self.queue.get_nowait())
        return jobs

    async def next_job(self, timeout: Optional[float]) -> Optional[_Job]:
        """The next job still wanted by its client; None when ``timeout`` passes first."""
        assert self.queue is not None
        while True:
            if timeout is None:
                job = await self.queue.get()
            elif timeout <= 0:
                if self.queue.empty():
                    return None
                job = self.queue.get_nowait()
            else:
                try:
                    job = await asyncio.wait_for(self.queue.get(), timeout)
                except TimeoutError:
                    return None
            if job.future.done():  # cancelled by a client that went away
                self.stats.dropped += 1
                continue
            return job

    def _take_held(self) -> Optional[_Job]:
        while self.held:
            job = self.held.popleft()
            if not job.future.done():
                return job
            self.stats.dropped += 1
        return None

    async def batch(self) -> List[_Job]:
        """The next batch: the oldest job, then the held and the arriving jobs with its options
        that fit the budget, for at most ``max_wait`` seconds."""
        first = self._take_held() or await self.next_job(None)
        assert first is not None
        batch = _Batch(first, self.max_batch_tokens, self.max_batch_sentences)
        if not self.batching:
            return batch.jobs
        still_held: Deque[_Job] = collections.deque()  # held jobs come first (they are older)
        while self.held:
            job = self.held.popleft()
            if job.future.done():
                self.stats.dropped += 1
            elif not batch.add(job):
                still_held.append(job)
        self.held = still_held
        deadline = time.monotonic() + self.max_wait
        while not batch.full:
            job = await self.next_job(deadline - time.monotonic())
            if job is None:
                break
            if not batch.add(job):
                self.held.append(job)
                if job.options == first.options:  # compatible but over budget: the batch is full
                    break
        return batch.jobs


class _Batch:
    """Jobs with the first one's options, within the token and sentence budgets."""

    def __init__(self, first: _Job, max_tokens: int, max_sentences: int) -> None:
        self.jobs, self.tokens, self.sentences = [first], first.cost, len(first.lines)
        self.max_tokens, self.max_sentences = max_tokens, max_sentences

    @property
    def full(self) -> bool:
        return self.tokens >= self.max_tokens or self.sentences >= self.max_sentences

    def add(self, job: _Job) -> bool:
        """Take ``job`` if it has the batch's options and fits; whether it did."""
        if (job.options != self.jobs[0].options or self.tokens + job.cost > self.max_tokens
                or self.sentences + len(job.lines) > self.max_sentences):
            return False
        self.jobs.append(job)
        self.tokens, self.sentences = self.tokens + job.cost, self.sentences + len(job.lines)
        return True


class DynamicBatcher:
    def __init__(self, translate: TranslateFn, *, batching: bool = True, max_wait_ms: float = 5.0,
                 max_batch_tokens: int = 4000, max_batch_sentences: int = 64,
                 thread_init: Optional[Callable[[], None]] = None, max_queue: int = 0, workers: int = 1) -> None:
        if max_wait_ms < 0 or max_batch_tokens < 1 or max_batch_sentences < 1 or max_queue < 0 or workers < 1:
            raise ValueError("max_wait_ms and max_queue must be >= 0 and the batch budgets and workers >= 1")
        self._translate = translate
        self.max_queue = max_queue  # 0: unbounded
        self.closing = False
        self._stop_at = float("inf")  # closing: when the batch in progress must give up
        self.batching = batching
        self.max_wait = max_wait_ms / 1000.0 if batching else 0.0
        self.max_batch_tokens = max_batch_tokens
        self.max_batch_sentences = max_batch_sentences
        self._thread_init = thread_init
        self.stats = BatcherStats()
        self._waiting = _Waiting(self.stats, batching, self.max_wait, max_batch_tokens, max_batch_sentences)
        self.workers = workers
        self._tasks: List[asyncio.Task] = []
        self._collecting: Optional[asyncio.Lock] = None  # one worker collects a batch at a time
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None

    # -- life cycle ---------------------------------------------------------------------

    async def start(self) -> None:
        if self._tasks:
            return
        self._waiting.queue = asyncio.Queue()
        self._collecting = asyncio.Lock()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.workers, thread_name_prefix="rnmt-model", initializer=self._thread_init)
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name=f"rnmt-batcher-{k}") for k in range(self.workers)]

    async def stop(self) -> None:
        if not self._tasks:
            return
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
        self._tasks = []
        for job in self._waiting.take_all():
            if not job.future.done():
                job.future.set_exception(ShuttingDown("the server is shutting down"))
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    @property
    def running(self) -> bool:
        return any(not task.done() for task in self._tasks)

    @property
    def _queue(self) -> Optional[asyncio.Queue]:
        """The queue requests arrive on (tests watch it to see a job wait)."""
        return self._waiting.queue

    @property
    def pending(self) -> int:
        """Requests waiting for the model."""
        return len(self._waiting)

    # -- submitting ---------------------------------------------------------------------

    def submit(self, lines: Sequence[str], options: SearchOptions, cost: Optional[int] = None,
               timeout: Optional[float] = None,
               constraints: Optional[Sequence[Sequence[str]]] = None) -> asyncio.Future:
        """Queue ``lines``; the returned future resolves to one result per line.

        Cancelling the future (e.g. because the client disconnected) drops the job if it has
        not reached the model yet, and stops its search if it has (once every job of its
        batch is gone). After ``timeout`` seconds the future fails with `Expired`.
        Raises `QueueFull` when ``max_queue`` requests wait already, `ShuttingDown` after
        `close`. ``constraints`` (one list of phrases per line) go with
        ``options.constrained`` and reach the translate function as its ``constraints``.
        """
        if self.closing:
            raise ShuttingDown("the server is shutting down")
        if not self.running or self._waiting.queue is None:
            raise RuntimeError("the batcher is not running")
        if self.max_queue and self.pending >= self.max_queue:
            self.stats.rejected += 1
            raise QueueFull(f"{self.pending} requests are waiting already (the limit is {self.max_queue})")
        future = asyncio.get_running_loop().create_future()
        lines = list(lines)
        if cost is None:
            cost = sum(len(line.split()) + 1 for line in lines)
        job = _Job(lines, options, max(1, cost), future,
                   None if constraints is None else [list(c) for c in constraints])
        if timeout is not None:
            job.deadline = job.enqueued + timeout
        self._waiting.queue.put_nowait(job)
        return future

    async def translate(self, lines: Sequence[str], options: SearchOptions, cost: Optional[int] = None,
                        timeout: Optional[float] = None) -> List[Any]:
        return await self.submit(lines, options, cost, timeout)

    def close(self, grace: float = 5.0) -> int:
        """Stop taking requests: the waiting ones fail with `ShuttingDown` now, the batch in
        progress may run ``grace`` more seconds. Returns the number of rejected jobs."""
        self.closing = True
        self._stop_at = time.monotonic() + grace
        rejected = 0
        for job in self._waiting.take_all():
            if not job.future.done():
                job.future.set_exception(ShuttingDown("the server is shutting down; the request was not translated"))
                rejected += 1
        return rejected

    # -- the worker ---------------------------------------------------------------------

    def _call(self, jobs: List[_Job]) -> List[Any]:
        """Translate the lines of ``jobs`` in the model thread, stopping when nobody waits."""
        lines = [line for job in jobs for line in job.lines]
        extra: Dict[str, Any] = {}
        if jobs[0].options.constrained:
            extra["constraints"] = [c for job in jobs for c in (job.constraints or [[] for _ in job.lines])]
        # A translate function that takes ``should_stop`` can abandon a search midway.
        if "should_stop" not in inspect.signature(self._translate).parameters:
            return self._translate(lines, jobs[0].options, **extra)

        def should_stop() -> bool:
            now = time.monotonic()
            return now >= self._stop_at or all(job.abandoned(now) for job in jobs)

        return self._translate(lines, jobs[0].options, should_stop=should_stop, **extra)

    def _fail(self, job: _Job, exc: BaseException) -> None:
        if job.future.done():
            self.stats.dropped += 1
            return
        if time.monotonic() >= self._stop_at:
            exc = ShuttingDown("the server shut down before the translation finished")
        elif time.monotonic() >= job.deadline:
            exc = Expired("the translation did not finish before the request's deadline")
            self.stats.expired += 1
        else:
            self.stats.failed += 1
        job.future.set_exception(exc)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._collecting is not None
        while True:
            async with self._collecting:
                batch = await self._waiting.batch()
            now = time.monotonic()
            for job in batch:
                if not job.future.done() and now >= job.deadline:
                    self._fail(job, Expired())
            batch = [job for job in batch if not job.future.done()]
            if not batch:
                continue
            lines = [line for job in batch for line in job.lines]
            start = time.perf_counter()
            try:
                results = await loop.run_in_executor(self._executor, self._call, batch)
            except asyncio.CancelledError:
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(ShuttingDown("the server is shutting down"))
                raise
            except Exception as exc:
                self.stats.busy_seconds += time.perf_counter() - start
                if len(batch) == 1:
                    self._fail(batch[0], exc)
                    continue
                # One request may have poisoned the batch: retry each alone, so only the
                # one that fails by itself gets the error.
                await self._retry_alone(batch)
                continue
            self.stats.busy_seconds += time.perf_counter() - start
            self.stats.batches += 1
            self.stats.sentences += len(lines)
            self.stats.max_batch_requests = max(self.stats.max_batch_requests, len(batch))
            self._deliver(batch, results)

    async def _retry_alone(self, batch: List[_Job]) -> None:
        loop = asyncio.get_running_loop()
        self.stats.retried_batches += 1
        for job in batch:
            if job.future.done():
                continue
            t0 = time.perf_counter()
            try:
                share = await loop.run_in_executor(self._executor, self._call, [job])
            except asyncio.CancelledError:
                for rest in batch:
                    if not rest.future.done():
                        rest.future.set_exception(ShuttingDown("the server is shutting down"))
                raise
            except Exception as alone:
                self._fail(job, alone)
            else:
                self._deliver([job], share)
            finally:
                self.stats.busy_seconds += time.perf_counter() - t0

    def _deliver(self, batch: List[_Job], results: List[Any]) -> None:
        pos = 0
        for job in batch:
            share = results[pos:pos + len(job.lines)]
            pos += len(job.lines)
            if job.future.done():
                self.stats.dropped += 1
            else:
                job.future.set_result(share)
                self.stats.requests += 1
