"""One writer, many readers, and group commit.

Every change to the plans and the cluster objects (reservation submit/update/delete, apply, delete,
a scheduling-loop tick) runs as a job on one dedicated thread, in arrival order, and holds the write
side of a readers-writer lock while it runs. Readers (list, get, snapshot, metrics) take the read
side in the server's thread pool, so they never see a job half-done and never wait for each other.
Acceptance is decided by the job, on the state left by every job before it: it cannot depend on a
race between requests, only on their order of arrival at the writer.

Group commit: the writer takes every job waiting when it starts (up to `max_batch`), runs them one
after the other inside one database transaction, commits it, and only then sends their answers, as a
database's group commit does: every acknowledged write is committed before its answer leaves, and a
burst of requests costs one commit instead of one each. If a job fails (other than with one of the
`settled` exceptions, which a job raises only when what it changed so far in memory and in the
transaction agree, e.g. a refused ACL before anything) or the commit fails, the transaction is rolled
back, memory is reloaded from the database (`recover`), and the batch's jobs run again one by one,
each in its own transaction, as if they had arrived alone: no answer had been sent, so each is
decided again on the state the jobs before it left.

Background jobs (`run(..., idle=True)`, the scheduling loop's pieces) wait until no other job is
queued, then run alone: a request that arrives meanwhile goes first, so a tick's work fills the
writer's idle moments instead of lining up with requests behind it. One that waited `max_defer`
seconds runs before the jobs queued after it (never before one queued earlier: its mark in the queue
says when every earlier job was taken), so a busy writer still ticks.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


class RWLock:
    """Many readers or one writer; a waiting writer blocks new readers (no writer starvation)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        """Hold the read side."""
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        """Hold the write side."""
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


#: a job's outcome: (True, its value) or (False, the exception it raised)
Outcome = tuple[bool, Any]
#: where an outcome goes: a thread's Future, or an asyncio future with its event loop
Reply = Future[Any] | tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]"]
#: a queued job: the function, where its outcome goes, and whether it runs alone
Job = tuple[Callable[[], Any], Reply, bool]


class _Background:
    """A background job waiting in the writer's deque. Its mark, queued when it is, wakes the writer
    and, once taken from the queue, says that every job queued before it has been taken (`reached`)."""

    __slots__ = ("job", "queued", "reached")

    def __init__(self, job: Job, queued: float) -> None:
        self.job = job
        self.queued = queued
        self.reached = False


def _settle(replies: list[tuple[asyncio.Future[Any], Outcome]]) -> None:
    """On an event loop: hand each outcome to its awaiting request (one loop wake-up per batch)."""
    for fut, (ok, value) in replies:
        if fut.cancelled():
            continue
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)


