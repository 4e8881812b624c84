"""A closed job's texts: its Unschedulable event's message and its pending tasks' explanations, the
two things of a close that read the session's explanations (framework/closing.py).

`job_event` and `tasks_explained_reference` are the plain versions. `close_texts` gives both from
the pending task keys kept on the job (`JobInfo.derive`): a session explains few tasks, and when
none of a job's pending tasks is explained its event names no task, so the tasks are neither walked
nor sorted in the session's task order (a forecast's close remakes the event of every waiting job,
some 200 a session).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Protocol

from apportion.cluster.model import (
    GROUP_PENDING,
    PENDING,
    JobInfo,
    TaskInfo,
)
from apportion.state import check


class Session(Protocol):
    """What the texts read of the session (framework/session.py's Session)."""

    explanations: dict[str, list[str]]

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        """The session's task order."""
        ...


#: the name of a job's pending task keys in `JobInfo.derive`
PENDING_KEYS = "closing.pending_keys"


def _pending_keys(job: JobInfo) -> tuple[str, ...]:
    return tuple(t.key for t in job.tasks.values() if t.status is PENDING)


def tasks_explained(job: JobInfo, explanations: Mapping[str, list[str]],
                     checking: bool | None = None) -> tuple[tuple[str, ...], ...]:
    """The explanations of the job's pending tasks, in task order (empty when none is pending).
    `checking`: whether the self-check is on (asked of the environment when not given; a close asks it
    once for all its jobs)."""
    if not job.counts.get(PENDING):
        return ()
    # the keys are kept on the job while its task statuses are the same (a waiting job closed in full
    # session after session would otherwise name every task again), and most have no explanation
    keys = job.derive(PENDING_KEYS, None, functools.partial(_pending_keys, job))
    if explanations.keys().isdisjoint(keys):
        out: tuple[tuple[str, ...], ...] = ((),) * len(keys)
    else:
        out = tuple(tuple(explanations.get(k, ())) for k in keys)
    if checking is None:
        checking = check.enabled()
    if checking and out != tasks_explained_reference(job, explanations):
        raise check.StateCheckError(f"{check.ENV}: job {job.uid}'s pending tasks' explanations from its kept "
                                    "task keys differ from a walk of its tasks")
    return out


def tasks_explained_reference(job: JobInfo, explanations: Mapping[str, list[str]]) -> tuple[tuple[str, ...], ...]:
    """`tasks_explained` walking the tasks each time (the reference its property test compares with)."""
    if not job.counts.get(PENDING):
        return ()
    return tuple(tuple(explanations.get(t.key, ())) for t in job.tasks.values() if t.status is PENDING)


#: a Pending job's event when nothing explains it
NOT_ADMITTED = "podgroup is Pending: not admitted by enqueue in this session"


def close_texts(ssn: Session, job: JobInfo, checking: bool | None = None
                ) -> tuple[str | None, tuple[tuple[str, ...], ...]]:
    """`job_event(ssn, job)` and `tasks_explained(job, ssn.explanations)` together, from the job's
    kept pending task keys: when none of its pending tasks is explained (a session explains few
    tasks), the event names no task, so the pending tasks are neither walked nor put in the session's
    task order. `checking` as `tasks_explained`'s; under the self-check both are compared with the
    references (`job_event`, `tasks_explained_reference`)."""
    explanations = ssn.explanations
    if not job.counts.get(PENDING):
        out: tuple[str | None, tuple[tuple[str, ...], ...]] = (job_event(ssn, job), ())
    else:
        keys = job.derive(PENDING_KEYS, None, functools.partial(_pending_keys, job))
        if not explanations.keys().isdisjoint(keys):
            out = (job_event(ssn, job), tuple(tuple(explanations.get(k, ())) for k in keys))
        else:
            msgs = explanations.get(job.uid)
            if job.phase is GROUP_PENDING:
                msg = "; ".join(msgs or ()) or NOT_ADMITTED
            elif msgs:
                msg = "; ".join(msgs)
            else:
                msg = _left_pending(len(keys))
            out = (msg, ((),) * len(keys))
    if checking is None:
        checking = check.enabled()
    if checking and out != (job_event(ssn, job), tasks_explained_reference(job, explanations)):
        raise check.StateCheckError(f"{check.ENV}: job {job.uid}'s event and pending tasks' explanations from its "
                                    "kept task keys differ from the references")
    return out


def _left_pending(n: int) -> str:
    return f"{n} task(s) left pending: no action of this session reached them"


def job_event(ssn: Session, job: JobInfo) -> str | None:
    """The Unschedulable event's message of a closed job (None: no event): why it is Pending, or why
    tasks were left pending (the pending tasks' explanations in the session's task order; the
    reference `close_texts` is compared with)."""
    uid = job.uid
    job_msgs = ssn.explanations.get(uid, [])
    if job.phase is GROUP_PENDING and job.tasks:
        return "; ".join(job_msgs) or NOT_ADMITTED
    if not job.counts.get(PENDING):
        return None
    pending: list[TaskInfo] = sorted(
        (t for t in job.tasks.values() if t.status is PENDING),
        key=functools.cmp_to_key(ssn.task_compare),
    )
    if not pending:
        return None
    msgs = list(job_msgs)
    for t in pending:
        for m in ssn.explanations.get(t.key, []):
            tm = f"{t.name}: {m}"
            if not any(m in known for known in msgs):
                msgs.append(tm)
        if len(msgs) >= 6:
            break
    if not msgs:
        msgs = [_left_pending(len(pending))]
    return "; ".join(msgs)
