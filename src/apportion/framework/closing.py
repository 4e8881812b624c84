"""Closing a session: the plugins' close hooks (gang's conditions), PodGroup phases and the why-pending
events, job by job, with the close of a job nothing touched carried over from the last session.

Follows `CloseSession` of `framework/framework.go` (the plugins' OnSessionClose, then the job status
write-back of `framework/job_updater.go`). A job's close is a function of the job alone: its tasks'
statuses, nodes and last transactions, its phase, its minimums, its fit errors, the explanations
recorded for it and its pending tasks, the conf's plugins, and the session id that conditions carry
(close hooks must keep to that: `Plugin.on_session_close`). A caller that sessions the same cluster
again and again hands the same JobInfo out again for a job that did not change
(`SchedulerCache.snapshot(keep=True)`); when such a job reaches close as it reached the last close over
the same memo (same task version, phase, fit errors and explanations, same plugins), its close is the
last one's, with this session's id as the conditions' transition id (docs/semantics.md, cluster state
K12). Under APPORTION_CHECK_STATE=1 every carried close is computed in full as well and compared.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.framework.conf import SchedulerConf
from apportion.framework.interface import Plugin
from apportion.state import check

#: the hook a plugin without its own close hook inherits
_NO_HOOK = Plugin.on_session_close


class Session(Protocol):
    """What closing reads and writes of the session (framework/session.py's Session)."""

    uid: str
    conf: SchedulerConf
    memo: dict[str, Any] | None
    jobs: dict[str, JobInfo]
    explanations: dict[str, list[str]]
    plugins: list[tuple[Any, Plugin[Any]]]
    closing: list[JobInfo]

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        """The session's task order."""
        ...


class Event(Protocol):
    """An event as the session reports it (framework/session.py's Event)."""

    message: str


#: the memo's entry: the last session's closes (a `Closes`)
CLOSE_MEMO = "session.closes"

#: a condition as JobInfo.conditions holds it, its type first: (type, status, reason, message, session id)
RawCondition = tuple[str, str, str, str, str]


@dataclass(frozen=True, slots=True)
class JobClose:
    """One job's close, with what it was computed from."""

    job: JobInfo
    #: the job's task version, phase, fit errors and explanations (its own, and its pending tasks' in
    #: task order) as close found them
    version: int
    phase_in: PodGroupPhase
    fit_errors: str
    explained: tuple[str, ...]
    tasks_explained: tuple[tuple[str, ...], ...]
    #: the session that computed it: its id in a condition stands for the closing session's
    session: str
    #: what close decided: the phase, the conditions the hooks wrote, the event (or None)
    phase: PodGroupPhase
    conditions: tuple[RawCondition, ...]
    event: Event | None


@dataclass
class Closes:
    """The closes of the last session over a memo, per job uid (in the session's job order), for one
    conf's plugins."""

    conf_key: str
    jobs: dict[str, JobClose]
    session: str = ""


def conf_key(ssn: Session) -> str:
    """What of the conf a job's close depends on: the plugins (close hooks, task order) with their
    switches and arguments, in tier order."""
    return repr(ssn.conf.tiers)


def _per_job(plugin: Any) -> bool:
    """Whether a plugin's close hook, if it has one, writes per job as Plugin.on_session_close asks
    (it says so with `closes_per_job = True`)."""
    hook = getattr(type(plugin), "on_session_close", None)
    return hook is None or hook is _NO_HOOK or bool(getattr(plugin, "closes_per_job", False))


def _explained(msgs: list[str] | None) -> tuple[str, ...]:
    return tuple(msgs) if msgs else ()


#: the name of a job's pending task keys in `JobInfo.derive`
PENDING_KEYS = "closing.pending_keys"


def _pending_keys(job: JobInfo) -> tuple[str, ...]:
    return tuple(t.key for t in job.tasks.values() if t.status is TaskStatus.PENDING)


def _tasks_explained(job: JobInfo, explanations: Mapping[str, list[str]]) -> tuple[tuple[str, ...], ...]:
    """The explanations of the job's pending tasks, in task order (empty when none is pending)."""
    if not job.counts.get(TaskStatus.PENDING):
        return ()
    # the keys are kept on the job while its task statuses are the same (a waiting job closed in full
    # session after session would otherwise name every task again), and most have no explanation
    keys = job.derive(PENDING_KEYS, None, functools.partial(_pending_keys, job))
    if explanations.keys().isdisjoint(keys):
        out: tuple[tuple[str, ...], ...] = ((),) * len(keys)
    else:
        out = tuple(tuple(explanations.get(k, ())) for k in keys)
    if check.enabled() and out != tasks_explained_reference(job, explanations):
        raise check.StateCheckError(f"{check.ENV}: job {job.uid}'s pending tasks' explanations from its kept "
                                    "task keys differ from a walk of its tasks")
    return out


def tasks_explained_reference(job: JobInfo, explanations: Mapping[str, list[str]]) -> tuple[tuple[str, ...], ...]:
    """`_tasks_explained` walking the tasks each time (the reference its property test compares with)."""
    if not job.counts.get(TaskStatus.PENDING):
        return ()
    return tuple(tuple(explanations.get(t.key, ())) for t in job.tasks.values() if t.status is TaskStatus.PENDING)


class Close:
    """One session's close: `split` before the close hooks, `finish` after them."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        memo = ssn.memo
        if memo is not None and not all(_per_job(p) for _, p in ssn.plugins):
            memo.pop(CLOSE_MEMO, None)
            memo = None  # a close hook that does not keep to the contract: every job is closed in full
        self.memo = memo
        key = conf_key(ssn) if memo is not None else ""
        last = memo.get(CLOSE_MEMO) if memo is not None else None
        self.before: dict[str, JobClose] = last.jobs if isinstance(last, Closes) and last.conf_key == key else {}
        #: this session's closes, in job order (the full ones filled in by `finish`)
        self.closes = Closes(key, {}, ssn.uid)
        #: the jobs closed in full (what close hooks visit), with their phase before close
        self.full: list[JobInfo] = []
        self.phase_in: list[PodGroupPhase] = []
        self.carried: list[JobClose] = []

    def split(self) -> list[JobInfo]:
        """Sort the jobs into the carried closes and the jobs to close in full (returned)."""
        before = self.before
        explanations = self.ssn.explanations
        full, phase_in, carried = self.full, self.phase_in, self.carried
        kept: dict[str, JobClose | None] = {}
        for uid, job in self.ssn.jobs.items():
            e = before.get(uid)
            if (e is not None and e.job is job and e.version == job.version and e.phase_in is job.phase
                    and e.fit_errors == job.job_fit_errors
                    and e.explained == _explained(explanations.get(uid))
                    and (not e.tasks_explained or e.tasks_explained == _tasks_explained(job, explanations))):
                carried.append(e)
            else:
                full.append(job)
                phase_in.append(job.phase)
                e = None
            kept[uid] = e
        self.closes.jobs = kept  # type: ignore[assignment]  # the Nones are filled in by finish
        return full

    def finish(self, phase_of: Callable[[JobInfo], PodGroupPhase], make_event: Callable[[str, str], Any]) -> None:
        """After the close hooks: the phases and events of the jobs closed in full, the carried closes
        applied, and the closes kept for the next session over the memo."""
        ssn = self.ssn
        sid = ssn.uid
        explanations = ssn.explanations
        kept = self.closes.jobs
        for job, phase_in in zip(self.full, self.phase_in):
            # closed in full: the close hooks' conditions are on the job, which a snapshot clears
            job.note_change()
            job.set_phase(phase_of(job))
            msg = job_event(ssn, job)
            kept[job.uid] = JobClose(
                job=job, version=job.version, phase_in=phase_in, fit_errors=job.job_fit_errors,
                explained=_explained(explanations.get(job.uid)), tasks_explained=_tasks_explained(job, explanations),
                session=sid, phase=job.phase, conditions=tuple((t, *c) for t, c in job.conditions.items()),
                event=None if msg is None else make_event(job.uid, msg))
        # A carried job's phase is set; its JobInfo.conditions are left as the snapshot gave them (empty):
        # writing this session's id into each would visit every job. The session's conditions are read
        # from `closes` (ClosedConditions).
        for e in self.carried:
            if e.job.phase is not e.phase:
                e.job.set_phase(e.phase)
        if check.enabled() and self.carried:
            _check(ssn, self.carried, phase_of)
        if self.memo is not None:
            self.memo[CLOSE_MEMO] = self.closes

    def events(self) -> list[Any]:
        """The jobs' events, in uid order."""
        kept = self.closes.jobs
        out = []
        for uid in sorted(kept):
            ev = kept[uid].event
            if ev is not None:
                out.append(ev)
        return out


def _check(ssn: Session, carried: list[JobClose], phase_of: Callable[[JobInfo], PodGroupPhase]) -> None:
    """The self-check: every carried close computed in full, as if nothing were carried."""
    jobs = [e.job for e in carried]
    sid = ssn.uid
    got = {e.job.uid: (e.job.phase, {t: (st, reason, msg, sid if tid == e.session else tid)
                                     for t, st, reason, msg, tid in e.conditions}) for e in carried}
    for e in carried:
        e.job.conditions.clear()
        e.job.phase = e.phase_in
    was = ssn.closing
    ssn.closing = jobs
    try:
        for _, plugin in ssn.plugins:
            plugin.on_session_close(ssn)
    finally:
        ssn.closing = was
    for e in carried:
        job = e.job
        job.phase = phase_of(job)
        want = (job.phase, dict(job.conditions))
        msg = job_event(ssn, job)
        if want != got[job.uid] or msg != (None if e.event is None else e.event.message):
            raise check.StateCheckError(
                f"{check.ENV}: the close of job {job.uid} carried over from the last session ({got[job.uid]}, "
                f"event {e.event!r}) differs from the close computed in full ({want}, event {msg!r})")
        job.conditions.clear()  # as the carried close leaves them


def job_event(ssn: Session, job: JobInfo) -> str | None:
    """The Unschedulable event's message of a closed job (None: no event): why it is Pending, or why
    tasks were left pending."""
    uid = job.uid
    job_msgs = ssn.explanations.get(uid, [])
    if job.phase is PodGroupPhase.PENDING and job.tasks:
        return "; ".join(job_msgs) or "podgroup is Pending: not admitted by enqueue in this session"
    if not job.counts.get(TaskStatus.PENDING):
        return None
    pending: list[TaskInfo] = sorted(
        (t for t in job.tasks.values() if t.status is TaskStatus.PENDING),
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
        msgs = [f"{len(pending)} task(s) left pending: no action of this session reached them"]
    return "; ".join(msgs)


class ClosedConditions(Mapping[str, list[Any]]):
    """A session's conditions per podgroup that has some, as condition objects made when a podgroup's
    are read (most readers, the simulator among them, read none): a view over the session's closes,
    with the session's id where a carried close names the session that computed it."""

    def __init__(self, closes: Closes, make: Callable[[RawCondition], Any]) -> None:
        self.closes, self.make = closes, make
        self.done: dict[str, list[Any]] = {}

    def __getitem__(self, uid: str) -> list[Any]:
        got = self.done.get(uid)
        if got is None:
            e = self.closes.jobs[uid]
            if not e.conditions:
                raise KeyError(uid)
            sid = self.closes.session
            got = self.done[uid] = [self.make(c if c[4] != e.session else (*c[:4], sid)) for c in e.conditions]
        return got

    def __iter__(self) -> Iterator[str]:
        return (uid for uid, e in self.closes.jobs.items() if e.conditions)

    def __len__(self) -> int:
        return sum(1 for e in self.closes.jobs.values() if e.conditions)