class Writer:
    """The single thread that runs every state-changing job, in order, committing them in groups.

    `transaction` opens the database transaction the jobs of a batch join (None: jobs are not
    grouped, e.g. without a database); `recover` puts memory back to what the database holds after a
    failed batch; `settled` are the exceptions that end a job without undoing the batch; the writer
    thread runs inside `hold` (the store's: its transactions keep one connection)."""

    def __init__(self, lock: RWLock, transaction: Callable[[], AbstractContextManager[Any]] | None = None,
                 recover: Callable[[], None] | None = None, settled: tuple[type[BaseException], ...] = (),
                 max_batch: int = 256, hold: Callable[[], AbstractContextManager[Any]] | None = None,
                 max_defer: float = 0.05) -> None:
        self.lock = lock
        self.transaction = transaction or contextlib.nullcontext
        self.hold = hold or contextlib.nullcontext
        self.recover = recover or (lambda: None)
        self.settled = settled
        self.max_batch = max_batch
        #: how long a background job lets others go first (s)
        self.max_defer = max_defer
        #: batches run and jobs run (a test and the benchmark read how well jobs were grouped)
        self.batches = 0
        self.jobs_run = 0
        self._jobs: queue.SimpleQueue[Job | _Background | None] = queue.SimpleQueue()
        #: background jobs waiting for an idle moment, with when each was queued (time.monotonic)
        self._idle: deque[_Background] = deque()
        #: a job that runs alone, taken from the queue while gathering a batch: it opens the next one
        self._held: Job | None = None
        self._thread = threading.Thread(target=self._run, name="apportion-writer", daemon=True)
        self._thread.start()

    @property
    def native_id(self) -> int | None:
        """The writer thread's id in the operating system (a benchmark reads its CPU from /proc)."""
        return self._thread.native_id

    def _run(self) -> None:
        with self.hold():
            self._serve()

    def _next(self) -> Job | None:
        """The job to run next: the held one; else a background job that waited its `max_defer` and
        whose mark was taken (nothing queued before it waits); else the next queued job; else (nothing
        queued) a background job; else wait for a job."""
        held = self._held
        if held is not None:
            self._held = None
            return held
        idle = self._idle
        while True:
            if idle and idle[0].reached and time.monotonic() - idle[0].queued >= self.max_defer:
                return idle.popleft().job
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                if idle:
                    return idle.popleft().job
                item = self._jobs.get()
            if isinstance(item, _Background):
                item.reached = True
            else:
                return item

    def _serve(self) -> None:
        while True:
            item = self._next()
            if item is None:
                self._finish_idle()
                return
            batch = [item]
            stop = False
            while not item[2] and len(batch) < self.max_batch:
                try:
                    nxt = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if isinstance(nxt, _Background):
                    nxt.reached = True
                    if time.monotonic() - nxt.queued >= self.max_defer:
                        break  # an overdue background job goes before the jobs queued after it
                    continue
                if nxt is None:
                    stop = True
                    break
                if nxt[2]:  # a job that runs alone opens the next round
                    self._held = nxt
                    break
                batch.append(nxt)
            with self.lock.write():
                outcomes = self._run_batch([fn for fn, _, _ in batch])
            self.batches += 1
            self.jobs_run += len(batch)
            self._deliver([reply for _, reply, _ in batch], outcomes)
            if stop:
                self._finish_idle()
                return

    def _finish_idle(self) -> None:
        """At the stop: the background jobs queued before it run, as the other jobs did."""
        while self._idle:
            fn, reply, _ = self._idle.popleft().job
            with self.lock.write():
                outcome = self._alone(fn)
            self.batches += 1
            self.jobs_run += 1
            self._deliver([reply], [outcome])

    def _call(self, fn: Callable[[], Any]) -> Outcome:
        """Run one job; a settled exception is its outcome, any other propagates."""
        try:
            return True, fn()
        except self.settled as e:
            return False, e

    def _run_batch(self, jobs: list[Callable[[], Any]]) -> list[Outcome]:
        if len(jobs) > 1:
            try:
                with self.transaction():
                    return [self._call(fn) for fn in jobs]
            except BaseException:  # noqa: BLE001 - a job or the commit failed: every job runs again alone
                self.recover()
        return [self._alone(fn) for fn in jobs]

    def _alone(self, fn: Callable[[], Any]) -> Outcome:
        """Run one job in its own transaction. No frame here keeps an outcome once it returns: a
        job's exception holds, through its traceback, the frames it was raised under, and one of
        them holding the exception back is a cycle only the cycle collector frees (a server that
        froze it meanwhile never does, see collector.py)."""
        try:
            # the outcome counts once the commit succeeded: a commit that fails after the job
            # returned is the job's failure (it was once a second outcome, which ended the thread)
            with self.transaction():
                return self._call(fn)
        except BaseException as e:  # noqa: BLE001 - handed to the caller, who answers 500
            self.recover()
            return False, e

    @staticmethod
    def _deliver(replies: list[Reply], outcomes: list[Outcome]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Outcome]]] = {}
        for reply, outcome in zip(replies, outcomes, strict=True):
            if isinstance(reply, Future):
                if reply.set_running_or_notify_cancel():
                    if outcome[0]:
                        reply.set_result(outcome[1])
                    else:
                        reply.set_exception(outcome[1])
            else:
                by_loop.setdefault(reply[0], []).append((reply[1], outcome))
        for loop, replies_of_loop in by_loop.items():
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, replies_of_loop)

    def submit(self, fn: Callable[[], T], alone: bool = False) -> Future[T]:
        """Queue a job; its future resolves after the job and its commit. `alone`: the job is never
        grouped with others (a job with effects outside memory and the database, which a failed batch
        must not run twice, e.g. a tick that starts tasks on a real backend)."""
        fut: Future[T] = Future()
        self._jobs.put((fn, fut, alone))
        return fut

    async def run(self, fn: Callable[[], T], alone: bool = False, idle: bool = False) -> T:
        """Run a job on the writer and wait for it (and its commit) without blocking the event loop.
        `idle`: a background job (see the module), which always runs alone."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] | None = loop.create_future()
        assert fut is not None
        if idle:
            # appended before its mark is queued, so the writer finds it when it takes the mark;
            # not kept by this frame, which would hold the future through it (see below)
            entry = _Background((fn, (loop, fut), True), time.monotonic())
            self._idle.append(entry)
            self._jobs.put(entry)
            del entry
        else:
            self._jobs.put((fn, (loop, fut), alone))
        try:
            return await fut
        finally:
            # a job's exception raised here holds this frame in its traceback, and the future holds
            # the exception: without this the frame held the future, a cycle only the cycle
            # collector frees (a server that froze it meanwhile never does, see collector.py)
            fut = None

    def stop(self) -> None:
        """Finish the queued jobs and end the thread."""
        self._jobs.put(None)
        self._thread.join(timeout=30)
