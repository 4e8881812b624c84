"""drf: dominant-resource-fair job order and preemption (§6.4).

Hierarchical DRF (queue annotations `volcano.sh/hierarchy`) is not implemented: with `enableHierarchy`
on drf's entry the plugin warns and runs flat (see docs/semantics.md).
"""

from __future__ import annotations

import functools
from typing import Any

from apportion.cluster.model import JobInfo, TaskInfo
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.session import EventHandler, Session
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource, dominant_share, share_terms
from apportion.state import check

SHARE_DELTA = 1e-6


#: JobInfo.derive key: the job's allocated sum and dominant share, for the cluster total's share terms
DERIVED = "drf.share"
#: the memo's entry: the last open's sums and shares (`_Held`)
MEMO = "drf.shares"
#: a job's kept sum and share are taken again after its phase moved (same object and task version);
#: False: worked out again, as `JobInfo.derive` does on any phase move (the reference)
ACROSS_PHASE = True


@dataclass
class _Held:
    """drf's sums and shares as a session opened with them: the session's own dictionaries, which its
    events then change, with what each job changed had at open (`undo`, filled in as the session
    goes: the next open puts those back before it applies its delta, so no open copies every job's
    entry). The sums are the jobs' derived values, which drf copies before it
    changes one."""

    generation: int
    terms: Any
    allocated: dict[str, Resource]
    shares: dict[str, float]
    #: per job uid changed by the session's events: its sum and share at open (None: it had none)
    undo: dict[str, tuple[Resource | None, float | None]]


