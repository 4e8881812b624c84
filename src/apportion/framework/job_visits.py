"""The jobs the actions must visit: every job but the quiet ones (docs/semantics.md, cluster state K15).

allocate, reclaim and backfill each pass over every job of the session in uid order, and session open
over every job once more for the pending tasks' cycle states. Most jobs of a loaded cluster run whole:
a job that is admitted (not Pending), has no pending, pipelined or pending best-effort task and is
valid (JobValid) is passed over by each of those loops without any effect, except that reclaim lists
its queue. Such a job is *quiet*. The actions visit the other jobs (`busy`), and reclaim takes each
queue's first quiet job (`quiet_firsts`) in place of its visit.

Exact, not approximate: the verdict is taken at open, after the plugins have opened, on the job as the
session holds it; what can make a quiet job visit-worthy later in the session is a move of one of its
tasks (every status change in a session goes through `Session._move`, which `moved` records, or a bind
after one) or a change of its phase (enqueue admits Pending jobs only, which are never quiet; close
comes after the actions). A moved job is visited from then on.

A caller that carries a memo (the simulator, `serve`, `shadow`) carries the verdicts too: a job the
open hands out unchanged (`Session.open_delta`: the last open's object with its task statuses and
phase) keeps the verdict it had, when the validity plugins are the last open's and answer from the
job alone (gang's validity is a function of the task statuses, the phase and the minimums). Under
APPORTION_CHECK_STATE=1 every carried verdict is compared with a fresh one.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from typing import Any

from apportion.cluster.model import (
    GROUP_PENDING,
    PENDING,
    PIPELINED,
    JobInfo,
)
from apportion.errors import InternalError
from apportion.framework.open_parts import OpenDelta
from apportion.lean_dataclass import dataclass
from apportion.state import check

#: the memo's entry: the verdicts of the last open (a `_Held`)
MEMO = "session.job_visits"

#: plugins whose JobValid answer is a function of the job alone (its task statuses, phase and minimums)
JOB_LOCAL_VALIDITY = frozenset({"gang"})

_PENDING = GROUP_PENDING
_TASK_PENDING = PENDING
_PIPELINED = PIPELINED


@dataclass
class _Held:
    """The verdicts of one open, of generation `generation` (framework/open_state.py)."""

    generation: int
    #: the JobValid plugins consulted, in order
    validity: tuple[str, ...]
    #: quiet job uid -> its queue
    quiet: dict[str, str]
    #: queue -> its quiet jobs' uids (never changed once held: a session copies a set before a change)
    by_queue: dict[str, set[str]]
    busy: set[str]
    #: `busy` in uid order (None: not kept)
    order: list[str] | None
    #: the busy jobs with a pipelined task
    piped: set[str]
    #: the busy jobs waiting for enqueue (phase Pending), and the others in uid order (None: not kept)
    waiting: set[str]
    admitted: list[str] | None


class JobVisits:
    """Which jobs of a session are quiet, and which the actions must visit."""

    #: False: every job is visited (the reference the property tests compare with)
    enabled = True
    #: False: `visit` sorts the busy uids at every call (the reference); True: they are kept in uid order
    #: from open to open, each open's changed jobs taken out and put back by bisection
    keep_order = True
    #: False: `pipelined` is every visited job (the reference); True: the busy jobs that held a
    #: pipelined task at open (kept from open to open as `busy` is) and the jobs moved since
    keep_piped = True
    #: False: `visit_admitted` gives None (allocate visits every busy job, the reference); True: the busy
    #: jobs not waiting for enqueue at open are kept in uid order apart from the waiting ones (K52)
    keep_waiting = True

    def __init__(self, jobs: dict[str, JobInfo], job_valid: Callable[[JobInfo], tuple[bool, str]],
                 validity: tuple[str, ...], memo: dict[str, Any] | None, delta: OpenDelta | None,
                 generation: int | None) -> None:
        self.jobs = jobs
        #: jobs a task of which moved in this session (Session._move)
        self.moved: set[str] = set()
        self._valid = job_valid
        #: whether quiet jobs are passed over: only while every validity plugin answers from the job alone
        #: (another one's answer might move with the session's accounting between open and an action)
        self.active = self.enabled and all(name in JOB_LOCAL_VALIDITY for name in validity)
        held = memo.get(MEMO) if memo is not None else None
        carried = (self.active and delta is not None and isinstance(held, _Held) and held.generation == delta.since
                   and held.validity == validity)
        #: quiet job uid -> its queue (judged at open; `moved` says which moved since)
        self.quiet: dict[str, str] = {}
        #: queue -> its quiet jobs' uids
        self.by_queue: dict[str, set[str]] = {}
        #: the other jobs' uids
        self.busy: set[str] = set()
        #: `busy` in uid order, kept with it (None: `visit` sorts)
        self.order: list[str] | None = None
        #: the busy jobs with a pipelined task at open (judged with `busy`)
        self.piped: set[str] = set()
        #: the busy jobs whose phase was Pending (waiting for enqueue) when judged, and the other busy
        #: jobs in uid order (None: not kept; `visit_admitted`)
        self.waiting: set[str] = set()
        self.admitted: list[str] | None = None
        self._copied: set[str] = set()
        if carried:
            assert isinstance(held, _Held) and delta is not None and memo is not None
            # the held verdicts go on to this open as they are (no copy of ~1,000 uids a session): only
            # the next open reads them, and the memo holds this open's from here on (taken out first,
            # so that an open that fails half-way leaves none to carry)
            del memo[MEMO]
            self.quiet, self.by_queue, self.busy = held.quiet, dict(held.by_queue), held.busy
            self.piped = held.piped
            # changed in place, as `busy` is (the memo no longer holds either)
            self.order = held.order if self.keep_order else None
            self.waiting = held.waiting
            self.admitted = held.admitted if self.keep_order and self.keep_waiting else None
            for uid in delta.gone:
                self._forget(uid)
            for uid in delta.changed:
                self._forget(uid)
                job = jobs.get(uid)
                if job is not None:
                    self._judge(job)
            if self.keep_order and self.order is None:
                self.order = sorted(self.busy)
            if self.keep_order and self.keep_waiting and self.admitted is None:
                self.admitted = sorted(self.busy - self.waiting)
            if check.enabled():
                self._check()
        elif self.active:
            for job in jobs.values():
                self._judge(job)
            if self.keep_order:
                self.order = sorted(self.busy)
                if self.keep_waiting:
                    self.admitted = sorted(self.busy - self.waiting)
        # not kept past open: the session's bound method would hold the session in a reference cycle
        # (sessions are freed by reference counting: Session.release)
        self._valid = _judged_at_open
        if memo is not None:
            if generation is None or not self.active:
                memo.pop(MEMO, None)
            else:
                memo[MEMO] = _Held(generation, validity, self.quiet, self.by_queue, self.busy, self.order,
                                   self.piped, self.waiting, self.admitted)

    def _forget(self, uid: str) -> None:
        queue = self.quiet.pop(uid, None)
        if queue is not None:
            self._own(queue).discard(uid)
        elif uid in self.busy:
            self.busy.discard(uid)
            self.piped.discard(uid)
            order = self.order
            if order is not None:
                del order[bisect_left(order, uid)]
            if uid in self.waiting:
                self.waiting.discard(uid)
            elif self.admitted is not None:
                del self.admitted[bisect_left(self.admitted, uid)]

    def _own(self, queue: str) -> set[str]:
        """The queue's set of quiet uids, copied first if it is the memo's."""
        if queue not in self._copied:
            self._copied.add(queue)
            self.by_queue[queue] = set(self.by_queue.get(queue, ()))
        return self.by_queue[queue]

    def _judge(self, job: JobInfo) -> None:
        if self.is_quiet(job):
            self.quiet[job.uid] = job.queue
            self._own(job.queue).add(job.uid)
        else:
            # a job is judged once an open, after `_forget` took it out of `busy` (if it was in it)
            self.busy.add(job.uid)
            if job.counts.get(_PIPELINED):
                self.piped.add(job.uid)
            if self.order is not None:
                insort(self.order, job.uid)
            if job.phase is _PENDING:
                self.waiting.add(job.uid)
            elif self.admitted is not None:
                insort(self.admitted, job.uid)

    def is_quiet(self, job: JobInfo) -> bool:
        """Admitted, no pending, pipelined or pending best-effort task, and valid."""
        counts = job.counts
        return (job.phase is not _PENDING and not counts.get(_TASK_PENDING) and not counts.get(_PIPELINED)
                and not job.pending_be and self._valid(job)[0])

    def _check(self) -> None:
        fresh = JobVisits(self.jobs, self._valid, (), None, None, None)
        by_queue = {q: uids for q, uids in self.by_queue.items() if uids}
        if (fresh.quiet != self.quiet or fresh.busy != self.busy or fresh.by_queue != by_queue
                or (self.order is not None and self.order != sorted(self.busy)) or fresh.piped != self.piped
                or fresh.waiting != self.waiting
                or (self.admitted is not None and self.admitted != sorted(self.busy - self.waiting))):
            raise check.StateCheckError(f"{check.ENV}: the quiet jobs carried from the last session differ from "
                                        "the jobs judged quiet afresh")

    def visit(self) -> list[str]:
        """The uids an action must visit, in uid order (every job's when not active)."""
        if not self.active:
            return sorted(self.jobs)
        moved = self.moved
        order = self.order
        if order is None or (moved and not moved <= self.busy):
            return self.visit_reference()
        # the busy jobs (a moved job is among them): a copy, which the caller may change
        out = order.copy()
        if check.enabled() and out != self.visit_reference():
            raise check.StateCheckError(f"{check.ENV}: the busy jobs kept in uid order differ from their sort")
        return out

    def visit_admitted(self, log: set[str]) -> list[str] | None:
        """The uids, in uid order, of `visit()` less the busy jobs that were waiting for enqueue (phase
        Pending) when judged, are not in `log` and did not move (docs/semantics.md K52); None when not
        kept (not active, or the order not kept), and then `visit()` is every job to visit.

        `log` is the session's live log of the jobs changed since its snapshot was taken
        (`JobDelta.log`, K17): a job's phase is set only through `JobInfo.set_phase`, which logs it, so
        a waiting job not logged is waiting still, and allocate, which passes over every job waiting
        for enqueue when enqueue is configured, would pass it over. The others are kept: the busy
        jobs not waiting at judge time (`admitted`), the logged waiting ones and the moved ones."""
        admitted = self.admitted
        if not self.active or admitted is None:
            return None
        waiting, busy = self.waiting, self.busy
        extra = {uid for uid in log if uid in waiting}
        if self.moved:
            extra |= self.moved
        out = admitted.copy()
        for uid in sorted(extra):
            if uid not in busy or uid in waiting:  # (an admitted uid is in `out` already)
                insort(out, uid)
        return out

    def may_hold_pipelined(self) -> list[str] | None:
        """Uids, in no set order, of every job that may hold a pipelined task now: those that held one at
        open and those moved since (a job's task statuses move only through `Session._move`). None when
        not active or not kept (every visited job then)."""
        if not self.active or not self.keep_piped:
            return None
        if not self.moved:
            return list(self.piped)
        return list(self.piped | self.moved)

    def visit_reference(self) -> list[str]:
        """`visit` for an active session, by a sort of the busy and moved uids."""
        if self.moved:
            return sorted(self.busy | self.moved)
        return sorted(self.busy)

    def quiet_firsts(self) -> dict[str, str]:
        """Per queue (the jobs' queue name) with a quiet job not moved since open, its first such uid
        (empty when not active: every job is visited)."""
        if not self.active:
            return {}
        moved = self.moved
        first: dict[str, str] = {}
        for queue, uids in self.by_queue.items():
            if moved and not moved.isdisjoint(uids):
                uids = uids - moved
            if uids:
                first[queue] = min(uids)
        return first


def _judged_at_open(job: JobInfo) -> tuple[bool, str]:
    raise InternalError("a job's quiet verdict is taken at session open only")
