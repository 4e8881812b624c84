"""The cycle collector's schedule in a long-running server.

Python's full collections scan every tracked object, and the server holds hundreds of thousands
(each reservation is some fifty): with the plan growing by hundreds of reservations a second, a full
collection over them stalls every request for 0.2-0.5 s. What the server keeps is not cyclic (the
plans, the stored objects and the live cache are trees of containers; the one cycle, a finished
session the cache keeps until the next one, is broken by `Session.release` in the loop; the service
tests audit the write paths: submit, update, delete, apply, the ticks, over HTTP too), so what it
drops is freed by reference counting. Between two ticks the server therefore collects what
it made since the last tick (a full collection over the objects not yet frozen: a tick's worth, so
the cyclic garbage made meanwhile is freed before it could be frozen) and freezes everything alive
out of later collections (`gc.freeze`). Python's own collections then scan only what is younger than
the last tick.

The full collection over the frozen objects too is kept as a safety net, for cycles some path not
covered by the tests might leave behind after they were frozen: it runs once the objects frozen
since the last one number at least `GROWTH` times those it left alive (counted exactly before it
runs), and only when the writer ran
nothing but the tick since the last settle (no request was waiting for it), or when `MAX_INTERVAL`
seconds passed. The measurements are in benchmarks/README.md (issue 18, fourth and sixth sessions).
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections import Counter
from collections.abc import Callable

log = logging.getLogger(__name__)

#: set (to anything) to have the server log, when it stops, the cyclic garbage it had frozen
AUDIT_ENV = "APPORTION_GC_AUDIT"

#: a full collection over the frozen objects only once those frozen since the last one number this
#: share of what it left alive (Python's own rule for its oldest generation is a quarter)
GROWTH = 0.25
#: ... when the server is idle, or at the latest this many seconds after the last one (s)
MAX_INTERVAL = 600.0
#: writer jobs besides the ticks' that may run between two settles with the server still idle (the
#: server counts the writer's jobs less the loop's, `SchedulingLoop.jobs_run`)
TICK_JOBS = 0


class Collector:
    """Collects and freezes what the server made between ticks; collects everything only when idle.

    The frozen objects are counted as they are frozen (the objects the collections still track,
    `gc.get_objects()`, a tick's worth), never by `gc.get_freeze_count()`, which walks the whole
    frozen list (13 ms for 300,000 objects on an idle core). Frozen objects freed by reference
    counting stay in the count until the next full collection counts again, so the count is an upper
    bound of what was frozen since then and still lives; it is counted again exactly (walking the
    frozen list) only when the bound says a collection is due."""

    def __init__(self, writer_jobs: Callable[[], int] = lambda: 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        #: the writer's jobs run so far that were not a tick's (the idle test), and the clock of
        #: `MAX_INTERVAL`
        self.writer_jobs = writer_jobs
        self.clock = clock
        #: objects alive after the last full collection, and frozen since (an upper bound)
        self.alive_after_full = 0
        self.frozen = 0
        #: full collections over the frozen objects run (the status reports it)
        self.full_collections = 0
        #: every collection's pause, Python's own included (ms): the longest, their sum, and the
        #: longest in CPU time (the collecting thread's, which other processes do not inflate)
        self.max_pause_ms = 0.0
        self.pause_ms = 0.0
        self.max_pause_cpu_ms = 0.0
        self.running = False
        self._jobs_seen = 0
        self._last_full = 0.0
        self._started_at = self._started_cpu = 0.0

    def start(self) -> None:
        """Once the state is loaded: collect, then freeze everything (modules, app, plans)."""
        self._full()
        gc.callbacks.append(self._timed)
        self._jobs_seen = self.writer_jobs()
        self.running = True

    def collect_young(self) -> None:
        """Between a tick's writer jobs: collect what was made since the last collection, then freeze
        what is alive. The same as a settle's first half, at a point as safe (no session is alive
        unreleased between the jobs; a request's job may run meanwhile, as it may beside a settle), so
        that each collection scans only what the last few milliseconds made, not a tick's and a
        second of requests' objects at once while every request waits."""
        if not self.running:
            return
        gc.collect()
        self.frozen += len(gc.get_objects())
        gc.freeze()

    def settle(self) -> None:
        """Between ticks: collect what was made since the last collection, freeze what is alive, and
        collect everything if it is due (`GROWTH`, when idle or after `MAX_INTERVAL`)."""
        if not self.running:
            return
        self.collect_young()
        jobs = self.writer_jobs()
        idle = jobs - self._jobs_seen <= TICK_JOBS
        self._jobs_seen = jobs
        if not (self._grown() and (idle or self.clock() - self._last_full >= MAX_INTERVAL)):
            return
        # the count only grows, though most of what was frozen is freed by reference counting (a
        # session's tasks, the pods of a loop at 10,000 pods): count what is frozen now (a walk of the
        # frozen list, a few tens of ms at a million objects) before deciding on a collection of all
        self.frozen = gc.get_freeze_count()
        if self._grown():
            gc.unfreeze()
            self._full()
            self.full_collections += 1

    def _grown(self) -> bool:
        return self.frozen - self.alive_after_full >= GROWTH * self.alive_after_full

    def _full(self) -> None:
        gc.collect()
        gc.freeze()
        self.alive_after_full = self.frozen = gc.get_freeze_count()
        self._last_full = self.clock()

    def _timed(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            self._started_at, self._started_cpu = time.perf_counter(), time.thread_time()
        else:
            ms = (time.perf_counter() - self._started_at) * 1000
            self.pause_ms += ms
            self.max_pause_ms = max(self.max_pause_ms, ms)
            self.max_pause_cpu_ms = max(self.max_pause_cpu_ms, (time.thread_time() - self._started_cpu) * 1000)

    def audit(self) -> Counter[str]:
        """The frozen objects that became cyclic garbage (what only a full collection over everything
        frees), counted by type; they are freed, and what is alive is frozen again. What was made
        since the last settle is collected first: it is not frozen, so not leaked."""
        gc.collect()
        gc.unfreeze()
        flags, before = gc.get_debug(), len(gc.garbage)
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
        finally:
            gc.set_debug(flags)
        found = Counter(type(o).__qualname__ for o in gc.garbage[before:])
        del gc.garbage[before:]
        gc.collect()
        gc.freeze()
        return found

    def stop(self) -> None:
        """At shutdown: the frozen objects go back to the collector (with `APPORTION_GC_AUDIT` set,
        after logging the cyclic garbage among them)."""
        if self.running:
            gc.callbacks.remove(self._timed)
            if os.environ.get(AUDIT_ENV):
                found = self.audit()
                log.warning("cycle collector audit: %d frozen objects were cyclic garbage%s", sum(found.values()),
                            "".join(f", {n} {kind}" for kind, n in found.most_common(10)))
            gc.unfreeze()
            self.running = False
