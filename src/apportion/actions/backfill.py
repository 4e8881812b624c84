"""backfill: place best-effort tasks (empty requests), which allocate skips (§5.3)."""

from __future__ import annotations

import functools

import numpy as np

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.framework.session import Session


def execute(ssn: Session) -> None:
    """Run backfill over the session."""
    for task in _pick_up_pending_tasks(ssn):
        job = ssn.jobs[task.job]
        n = len(ssn.nodes)
        err = ssn.pre_predicate(task)
        if err:
            ssn.record_fit_errors(job, task, [(err, n)], n)
            continue
        rows = np.arange(n)
        pf = ssn.plugin_predicates(task, rows)
        feasible = rows[pf.ok]
        if len(feasible) == 0:
            summary = [(text, int(mask.sum())) for text, mask in pf.reasons if mask.any()]
            ssn.record_fit_errors(job, task, summary, n)
            continue
        row = ssn.best_node(task, feasible)
        ssn.allocate_and_dispatch(task, row)


#: tests switch this off to compare the pick-up with the visit of every job
PASS_OVER_JOBS_WITHOUT_BEST_EFFORT = True


def _pick_up_pending_tasks(ssn: Session) -> list[TaskInfo]:
    """Queues in queue order, each drained completely: jobs in job order, tasks in task order."""
    per_queue: dict[str, list[tuple[JobInfo, list[TaskInfo]]]] = {}
    # a quiet job (admitted, valid, nothing pending or pipelined) has no best-effort task to pick up
    for uid in ssn.visits.visit():
        job = ssn.jobs[uid]
        # only pending or pipelined best-effort tasks are picked up (or un-pipelined): a job with
        # neither, as most are, is passed over without asking whether it is valid (that asks nothing
        # of anyone: the answer is a function of the job, kept on it)
        if PASS_OVER_JOBS_WITHOUT_BEST_EFFORT and not job.pending_be and not job.counts.get(TaskStatus.PIPELINED):
            continue
        if job.is_pending() or not ssn.job_valid(job)[0] or job.queue not in ssn.queues:
            continue
        tasks = []
        for t in job.tasks.values():
            if t.gated or not t.best_effort:
                continue
            if t.status is TaskStatus.PIPELINED:
                ssn.undo_allocate(t)  # un-pipelined first, at once
            if t.status is TaskStatus.PENDING:
                tasks.append(t)
        if tasks:
            tasks.sort(key=functools.cmp_to_key(ssn.task_compare))
            per_queue.setdefault(job.queue, []).append((job, tasks))
    out: list[TaskInfo] = []
    queues = sorted((ssn.queues[q] for q in per_queue), key=functools.cmp_to_key(ssn.queue_compare))
    for q in queues:
        entries = per_queue[q.name]
        entries.sort(key=lambda e: functools.cmp_to_key(ssn.job_compare)(e[0]))
        for _, tasks in entries:
            out.extend(tasks)
    return out
