"""Helpers shared by the actions: best-first selection, task order and node-side checks."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np

from apportion.cluster.model import (
    PENDING,
    SUCCEEDED,
    JobInfo,
    TaskInfo,
    name_index,
)
from apportion.framework import extension as ep
from apportion.framework.queue_picker import pop_best_index
from apportion.framework.session import Session
from apportion.framework.statement import Statement
from apportion.state import check

T = TypeVar("T")


def pop_best(items: list[T], compare: Callable[[T, T], int]) -> T:
    """Remove and return the best item under the current values.

    Volcano's heaps are not re-sorted when keys change while queued; apportion picks the true best at
    every pop (a deliberate deviation for determinism, §4.4).
    """
    return items.pop(pop_best_index(items, compare))


#: TaskOrderFn plugins whose answer is a function of the two tasks alone, of fields a task object never
#: changes once built (priority: its priority; the default comparison after them: name, creation, uid)
TASK_LOCAL_ORDER = frozenset({"priority"})

#: False: a sort `sorted_tasks` makes compares the tasks with the session's TaskOrderFn (the reference);
#: True: under a task-local order of tasks whose names all carry an index, it sorts by a key instead
#: (`sorted_tasks_keyed`, docs/semantics.md K48)
KEYED_TASK_SORT = True

#: JobInfo.derived key of `sorted_tasks`'s last answer: (version, phase, (order plugins, tasks given),
#: tasks sorted); the version and phase are not part of the test (the same task objects are)
SORTED_KEY = "allocate.sorted_tasks"


def sorted_tasks_reference(ssn: Session, tasks: list[TaskInfo]) -> list[TaskInfo]:
    """The tasks sorted by the session's TaskOrderFn (the reference)."""
    return sorted(tasks, key=functools.cmp_to_key(ssn.task_compare))


def sorted_tasks(ssn: Session, job: JobInfo, tasks: list[TaskInfo]) -> list[TaskInfo]:
    """`sorted_tasks_reference`, handed again from the job's last sort when the same task objects come in
    the same order and every TaskOrderFn consulted is task-local (docs/semantics.md K30).

    allocate sorts every visited job's pending tasks every session, and a job left waiting keeps the
    same pending tasks, session after session. A task-local order of the same objects is the same order."""
    order = tuple(opt.name for _, opt, _ in ssn.consulted(ep.TASK_ORDER))
    if not TASK_LOCAL_ORDER.issuperset(order):
        return sorted_tasks_reference(ssn, tasks)
    given = tuple(tasks)
    hit = job.derived.get(SORTED_KEY)
    if hit is not None:
        was_order, was_given = hit[2]
        if was_order == order and len(was_given) == len(given) and all(map(operator.is_, was_given, given)):
            out = list(hit[3])
            if check.enabled() and not all(map(operator.is_, out, sorted_tasks_reference(ssn, tasks))):
                raise check.StateCheckError(f"{check.ENV}: job {job.uid}'s pending tasks in the order kept from "
                                            "its last sort differ from a fresh sort")
            return out
    keyed = sorted_tasks_keyed(tasks, "priority" in order) if KEYED_TASK_SORT else None
    if keyed is None:
        out = sorted_tasks_reference(ssn, tasks)
    else:
        out = keyed
        if check.enabled() and not all(map(operator.is_, out, sorted_tasks_reference(ssn, tasks))):
            raise check.StateCheckError(f"{check.ENV}: job {job.uid}'s pending tasks sorted by key differ from "
                                        "their sort by the session's task order")
    job.derived[SORTED_KEY] = (job.version, job.phase, (order, given), tuple(out))
    return out


def sorted_tasks_keyed(tasks: list[TaskInfo], by_priority: bool) -> list[TaskInfo] | None:
    """`sorted_tasks_reference` under the task order of the priority plugin (`by_priority`) or of none,
    by a key: None when some task's name has no index (docs/semantics.md K48).

    With every name indexed, Volcano's CompareTask (`default_task_compare`) is the lexicographic order
    of (name index, creation, uid), and priority's TaskOrderFn puts the higher priority first: the
    session's comparison is then the order of the key (-priority, index, creation, uid), a total
    order (uids differ), and the sort, which reads nothing but `<`, gives the same list. A name
    without an index makes CompareTask skip the index for that pair only, which no key expresses."""
    keys: list[tuple[int, int, str, str]] = []
    for t in tasks:
        index = name_index(t.name)
        if index is None:
            return None
        keys.append((-t.priority if by_priority else 0, index, t.creation, t.uid))
    order = sorted(range(len(tasks)), key=keys.__getitem__)
    return [tasks[i] for i in order]


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
    from apportion.cluster.model import ALLOCATED_STATUSES

    job = ssn.jobs[job_uid]
    if job.min_available >= job_tasks_total:
        return False
    if job.min_available < job.task_min_sum():
        reachable = job.ready_num() + sum(
            1 for t in job.tasks.values() if t.status is PENDING and t.role not in job.failed_roles
        )
        return reachable >= job.min_available
    counted: dict[str, int] = {}
    for t in job.tasks.values():
        if t.status in ALLOCATED_STATUSES or t.status is SUCCEEDED or (
            t.status is PENDING and t.best_effort
        ):
            counted[t.role] = counted.get(t.role, 0) + 1
    for role in job.failed_roles:
        need = job.min_task_member.get(role, 0)
        if need > 0 and counted.get(role, 0) < need:
            return False
    return True
