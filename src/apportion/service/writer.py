"""One writer, many readers.

Every change to the plans and the cluster objects (reservation submit/update/delete, apply, delete,
a scheduling-loop tick) runs as a job on one dedicated thread, in arrival order, and holds the write
side of a readers-writer lock while it runs; a job commits its database transaction before its result
goes back, so an answer is sent only for a committed change. Readers (list, get, snapshot, metrics)
take the read side in the server's thread pool, so they never see a job half-done and never wait for
each other. Acceptance is decided by the job, on the state left by every job before it: it cannot
depend on a race between requests, only on their order of arrival at the writer.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
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


class Writer:
    """The single thread that runs every state-changing job, in order."""

    def __init__(self, lock: RWLock) -> None:
        self.lock = lock
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="apportion-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            fn, fut = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                with self.lock.write():
                    result = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the caller, who answers 500
                fut.set_exception(e)
            else:
                fut.set_result(result)

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Queue a job; its future resolves after the job (and its commit) finished."""
        fut: Future[T] = Future()
        self._jobs.put((fn, fut))
        return fut

    async def run(self, fn: Callable[[], T]) -> T:
        """Run a job on the writer and wait for it without blocking the event loop."""
        return await asyncio.wrap_future(self.submit(fn))

    def stop(self) -> None:
        """Finish the queued jobs and end the thread."""
        self._jobs.put(None)
        self._thread.join(timeout=30)
