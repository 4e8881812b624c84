"""reclaim: a starving job in a queue that deserves more takes resources back from other queues (§5.4)."""

from __future__ import annotations

import functools

import numpy as np

from apportion.actions.common import evict_until_fits, fits_future_idle, pop_best, validate_victims
from apportion.actions.reclaim_guards import ReclaimGuards, victim_units
from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from apportion.framework.session import Session
from apportion.framework.statement import Statement
from apportion.lean_dataclass import dataclass


def execute(ssn: Session) -> None:
    """Reclaim for the starving jobs of each queue, queue by queue in queue order (§5.4)."""
    guards = ReclaimGuards.of(ssn)
    # Every queue with an admitted valid job is listed, in the order of the first such job (by uid). A
    # quiet job (admitted, valid, nothing pending: framework/job_visits.py) does nothing here but that, so
    # it is not visited: each queue's first quiet job stands for them.
    #: per queue (the jobs' name for it), the first job (uid) that lists it
    first: dict[str, str] = {q: uid for q, uid in ssn.visits.quiet_firsts().items() if q in ssn.queues}
    preemptors: dict[str, list[JobInfo]] = {}
    task_lists: dict[str, list[TaskInfo]] = {}
    for uid in ssn.visits.visit():
        job = ssn.jobs[uid]
        if job.is_pending():
            continue
        # a job with no pending task has no task to reclaim for, whatever the starving vote says; once its
        # queue is listed by an earlier job it adds nothing, and its validity (a question without side
        # effects) is not asked
        pending = job.counts.get(TaskStatus.PENDING, 0)
        if SKIP_REPEATS and not pending and first.get(job.queue, uid) < uid:
            continue
        if not ssn.job_valid(job)[0]:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if first.get(job.queue, uid) >= uid:
            first[job.queue] = uid
        if (pending or not SKIP_REPEATS) and ssn.job_starving(job):
            tasks = [t for t in job.tasks.values() if t.status is TaskStatus.PENDING and not t.gated]
            if tasks:
                tasks.sort(key=functools.cmp_to_key(ssn.task_compare))
                task_lists[job.uid] = tasks
                preemptors.setdefault(queue.name, []).append(job)
    queues: list[QueueInfo] = []
    seen: set[str] = set()
    for name in sorted(first, key=first.__getitem__):
        queue = ssn.queues[name]
        if queue.name not in seen:
            seen.add(queue.name)
            queues.append(queue)
            preemptors.setdefault(queue.name, [])

    # A popped queue serves all its starving jobs, in job order, before the next queue is popped (the
    # inner loop of Volcano's Execute). Volcano also pushes the queue back while jobs remain; those
    # entries later pop with no job left and do nothing, so they are not made here. Every queue with a
    # running job is popped once: the picker (capacity's tree picker in tree mode) gives what the
    # scan gives without comparing each pop against every queue left.
    picker = ssn.queue_picker(queues)
    # the failed searches that still stand, by what they asked (FailedSearch); emptied whenever the session
    # changes
    failed: dict[tuple[object, ...], FailedSearch] = {}
    while len(picker):
        queue = picker.pop()
        if ssn.overused(queue):
            continue
        jobs = preemptors[queue.name]
        while jobs:
            job = pop_best(jobs, ssn.job_compare)
            stmt = Statement(ssn)
            tasks = task_lists[job.uid]
            while ssn.job_starving(job) and tasks:
                task = tasks.pop(0)
                if task.preempt_never:
                    continue
                if not ssn.preemptive(queue, task):
                    ssn.explain(task.key, f"queue {queue.name} may not reclaim for this task (preemptive check)")
                    continue
                if ssn.pre_predicate(task):
                    continue
                rows = _rows(ssn, task)
                if not SKIP_REPEATS:
                    _search(ssn, job, task, stmt, guards, rows)
                    continue
                signature = _signature(task, queue.name)
                hit = failed.get(signature)
                if hit is not None and np.array_equal(hit.rows, rows):
                    hit.replay(ssn, task)
                    continue
                search = _search_recorded(ssn, job, task, stmt, guards, rows)
                if search is None:
                    failed.clear()
                else:
                    failed[signature] = search
            if stmt.ops:
                failed.clear()
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()


#: skip the search of a task that repeats a failed one (FailedSearch), and the questions whose answers
#: cannot matter; False: Volcano's loop as written, every job asked and every task searched (the
#: reference the property tests compare with)
SKIP_REPEATS = True


