"""enqueue: move PodGroups from Pending to Inqueue (admission), queue by queue (§5.1)."""

from __future__ import annotations

from apportion.actions.common import pop_best
from apportion.cluster.model import JobInfo, PodGroupPhase, QueueInfo
from apportion.framework.session import Session


def execute(ssn: Session) -> None:
    """Run enqueue over the session."""
    queues: list[QueueInfo] = []
    pending: dict[str, list[JobInfo]] = {}
    backlog: list[JobInfo] = []
    for uid in sorted(ssn.jobs):
        job = ssn.jobs[uid]
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.name not in pending:
            pending[queue.name] = []
            queues.append(queue)
        if job.is_pending():
            pending[queue.name].append(job)
            backlog.append(job)

    # A queue without pending jobs is popped and dropped, with no effect; once every queue still in the
    # picker has none left, the remaining pops would only drop them, so the loop ends there.
    waiting = sum(1 for jobs in pending.values() if jobs)
    if not waiting:
        return  # every pop would drop its queue: building the picker (over every queue with a job) is waste
    # A backlog of which nothing can be admitted (the commonest session under load) costs one test per
    # job: no queue order is needed when every vote refuses, since a refusal changes nothing the next
    # vote reads. A job without minResources is admitted without a vote, so it rules the shortcut out.
    if all(job.min_resources is not None for job in backlog) and ssn.refuses_all_enqueues(backlog):
        return
    picker = ssn.queue_picker(queues)
    # Admitting a job moves no queue's share, so a picker may know where the pops lead without popping
    # every queue that has no pending job (QueuePicker.drain_order).
    steps = picker.drain_order(lambda name: bool(pending[name]))
    if steps is not None:
        for queue in steps:
            _admit(ssn, pop_best(pending[queue.name], ssn.job_compare))
        return
    while waiting and len(picker):
        queue = picker.pop()
        jobs = pending[queue.name]
        if not jobs:
            continue
        job = pop_best(jobs, ssn.job_compare)
        if not jobs:
            waiting -= 1
        _admit(ssn, job)
        picker.push(queue)


def _admit(ssn: Session, job: JobInfo) -> None:
    # A PodGroup without minResources is admitted without asking any plugin (Keep, §5.1).
    if job.min_resources is None or ssn.job_enqueueable(job):
        ssn.job_enqueued(job)
        job.phase = PodGroupPhase.INQUEUE
