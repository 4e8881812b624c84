"""reclaim: a starving job in a queue that deserves more takes resources back from other queues (§5.4)."""

from __future__ import annotations

import functools

from apportion.actions.common import evict_until_fits, fits_future_idle, pop_best, validate_victims
from apportion.actions.reclaim_guards import ReclaimGuards, victim_units
from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from apportion.framework.session import Session
from apportion.framework.statement import Statement


def execute(ssn: Session) -> None:
    """Reclaim for the starving jobs of each queue, queue by queue in queue order (§5.4)."""
    guards = ReclaimGuards.of(ssn)
    queues: list[QueueInfo] = []
    seen: set[str] = set()
    preemptors: dict[str, list[JobInfo]] = {}
    task_lists: dict[str, list[TaskInfo]] = {}
    for uid in sorted(ssn.jobs):
        job = ssn.jobs[uid]
        if job.is_pending() or not ssn.job_valid(job)[0]:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.name not in seen:
            seen.add(queue.name)
            queues.append(queue)
            preemptors[queue.name] = []
        if ssn.job_starving(job):
            tasks = [t for t in job.tasks.values() if t.status is TaskStatus.PENDING and not t.gated]
            if tasks:
                tasks.sort(key=functools.cmp_to_key(ssn.task_compare))
                task_lists[job.uid] = tasks
                preemptors[queue.name].append(job)

    # A popped queue serves all its starving jobs, in job order, before the next queue is popped (the
    # inner loop of Volcano's Execute). Volcano also pushes the queue back while jobs remain; those
    # entries later pop with no job left and do nothing, so they are not made here. Every queue with a
    # running job is popped once: the picker (capacity's tree picker in tree mode) gives what the
    # scan gives without comparing each pop against every queue left.
    picker = ssn.queue_picker(queues)
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
                reclaim_for_task(ssn, job, task, stmt, guards)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()


def reclaim_for_task(ssn: Session, job: JobInfo, task: TaskInfo, stmt: Statement,
                     guards: ReclaimGuards | None = None) -> bool:
    """reclaimForTask: visit feasible nodes in name order; evict victims until the task fits.

    `guards` are the optional minRuntime / gangAtomicVictims switches (reclaim_guards); None or both
    off is Volcano's behaviour."""
    guards = guards if guards is not None and guards.active else None
    rows = [int(row) for row in ssn.predicate_for_preempt(task)]
    if guards is not None and guards.gang_atomic:
        # room left by a whole gang evicted for an earlier task is used before anything else is evicted
        for row in rows:
            if fits_future_idle(ssn, task, row):
                node_stmt = Statement(ssn)
                node_stmt.pipeline(task, row)
                stmt.merge(node_stmt)
                return True
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
            return True
    return False
