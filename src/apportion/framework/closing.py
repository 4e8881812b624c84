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
K12). A job that reached it so but for its explanations keeps the last close's phase and conditions and
has its event made again (K25). Under APPORTION_CHECK_STATE=1 every carried close is computed in full
as well and compared.

A session whose `why_pending` is off (a forecast's forward run, docs/semantics.md F6) makes no why-pending
texts: no event and no pending tasks' explanations, so the explanations decide nothing here; a job's close
is carried whenever the job reached close as it reached the last one but for its explanations. Closes
made so are kept apart from closes with texts (`Closes.texts`): neither carries the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from typing import Any, Protocol

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo
from apportion.cluster.snapshot import JobDelta, Snapshot
from apportion.framework.close_texts import close_texts, job_event, tasks_explained
from apportion.framework.conf import SchedulerConf
from apportion.framework.interface import Plugin
from apportion.lean_dataclass import dataclass
from apportion.state import check

#: the hook a plugin without its own close hook inherits
_NO_HOOK = Plugin.on_session_close


class Session(Protocol):
    """What closing reads and writes of the session (framework/session.py's Session)."""

    uid: str
    conf: SchedulerConf
    memo: dict[str, Any] | None
    snapshot: Snapshot
    jobs: dict[str, JobInfo]
    explanations: dict[str, list[str]]
    plugins: list[tuple[Any, Plugin[Any]]]
    closing: list[JobInfo]
    why_pending: bool

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        """The session's task order."""
        ...


class Event(Protocol):
    """An event as the session reports it (framework/session.py's Event)."""

    message: str


#: the memo's entry: the last session's closes (a `Closes`)
CLOSE_MEMO = "session.closes"
#: the memo's entry: the conf object of the last session and its `conf_key`
CONF_KEY_MEMO = "session.closes.conf"

#: the memo's entry: the sessions opened over the memo one after the other and ended without a close
#: (a forecast's skipped sessions, F1/F2): (the snapshot before the first of them, the snapshot of the
#: last, every uid their jobs' deltas named up to the end of each); see `note_unclosed`
UNCLOSED_MEMO = "session.unclosed"

#: a condition as JobInfo.conditions holds it, its type first: (type, status, reason, message, session id)
RawCondition = tuple[str, str, str, str, str]


def note_unclosed(memo: dict[str, Any] | None, delta: JobDelta | None) -> None:
    """Record that a session over `memo`, whose snapshot's jobs' delta is `delta`, ends without a close.

    A pass that last looked at every job of snapshot `at` (close, the result's PodGroup phases) may then
    look, at the next session, at what `looks_since` gives instead of at every job: a job no delta of
    the sessions in between names, nor their live log or notes as they stood when each ended, is the
    object it was at `at` and nothing changed it since (K17 applied session after session: what a
    session changes after its delta was recorded here is in the next delta's `changed`, as the cache
    drains its log there). A gap in the chain (a session neither closed nor noted) drops it."""
    if memo is None:
        return
    if delta is None or delta.since is None:
        memo.pop(UNCLOSED_MEMO, None)
        return
    names = delta.changed | delta.gone | delta.log | delta.notes
    held = memo.get(UNCLOSED_MEMO)
    if held is not None and held[1] == delta.since:
        held[2].update(names)
        memo[UNCLOSED_MEMO] = (held[0], delta.snapshot, held[2])
    else:
        memo[UNCLOSED_MEMO] = (delta.since, delta.snapshot, names)


def looks_since(memo: dict[str, Any] | None, delta: JobDelta, at: int | None) -> set[str] | None:
    """`delta.since_last(at)`, or when sessions ended without a close since snapshot `at` and were
    noted (`note_unclosed`), the uids to look at again across them; None when neither holds."""
    look = delta.since_last(at)
    if look is not None or at is None or memo is None or delta.since is None:
        return look
    held = memo.get(UNCLOSED_MEMO)
    if held is None or held[0] != at or held[1] != delta.since:
        return None
    look = delta.since_last(delta.since)
    assert look is not None
    look |= held[2]
    return look


@dataclass(slots=True)
class JobClose:
    """One job's close, with what it was computed from; never changed once made (a close makes a new
    one). Not frozen: a frozen dataclass's constructor costs twice as much, and a close makes one for
    every job whose explanations moved (every waiting job's refusal text, session after session)."""

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
    """The closes of the last session over a memo, per job uid, for one conf's plugins. The uids are
    in the session's job order when every job was looked at; a close from the jobs' delta keeps the
    last session's order and adds the new jobs after it."""

    conf_key: str
    jobs: dict[str, JobClose]
    session: str = ""
    #: the snapshot the session was over (`JobDelta.snapshot`; None: unknown)
    snapshot: int | None = None
    #: uids of the jobs whose close a session carries only after comparing the explanations (their
    #: own, their pending tasks' or fit errors were not empty): looked at by every close
    marked: set[str] = field(default_factory=set)
    #: per uid of a job with an event, the event
    events: dict[str, Any] = field(default_factory=dict)
    #: whether the closes made the why-pending texts (`Session.why_pending`): a close carries only
    #: closes made as it makes its own
    texts: bool = True


def conf_key(ssn: Session) -> str:
    """What of the conf a job's close depends on: the plugins (close hooks, task order) with their
    switches and arguments, in tier order."""
    return repr(ssn.conf.tiers)


def _conf_key(ssn: Session, memo: dict[str, Any]) -> str:
    """`conf_key`, worked out once per conf object over a memo (a caller that carries a memo never
    edits a conf it sessions with, as `engine.run_cache_session` assumes too)."""
    held = memo.get(CONF_KEY_MEMO)
    if held is not None and held[0] is ssn.conf:
        key: str = held[1]
        if check.enabled() and key != conf_key(ssn):
            raise check.StateCheckError(f"{check.ENV}: the conf's close key kept over the memo differs from "
                                        "the conf's own (a conf edited between sessions)")
        return key
    key = conf_key(ssn)
    memo[CONF_KEY_MEMO] = (ssn.conf, key)
    return key


def _per_job(plugin: Any) -> bool:
    """Whether a plugin's close hook, if it has one, writes per job as Plugin.on_session_close asks
    (it says so with `closes_per_job = True`)."""
    hook = getattr(type(plugin), "on_session_close", None)
    return hook is None or hook is _NO_HOOK or bool(getattr(plugin, "closes_per_job", False))


def _explained(msgs: list[str] | None) -> tuple[str, ...]:
    return tuple(msgs) if msgs else ()


class Close:
    """One session's close: `split` before the close hooks, `finish` after them."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        memo = ssn.memo
        if memo is not None and not all(_per_job(p) for _, p in ssn.plugins):
            memo.pop(CLOSE_MEMO, None)
            memo = None  # a close hook that does not keep to the contract: every job is closed in full
        self.memo = memo
        key = _conf_key(ssn, memo) if memo is not None else ""
        #: whether this close makes the why-pending texts (F6: a forecast's forward run makes none)
        self.texts = texts = ssn.why_pending
        last = memo.get(CLOSE_MEMO) if memo is not None else None
        self.last: Closes | None = (last if isinstance(last, Closes) and last.conf_key == key and last.texts == texts
                                    else None)
        self.before: dict[str, JobClose] = self.last.jobs if self.last is not None else {}
        #: whether the self-check is on (asked once, not per job)
        self.checking = check.enabled()
        delta = ssn.snapshot.jobs_delta
        #: this session's closes (the full ones filled in by `finish`)
        self.closes = Closes(key, {}, ssn.uid, delta.snapshot if delta is not None else None, texts=texts)
        #: the jobs closed in full (what close hooks visit), with their phase before close
        self.full: list[JobInfo] = []
        self.phase_in: list[PodGroupPhase] = []
        self.carried: list[JobClose] = []
        #: the last closes of jobs that reached this close as they reached the last one but for their
        #: explanations (`_carries_but_explained`): their phase and conditions are carried, their event
        #: is made again
        self.reexplained: list[JobClose] = []
        #: with the jobs' delta: this close's events per uid and marked jobs (see Closes), else None
        self._events: dict[str, Any] | None = None
        self._marked: set[str] | None = None

    def split(self) -> list[JobInfo]:
        """Sort the jobs into the carried closes and the jobs to close in full (returned). With the
        snapshot's jobs delta from the last close's snapshot, only the jobs the delta names, the jobs
        explained in this session and those the last close marked are looked at: every other job is
        carried (docs/semantics.md K17); without the texts (F6) the jobs explained are not looked at
        for that, and a job marked is one with fit errors. `split_reference` looks at every job."""
        last = self.last
        delta = self.ssn.snapshot.jobs_delta
        look = looks_since(self.memo, delta, last.snapshot) if last is not None and delta is not None else None
        if look is None:
            return self.split_reference()
        assert last is not None and delta is not None
        jobs = self.ssn.jobs
        explanations = self.ssn.explanations
        look |= last.marked
        look |= delta.notes  # fit errors recorded in this session
        texts = self.texts
        if texts:
            look.update(k for k in explanations if k in jobs)
        if self.checking:
            self._check_look(look)
        before = self.before
        checking = self.checking
        full, phase_in, carried, reexplained = self.full, self.phase_in, self.carried, self.reexplained
        kept: dict[str, JobClose | None] = dict(before)
        events = dict(last.events)
        marked = set(last.marked)
        for uid in sorted(look):
            job = jobs.get(uid)
            if job is None:
                kept.pop(uid, None)
                events.pop(uid, None)
                marked.discard(uid)
                continue
            e = before.get(uid)
            # the job's own part first, once; its explanations then decide carried or re-explained
            # (together: `_carries`)
            if e is not None and _carries_but_explained(e, job):
                if not texts or _same_explanations(e, job, explanations, checking):
                    carried.append(e)
                else:
                    reexplained.append(e)
                    kept[uid] = None
            else:
                full.append(job)
                phase_in.append(job.phase)
                kept[uid] = None
        self.closes.jobs = kept  # type: ignore[assignment]  # the Nones are filled in by finish
        self._events, self._marked = events, marked
        return full

    def _carries(self, e: JobClose, job: JobInfo, explanations: Mapping[str, list[str]],
                 checking: bool | None = None) -> bool:
        """Whether the job's last close is this one's (without the texts, its explanations do not count)."""
        return _carries_but_explained(e, job) and (
            not self.texts or _same_explanations(e, job, explanations, checking))

    def _check_look(self, look: set[str]) -> None:
        """The self-check: every job outside `look` is one the full split carries."""
        explanations = self.ssn.explanations
        before = self.before
        for uid, job in self.ssn.jobs.items():
            if uid not in look and not ((e := before.get(uid)) is not None and self._carries(e, job, explanations)):
                raise check.StateCheckError(f"{check.ENV}: the close of job {uid} would be carried from the jobs' "
                                            "delta, but the full split closes it in full")
        if self.before.keys() - self.ssn.jobs.keys() - look:
            raise check.StateCheckError(f"{check.ENV}: a job gone since the last close is not in the jobs' delta")

    def split_reference(self) -> list[JobInfo]:
        """`split` looking at every job (the reference)."""
        self._events = None
        self._marked = None
        before = self.before
        explanations = self.ssn.explanations
        checking = self.checking
        full, phase_in, carried, reexplained = self.full, self.phase_in, self.carried, self.reexplained
        kept: dict[str, JobClose | None] = {}
        for uid, job in self.ssn.jobs.items():
            e = before.get(uid)
            if e is not None and self._carries(e, job, explanations, checking):
                carried.append(e)
            elif e is not None and _carries_but_explained(e, job):
                reexplained.append(e)
                e = None
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
        closes = self.closes
        events, marked = self._events, self._marked
        checking = self.checking
        if events is None and closes.snapshot is not None:
            events, marked = {}, set()  # the first close a next one may carry from the jobs' delta
            for e in self.carried:
                _note(e, events, marked)
        texts = self.texts
        msg: str | None = None
        pending_texts: tuple[tuple[str, ...], ...] = ()
        for job, phase_in in zip(self.full, self.phase_in):
            # closed in full: the close hooks' conditions are on the job, which a snapshot clears
            job.note_change()
            job.set_phase(phase_of(job))
            if texts:
                msg, pending_texts = close_texts(ssn, job, checking)
            kept[job.uid] = JobClose(
                job=job, version=job.version, phase_in=phase_in, fit_errors=job.job_fit_errors,
                explained=_explained(explanations.get(job.uid)) if texts else (), tasks_explained=pending_texts,
                session=sid, phase=job.phase, conditions=tuple((t, *c) for t, c in job.conditions.items()),
                event=None if msg is None else make_event(job.uid, msg))
            if events is not None and marked is not None:
                events.pop(job.uid, None)
                marked.discard(job.uid)
                _note(kept[job.uid], events, marked)
        for e in self.reexplained:
            # the hooks wrote nothing from the explanations (Plugin.on_session_close) and the phase
            # follows from the job and its conditions: only the event reads them
            job = e.job
            if job.phase is not e.phase:
                job.set_phase(e.phase)
            uid = job.uid
            msg, pending_texts = close_texts(ssn, job, checking)
            # positional: JobClose's field order
            again = kept[uid] = JobClose(
                job, e.version, e.phase_in, e.fit_errors, _explained(explanations.get(uid)),
                pending_texts, e.session, e.phase, e.conditions,
                None if msg is None else make_event(uid, msg))
            if events is not None and marked is not None:
                events.pop(uid, None)
                marked.discard(uid)
                _note(again, events, marked)
        if events is not None and marked is not None:
            closes.events, closes.marked = events, marked
        else:
            closes.snapshot = None  # nothing for a next close to carry from
        # A carried job's phase is set; its JobInfo.conditions are left as the snapshot gave them (empty):
        # writing this session's id into each would visit every job. The session's conditions are read
        # from `closes` (ClosedConditions).
        for e in self.carried:
            if e.job.phase is not e.phase:
                e.job.set_phase(e.phase)
        if checking:
            # with the jobs' delta most carried closes were not looked at: every one is checked
            carried = (self.carried + [kept[e.job.uid] for e in self.reexplained] if self._events is None
                       else [e for e in kept.values() if e.session != sid])
            if carried:
                _check(ssn, carried, phase_of, texts)
        if self.memo is not None:
            self.memo[CLOSE_MEMO] = self.closes
        if self.reexplained:
            # after close, `closing` names every job whose close this session made (a result's
            # `recomputed`): the re-explained ones have a new event
            ssn.closing = self.full + [e.job for e in self.reexplained]

    def events(self) -> list[Any]:
        """The jobs' events, in uid order."""
        if self._events is not None:
            return [self._events[uid] for uid in sorted(self._events)]
        kept = self.closes.jobs
        out = []
        for uid in sorted(kept):
            ev = kept[uid].event
            if ev is not None:
                out.append(ev)
        return out


def _carries_but_explained(e: JobClose, job: JobInfo) -> bool:
    """Whether a job reaches close as it reached the last one over the memo but for the explanations
    (its own or its pending tasks'): the close hooks and the phase do not read them, so the last close's
    phase and conditions are this one's and only its event is made again. A waiting job's refusal text
    names the queue's use, which moves with every completion (benchmarks/README.md)."""
    return e.job is job and e.version == job.version and e.phase_in is job.phase and e.fit_errors == job.job_fit_errors


def _same_explanations(e: JobClose, job: JobInfo, explanations: Mapping[str, list[str]],
                       checking: bool | None = None) -> bool:
    """Whether the job's explanations (its own and its pending tasks') are those its last close read."""
    return (e.explained == _explained(explanations.get(job.uid))
            and (not e.tasks_explained or e.tasks_explained == tasks_explained(job, explanations, checking)))


def _note(e: JobClose, events: dict[str, Any], marked: set[str]) -> None:
    """Record a job's close among the events and the jobs every close looks at (`Closes`)."""
    if e.event is not None:
        events[e.job.uid] = e.event
    if e.explained or e.tasks_explained or e.fit_errors:
        marked.add(e.job.uid)


def _check(ssn: Session, carried: list[JobClose], phase_of: Callable[[JobInfo], PodGroupPhase],
           texts: bool = True) -> None:
    """The self-check: every carried close computed in full, as if nothing were carried (its event
    too when the closes make the texts)."""
    jobs = [e.job for e in carried]
    sid = ssn.uid
    got = {e.job.uid: (e.phase, {t: (st, reason, msg, sid if tid == e.session else tid)
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
        msg = job_event(ssn, job) if texts else None
        if want != got[job.uid] or msg != (None if e.event is None else e.event.message):
            raise check.StateCheckError(
                f"{check.ENV}: the close of job {job.uid} carried over from the last session ({got[job.uid]}, "
                f"event {e.event!r}) differs from the close computed in full ({want}, event {msg!r})")
        job.conditions.clear()  # as the carried close leaves them


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
