"""gang: all-or-nothing scheduling of PodGroups (§6.2) and the session-close conditions (§7)."""

from __future__ import annotations

import functools

from apportion.cluster.model import (
    ALLOCATED_STATUSES,
    PENDING,
    PIPELINED,
    READY_STATUSES,
    SUCCEEDED,
    JobInfo,
    TaskInfo,
    TaskStatus,
)
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.session import Session
from apportion.state import check

_VALID_FOR_ROLE = frozenset({*ALLOCATED_STATUSES, SUCCEEDED, PIPELINED, PENDING})
_READY_FOR_ROLE = frozenset({*ALLOCATED_STATUSES, SUCCEEDED})
_PIPELINED_FOR_ROLE = frozenset({*_READY_FOR_ROLE, PIPELINED})


#: JobInfo.derive key of job_valid's answer
VALID_KEY = "gang.valid"


class GangPlugin(Plugin):
    """Volcano's gang (`plugins/gang/gang.go`): a job runs only with minMember tasks at once."""

    name = "gang"
    #: its close hook writes per job (Plugin.on_session_close)
    closes_per_job = True

    def on_session_open(self, ssn: Session) -> None:
        """Register job validity, order, readiness, pipelining and starving, and the gang-aware victim filters."""
        self.ssn = ssn
        ssn.add_fn(ep.JOB_VALID, self.name, self.job_valid)
        ssn.add_fn(ep.PREEMPTABLE, self.name, self.evictable)
        ssn.add_fn(ep.RECLAIMABLE, self.name, self.evictable)
        ssn.add_fn(ep.JOB_ORDER, self.name, self.job_order)
        ssn.add_fn(ep.JOB_READY, self.name, self.job_ready)
        ssn.add_fn(ep.JOB_PIPELINED, self.name, self.job_pipelined)
        ssn.add_fn(ep.JOB_STARVING, self.name, self.job_starving)

    @staticmethod
    def _roles_checked(job: JobInfo) -> bool:
        return bool(job.min_task_member) and job.min_available >= job.task_min_sum()

    def _roles_reach(self, job: JobInfo, statuses: frozenset[TaskStatus]) -> bool:
        counts = job.role_counts(statuses, pending_best_effort=statuses is not _VALID_FOR_ROLE)
        return all(counts.get(role, 0) >= need for role, need in job.min_task_member.items())

    def job_valid(self, job: JobInfo) -> tuple[bool, str]:
        """JobValidFn (no switch): enough valid tasks overall and per role. Kept on the job
        (JobInfo.derive): it follows from the task statuses and the job's minimums."""
        # JobInfo.derive's own test for a kept answer, made here first: allocate, reclaim and backfill ask
        # of every job every session, and most answers are kept (tests/plugins/test_gang_valid.py)
        hit = job.derived.get(VALID_KEY)
        if hit is not None and hit[0] == job.version and hit[1] is job.phase:
            minimums = hit[2]
            if minimums[0] == job.min_available and minimums[1] == job.min_task_member:
                return hit[3]
        return job.derive(VALID_KEY, (job.min_available, dict(job.min_task_member)), lambda: self._job_valid(job))

    def _job_valid(self, job: JobInfo) -> tuple[bool, str]:
        valid = job.valid_num()
        if valid < job.min_available:
            return False, (f"not enough valid tasks for gang-scheduling: {valid} valid, "
                           f"minMember {job.min_available}")
        if self._roles_checked(job) and not self._roles_reach(job, _VALID_FOR_ROLE):
            return False, "not enough valid tasks per role (minTaskMember) for gang-scheduling"
        return True, ""

    def job_ready(self, job: JobInfo) -> bool:
        """JobReadyFn: ready + pending best-effort >= minMember (and per role)."""
        if job.ready_num() + job.pending_best_effort_num() < job.min_available:
            return False
        return not self._roles_checked(job) or self._roles_reach(job, _READY_FOR_ROLE)

    def job_pipelined(self, job: JobInfo) -> int:
        """JobPipelinedFn: ready + waiting + pending best-effort >= minMember, else Reject."""
        n = job.ready_num() + job.waiting_num() + job.pending_best_effort_num()
        if n < job.min_available:
            return ep.REJECT
        if self._roles_checked(job) and not self._roles_reach(job, _PIPELINED_FOR_ROLE):
            return ep.REJECT
        return ep.PERMIT

    def job_starving(self, job: JobInfo) -> bool:
        """JobStarvingFn: waiting + ready < minMember."""
        return job.waiting_num() + job.ready_num() < job.min_available

    def job_order(self, l: JobInfo, r: JobInfo) -> int:
        """JobOrderFn: a job that is not ready comes first."""
        lr, rr = self.job_ready(l), self.job_ready(r)
        if lr == rr:
            return 0
        return 1 if lr else -1

    def evictable(self, evictor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """PreemptableFn / ReclaimableFn: each job keeps at least minMember ready tasks."""
        taken: dict[str, int] = {}
        victims = []
        for c in candidates:
            job = self.ssn.jobs.get(c.job)
            if job is None:
                continue
            occupied = job.ready_num() - taken.get(c.job, 0)
            if occupied > job.min_available:
                victims.append(c)
                taken[c.job] = taken.get(c.job, 0) + 1
        return victims, ep.PERMIT

    def on_session_close(self, ssn: Session) -> None:
        """Write the Unschedulable / Scheduled conditions that the phase write-back reads (for the jobs
        closed in full: the others carry last session's over, Plugin.on_session_close)."""
        checking = check.enabled()
        for job in ssn.closing:
            if not job.tasks:
                continue
            if self.job_ready(job):
                job.conditions["Scheduled"] = ("True", "tasks in gang are ready to be scheduled", "", ssn.uid)
                continue
            if excused_for_releasing(job):
                continue
            placed = job.derive(PLACED_KEY, None, functools.partial(placed_pending, job)) if job.counts.get(
                PENDING) else 0
            if checking and placed != placed_pending(job):
                raise check.StateCheckError(f"{check.ENV}: gang's count of job {job.uid}'s pending tasks last "
                                            "placed, kept on the job, differs from a walk of its tasks")
            missing = job.min_available - job.ready_num() - placed
            msg = f"{missing}/{len(job.tasks)} tasks in gang unschedulable"
            if job.job_fit_errors:
                msg += f": {job.job_fit_errors}"
            job.conditions["Unschedulable"] = ("True", "NotEnoughResources", msg, ssn.uid)



#: JobInfo.derive key of `placed_pending`'s answer
PLACED_KEY = "gang.placed"


def placed_pending(job: JobInfo) -> int:
    """How many of the job's pending tasks were last placed (allocated or pipelined) and taken back.

    Kept on the job by its close (JobInfo.derive, per task version and phase): a task's last
    transaction is written only by the session's moves, right after the status change that moves the
    version (Session.do_allocate, do_pipeline, undo_allocate), and a task built afresh has none; a job
    closed in full session after session (a waiting one whose refusal text moves) would otherwise
    walk its tasks each time."""
    return sum(1 for t in job.tasks.values()
               if t.status is PENDING and t.last_tx_status in ALLOCATED_STATUSES)


def excused_for_releasing(job: JobInfo) -> bool:
    """gang's close leaves a job that is not ready without an Unschedulable condition when it waits
    only for its releasing tasks (none pending or waiting, and enough scheduled with them)."""
    rel = job.releasing_with_node_num()
    if not rel:
        return False
    if job.counts.get(PENDING, 0) or job.waiting_num():
        return False
    return job.scheduled_num() + rel >= job.min_available


__all__ = ["PLACED_KEY", "GangPlugin", "READY_STATUSES", "excused_for_releasing", "placed_pending"]
