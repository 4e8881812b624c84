"""Helpers shared by the actions: best-first selection and node-side checks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np

from apportion.cluster.model import TaskInfo
from apportion.framework.queue_picker import pop_best_index
from apportion.framework.session import Session
from apportion.framework.statement import Statement

T = TypeVar("T")


def pop_best(items: list[T], compare: Callable[[T, T], int]) -> T:
    """Remove and return the best item under the current values.

    Volcano's heaps are not re-sorted when keys change while queued; apportion picks the true best at
    every pop (a deliberate deviation for determinism, §4.4).
    """
    return items.pop(pop_best_index(items, compare))


def evict_until_fits(ssn: Session, stmt: Statement, task: TaskInfo, row: int, units: Iterable[list[TaskInfo]],
                     fits: Callable[[], bool], reason: str) -> bool:
    """The per-node eviction loop of reclaim (§5.4, reclaimForTask) and normal preemption (§5.5).

    A node statement evicts the units in order while the task does not fit yet: the test is made before
    each unit, so a node that already fits evicts nothing. If the task then fits, it is pipelined onto
    the node ("eviction occurred" if anything went) and the node statement merges into `stmt`; otherwise
    every eviction is undone. A unit is one task, or a whole gang under reclaim's gangAtomicVictims.
    """
    node_stmt = Statement(ssn)
    evicted = False
    for unit in units:
        if fits():
            break
        for victim in unit:
            node_stmt.evict(victim, reason)
        evicted = True
    if fits():
        node_stmt.pipeline(task, row, after_eviction=evicted)
        stmt.merge(node_stmt)
        return True
    node_stmt.discard()
    return False


def fits_future_idle(ssn: Session, task: TaskInfo, row: int) -> bool:
    """request <= FutureIdle of the node (rule a)."""
    return ssn.table.fits_row(row, ssn.task_vec(task), ssn.task_cols(task), future=True)


def validate_victims(ssn: Session, task: TaskInfo, row: int, victims: list[TaskInfo]) -> bool:
    """ValidateVictims: request <= FutureIdle + sum of victims (rule a)."""
    avail = ssn.table.future_idle_row(row).copy()
    for v in victims:
        avail += ssn.task_vec(v)
    cols = ssn.task_cols(task)
    r, a = ssn.task_vec(task)[cols], avail[cols]
    return bool(np.all((r < a) | (np.abs(r - a) < 0.1)))


def need_continue_allocating(job_tasks_total: int, ssn: Session, job_uid: str) -> bool:
    """JobInfo.NeedContinueAllocating: after a task failed, may the job's step go on?"""
    from apportion.cluster.model import ALLOCATED_STATUSES, TaskStatus

    job = ssn.jobs[job_uid]
    if job.min_available >= job_tasks_total:
        return False
    if job.min_available < job.task_min_sum():
        reachable = job.ready_num() + sum(
            1 for t in job.tasks.values() if t.status is TaskStatus.PENDING and t.role not in job.failed_roles
        )
        return reachable >= job.min_available
    counted: dict[str, int] = {}
    for t in job.tasks.values():
        if t.status in ALLOCATED_STATUSES or t.status is TaskStatus.SUCCEEDED or (
            t.status is TaskStatus.PENDING and t.best_effort
        ):
            counted[t.role] = counted.get(t.role, 0) + 1
    for role in job.failed_roles:
        need = job.min_task_member.get(role, 0)
        if need > 0 and counted.get(role, 0) < need:
            return False
    return True
