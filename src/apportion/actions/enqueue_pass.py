"""enqueue's backlog from a pass over the session's jobs (docs/semantics.md K19, K33): the queues with a
job in the order of their first uid, each one's Pending jobs in uid order, and every Pending job;
`backlog_reference` passes over every job in uid order, `backlog_of` over the jobs the actions visit
and each queue's first quiet uid. A session whose backlog is carried from the last open
(enqueue_backlog.py, K47) checks it against `backlog_reference` (`check_carried`).
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, is_

from apportion.actions.enqueue_backlog import Carried
from apportion.cluster.model import (
    GROUP_PENDING,
    JobInfo,
    QueueInfo,
)
from apportion.framework.session import Session
from apportion.state import check

_PENDING = GROUP_PENDING
_QUEUE = attrgetter("queue")
_PHASE = attrgetter("phase")

#: the memo's entry: per queue, the set of quiet uids the last session's visits held and its first uid
FIRSTS_MEMO = "enqueue.quiet-firsts"

#: the queues with a job (in the order of their first job's uid), each one's pending jobs in uid order,
#: and every pending job in uid order
Backlog = tuple[list[QueueInfo], dict[str, list[JobInfo]], list[JobInfo]]


def check_carried(ssn: Session, carried: Carried) -> None:
    """The self-check: the backlog carried from the last open is the pass over every job's."""
    queues, pending, size, all_min, _ = carried
    ref_queues, ref_pending, ref_backlog = backlog_reference(ssn)
    if (len(queues) != len(ref_queues) or not all(map(is_, queues, ref_queues)) or size != len(ref_backlog)
            or all_min != all(job.min_resources is not None for job in ref_backlog)
            or [(q, list(map(id, js))) for q, js in pending.items()]
            != [(q, list(map(id, js))) for q, js in ref_pending.items()]):
        raise check.StateCheckError(f"{check.ENV}: enqueue's backlog carried from the last open differs from "
                                    "its pass over every job")


def backlog_of(ssn: Session, lean: bool = True, carry_firsts: bool = True) -> Backlog:
    """What enqueue starts from (`backlog_reference`'s answer), from the jobs the actions visit.

    Every Pending job is visited (a quiet job is admitted, K15), so the pending lists need only the
    visited jobs; a queue's first job is the first of its visited jobs or of its quiet ones not moved
    (`JobVisits.quiet_firsts`), whichever uid is smaller. The queues' order matters (the reference
    picker scans them in list order, and an open tie's order is cyclic), so they are sorted by that uid.
    A session that can admit nothing then costs its Pending jobs and one pass over the queues, not a
    sorted pass over every job."""
    visits = ssn.visits
    if not visits.active:
        return backlog_reference(ssn)
    first = quiet_firsts(ssn, carry_firsts)
    out = _backlog_by_one_pass(ssn, first) if lean else _backlog_by_loops(ssn, first)
    if check.enabled():
        queues, ordered, backlog = out
        ref = backlog_reference(ssn)
        if (ref[0] != queues or ref[2] != backlog
                or [(q, [j.uid for j in js]) for q, js in ref[1].items()]
                != [(q, [j.uid for j in js]) for q, js in ordered.items()]):
            raise check.StateCheckError(f"{check.ENV}: enqueue's backlog from the visited jobs differs from "
                                        "its pass over every job")
    return out


def _backlog_by_loops(ssn: Session, first: dict[str, str]) -> Backlog:
    """`backlog_of`'s answer, the pending jobs grouped and the queues ordered one at a time."""
    jobs = ssn.jobs
    uids = ssn.visits.visit()
    visited = list(map(jobs.__getitem__, uids))
    names = list(map(_QUEUE, visited))
    # the visits come in uid order: a queue's first visited job is the first one met, so the last one
    # written when they are met backwards
    visited_first = dict(zip(reversed(names), reversed(uids)))
    pending_mask = list(map(is_, map(_PHASE, visited), repeat(_PENDING)))
    backlog = list(compress(visited, pending_mask))
    pending: dict[str, list[JobInfo]] = {}
    for job, name in zip(backlog, compress(names, pending_mask)):
        mine = pending.get(name)
        if mine is None:
            mine = pending[name] = []
        mine.append(job)
    return _ordered(ssn, first, visited_first, pending, backlog)


def _backlog_by_one_pass(ssn: Session, first: dict[str, str]) -> Backlog:
    """`_backlog_by_loops`' answer from one pass over the visited jobs: a queue's first visited job is
    the first one met (the visits come in uid order), and a Pending job joins its queue's list and the
    backlog as it is met (each list in uid order). The loops' maps over the visited jobs cost more than
    this pass (`operator.attrgetter` is not specialised as a slot's attribute read is)."""
    jobs = ssn.jobs
    pending: dict[str, list[JobInfo]] = {}
    visited_first: dict[str, str] = {}
    backlog: list[JobInfo] = []
    for uid in ssn.visits.visit():
        job = jobs[uid]
        name = job.queue
        if name not in visited_first:
            visited_first[name] = uid
        if job.phase is _PENDING:
            backlog.append(job)
            mine = pending.get(name)
            if mine is None:
                pending[name] = [job]
            else:
                mine.append(job)
    return _ordered(ssn, first, visited_first, pending, backlog)


def _ordered(ssn: Session, first: dict[str, str], visited_first: dict[str, str],
             pending: dict[str, list[JobInfo]], backlog: list[JobInfo]) -> Backlog:
    """The backlog's queues in the order of their first uids (the quiet jobs' and the visited ones'),
    each with its pending jobs, as the reference fills them (the votes read the rest of the backlog in
    that order); queues the session does not know are left out, and their jobs with them."""
    for name, uid in visited_first.items():
        held = first.get(name)
        if held is None or uid < held:
            first[name] = uid
    known = ssn.queues
    queues: list[QueueInfo] = []
    ordered: dict[str, list[JobInfo]] = {}
    for name in sorted(first, key=first.__getitem__):
        queue = known.get(name)
        if queue is not None:
            queues.append(queue)
            ordered[name] = pending.get(name) or []
    if any(name not in known for name in pending):
        backlog = [job for job in backlog if job.queue in known]
    return queues, ordered, backlog


def quiet_firsts(ssn: Session, carry: bool = True) -> dict[str, str]:
    """`JobVisits.quiet_firsts`, with each queue's first uid kept in the memo with the set of quiet uids
    it was taken from: a set the visits hold is never changed once held (a session copies it before
    a change, framework/job_visits.py), so while a queue's set is the same object its first uid is the
    one kept, and only the queues whose quiet jobs changed are searched (K33)."""
    visits = ssn.visits
    memo = ssn.memo
    if memo is None or not visits.active or visits.moved or not carry:
        return visits.quiet_firsts()
    kept = memo.get(FIRSTS_MEMO)
    if not isinstance(kept, dict):
        kept = {}
    first: dict[str, str] = {}
    now: dict[str, tuple[set[str], str]] = {}
    for queue, uids in visits.by_queue.items():
        held = kept.get(queue)
        if held is None or held[0] is not uids:
            if not uids:
                continue
            held = (uids, min(uids))
        now[queue] = held
        first[queue] = held[1]
    memo[FIRSTS_MEMO] = now
    if check.enabled() and first != visits.quiet_firsts():
        raise check.StateCheckError(f"{check.ENV}: enqueue's first quiet jobs kept per queue differ from "
                                    "the visits' own")
    return first


def backlog_reference(ssn: Session) -> Backlog:
    """What enqueue starts from, by a pass over every job in uid order (the reference)."""
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
    return queues, pending, backlog