class DrfPlugin(Plugin):
    """Volcano's drf (`plugins/drf/drf.go`): jobs ordered by dominant resource share, and preemption by share."""

    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        """Compute every job's dominant share and register the job order, the preemption filter and the event
        handler that keeps shares current."""
        self.ssn = ssn
        self.total = ssn.total_resource
        if ssn.conf.hierarchy_enabled(self.name):
            ssn.warnings.append("drf: hierarchical DRF is not implemented; drf runs flat")
        #: drf's own job allocated: includes tasks pipelined in this session (they fire allocate events)
        self.allocated: dict[str, Resource] = {}
        self.shares: dict[str, float] = {}
        #: the cluster total as dominant_share divides by it, read once: every share in the session uses it
        self._terms = share_terms(self.total)
        #: jobs whose `allocated` entry is drf's own: the others share the sum kept on the job (see
        #: JobInfo.derive) and are copied before the first change
        self._own: set[str] = set()
        #: per job uid the session's events changed, its sum and share at open (`_Held.undo`)
        self._undo: dict[str, tuple[Resource | None, float | None]] = {}
        if not self._from_memo(ssn):
            for uid, job in ssn.jobs.items():
                self.allocated[uid], self.shares[uid] = self._derived(job)
            self._to_memo(ssn)
        ssn.add_fn(ep.PREEMPTABLE, self.name, self.preemptable)
        ssn.add_fn(ep.JOB_ORDER, self.name, self.job_order)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    def _derived(self, job: JobInfo) -> tuple[Resource, float]:
        if ACROSS_PHASE:
            # the sum and share read the tasks (the version) and the terms, not the phase: a value kept
            # on the same object under the same version holds across a phase move (docs/semantics.md K57)
            hit = job.derived.get(DERIVED)
            if hit is not None and hit[0] == job.version and hit[1] is not job.phase and hit[2] == self._terms:
                if check.enabled():
                    want = self._sum_and_share(job)
                    # compared by repr, so that a NaN amount or share equals itself
                    if repr((hit[3][0].cpu, hit[3][0].memory, hit[3][0].scalars, hit[3][1])) != repr(
                            (want[0].cpu, want[0].memory, want[0].scalars, want[1])):
                        raise check.StateCheckError(f"{check.ENV}: drf's sum and share kept on job {job.uid} "
                                                    f"across its phase move differ from its tasks' {want}")
                job.derived[DERIVED] = (hit[0], job.phase, hit[2], hit[3])
                return hit[3]
        return job.derive(DERIVED, self._terms, functools.partial(self._sum_and_share, job))

    def _from_memo(self, ssn: Session) -> bool:
        """Start from the last open's allocated sums and shares (a caller that carries a memo), taking
        out the jobs that left or changed and deriving those that are new or changed
        (`Session.open_delta`); every other job is the last open's object with its task statuses and
        phase, so its derived value is the one held (docs/semantics.md, cluster state K11). False when there is no such last open or the
        cluster total differs."""
        delta = ssn.open_delta
        held = ssn.memo.get(MEMO) if ssn.memo is not None else None
        if delta is None or not isinstance(held, _Held) or held.generation != delta.since or held.terms != self._terms:
            return False
        assert ssn.memo is not None
        # the last open's dictionaries go on to this one (only the next open reads them; taken out of
        # the memo first, so that an open that fails half-way leaves none to carry), as they opened
        del ssn.memo[MEMO]
        allocated, shares = held.allocated, held.shares
        for uid, (a, sh) in held.undo.items():
            if a is None:
                allocated.pop(uid, None)
            else:
                allocated[uid] = a
            if sh is None:
                shares.pop(uid, None)
            else:
                shares[uid] = sh
        for uid in delta.gone:
            allocated.pop(uid, None)
            shares.pop(uid, None)
        for uid in delta.changed:
            allocated[uid], shares[uid] = self._derived(ssn.jobs[uid])
        if check.enabled():
            want = {uid: self._derived(job) for uid, job in ssn.jobs.items()}
            if {u: (a.cpu, a.memory, a.scalars, shares[u]) for u, a in allocated.items()} != {
                    u: (a.cpu, a.memory, a.scalars, sh) for u, (a, sh) in want.items()}:
                raise check.StateCheckError(f"{check.ENV}: drf's shares carried from the last session differ "
                                            "from shares derived for every job")
        # read by uid only: their order is not a full open's, and need not be
        self.allocated, self.shares = allocated, shares
        self._to_memo(ssn)
        return True

    def _to_memo(self, ssn: Session) -> None:
        if ssn.memo is None:
            return
        if ssn.open_generation is None:
            ssn.memo.pop(MEMO, None)
        else:
            ssn.memo[MEMO] = _Held(ssn.open_generation, self._terms, self.allocated, self.shares, self._undo)

    def _sum_and_share(self, job: JobInfo) -> tuple[Resource, float]:
        a = job.allocated_sum()
        return a, self.share_of(a)

    def share_of(self, r: Resource) -> float:
        """The dominant share of `r` in the cluster."""
        return dominant_share(r, self._terms)

    def job_order(self, l: JobInfo, r: JobInfo) -> int:
        """JobOrderFn: the lower dominant share first."""
        ls, rs = self.shares.get(l.uid, 0.0), self.shares.get(r.uid, 0.0)
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """PreemptableFn: a candidate is a victim if the preemptor's share after gaining stays <= the
        candidate job's share after losing (every candidate is subtracted, victim or not)."""
        ls = self.share_of(self.allocated[preemptor.job].plus(preemptor.resreq))
        working: dict[str, Resource] = {}
        victims = []
        for c in candidates:
            if c.job not in self.allocated:
                continue
            alloc = working.setdefault(c.job, self.allocated[c.job].clone())
            alloc.sub_without_assert(c.resreq)
            rs = self.share_of(alloc)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(c)
        return victims, ep.PERMIT

    def _owned(self, uid: str) -> Resource:
        """The job's allocated as drf may change it."""
        if uid not in self._own:
            self._own.add(uid)
            shared = self.allocated.get(uid)
            self._undo[uid] = (shared, self.shares.get(uid))
            self.allocated[uid] = Resource() if shared is None else shared.clone()
        return self.allocated[uid]

    def on_allocate(self, task: TaskInfo) -> None:
        """AllocateFunc: the task's job owns its request from now; its share grows."""
        a = self._owned(task.job)
        a.add(task.resreq)
        self.shares[task.job] = self.share_of(a)

    def on_deallocate(self, task: TaskInfo) -> None:
        """DeallocateFunc: the task's job gives its request back; its share shrinks."""
        a = self._owned(task.job)
        a.sub_without_assert(task.resreq)
        self.shares[task.job] = self.share_of(a)