def _signature(task: TaskInfo, queue: str) -> tuple[object, ...]:
    """What the search reads of the reclaimer, besides its rows and its key: its job's queue and its request
    (the candidates, the reclaimable votes and the victims' order read nothing else of it), and the pod
    fields a plugin could read."""
    r = task.resreq
    return (queue, r.cpu, r.memory, tuple(r.scalars.items()), task.priority, task.raw_priority,
            task.priority_class_name, task.preemptable, task.role, task.namespace, task.gated)


@dataclass
class FailedSearch:
    """A task's search for victims that placed nothing and left the session as it found it.

    Until reclaim changes the session (a search that places a task, a job's statement committed or
    discarded with operations in it), every later search sees the same session state: between searches
    reclaim only asks questions (starving, preemptive, pre-predicate, job and queue order). A later task
    that asks the same of the search (the same signature: its queue, its request; and the same feasible
    rows) fails the same way and says the same things, so it is not searched: the explanations are given
    again under its key. A search whose failure undid evictions (a node statement discarded) never stands,
    so no float round trip can tell the two apart; nor does one that explained anything but the task, or
    whose words name the task or its job."""

    rows: np.ndarray
    #: the explanations the search gave the task, in order
    said: list[str]

    def replay(self, ssn: Session, task: TaskInfo) -> None:
        """Give the search's explanations again, for `task`."""
        for m in self.said:
            ssn.explain(task.key, m)


def _rows(ssn: Session, task: TaskInfo) -> np.ndarray:
    return ssn.predicate_for_preempt(task)


def _search_recorded(ssn: Session, job: JobInfo, task: TaskInfo, stmt: Statement, guards: ReclaimGuards,
                     rows: np.ndarray) -> FailedSearch | None:
    """Search for `task` as reclaim_for_task does, with its explanations gathered on the side and then
    given in the order given; a FailedSearch when it may stand for a later task's, else None."""
    real = ssn.explanations
    said: dict[str, list[str]] = {}
    ssn.explanations = said
    try:
        placed, undone = _search(ssn, job, task, stmt, guards, rows)
    finally:
        ssn.explanations = real
    for obj, messages in said.items():
        for m in messages:
            ssn.explain(obj, m)
    if placed or undone or not said.keys() <= {task.key}:
        return None
    messages = said.get(task.key, [])
    names = (task.key, task.uid, task.name, job.uid)
    if any(n in m for m in messages for n in names):
        return None
    return FailedSearch(rows, messages)


def reclaim_for_task(ssn: Session, job: JobInfo, task: TaskInfo, stmt: Statement,
                     guards: ReclaimGuards | None = None) -> bool:
    """reclaimForTask: visit feasible nodes in name order; evict victims until the task fits.

    `guards` are the optional minRuntime / gangAtomicVictims switches (reclaim_guards); None or both
    off is Volcano's behaviour."""
    return _search(ssn, job, task, stmt, guards, _rows(ssn, task))[0]


def _search(ssn: Session, job: JobInfo, task: TaskInfo, stmt: Statement, guards: ReclaimGuards | None,
            feasible: np.ndarray) -> tuple[bool, bool]:
    """reclaim_for_task over the given feasible rows: (whether the task was placed, whether some node's
    evictions were made and undone)."""
    guards = guards if guards is not None and guards.active else None
    rows = [int(row) for row in feasible]
    undone = False
    if guards is not None and guards.gang_atomic:
        # room left by a whole gang evicted for an earlier task is used before anything else is evicted
        for row in rows:
            if fits_future_idle(ssn, task, row):
                node_stmt = Statement(ssn)
                node_stmt.pipeline(task, row)
                stmt.merge(node_stmt)
                return True, False
    for row in rows:
        node = ssn.nodes[row]
        candidates = []
        for t in node.tasks.values():
            if t.status is not TaskStatus.RUNNING or not t.preemptable:
                continue
            vjob = ssn.jobs.get(t.job)
            if vjob is None or vjob.queue == job.queue:
                continue
            vq = ssn.queues.get(vjob.queue)
            if vq is None or not vq.reclaimable:
                continue
            if guards is not None and guards.protected(t):
                continue
            candidates.append(t)
        if not candidates:
            continue
        candidates = ssn.sort_victims(candidates, task)
        victims = ssn.reclaimable(task, candidates)
        if not victims:
            continue
        if not validate_victims(ssn, task, row, victims):
            continue
        victims = ssn.sort_victims(victims, task)
        if guards is not None and guards.gang_atomic:
            units = victim_units(ssn, task, row, victims, guards)
            if units is None:
                continue
        else:
            units = [[v] for v in victims]
        if evict_until_fits(ssn, stmt, task, row, units, functools.partial(fits_future_idle, ssn, task, row),
                            "reclaim"):
            return True, undone
        undone = True
    return False, undone
