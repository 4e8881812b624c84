"""The quiet test (forecast/quiet.py, semantics F1 and F2) kept from session to session.

`session_verdict` walks every job of the session (1,000 here) for each of its tests: the phase close
gives it, its best-effort and pipelined tasks, what allocate could place of it, whether it waits
for enqueue. Each of those is a function of the job object as it opened (its task statuses, phase,
conditions) and of a few things of the session that rarely move (the node table's columns, the queue
names, which actions run, whether gang decides). A forecast asks the test of every session, and
between two sessions the snapshot's jobs' delta (K17) names every job that can be anything but the
object the last session saw unchanged. So `QuietTest` keeps each job's facts and works them out
again only for the jobs the delta names (and for a job with an Unschedulable condition, whose close
reads the session's uid), and keeps the sums over the jobs the tests read:

* the phases close would move (uid -> phase);
* the jobs with a pending best-effort or a pipelined task; the Pending jobs; the backlog enqueue
  would vote on (Pending, in a known queue) and those of it without minResources;
* per smallest request (allocate's bound, `places_at_most`), the jobs allocate would try with it,
  each with the fewest placements that would keep something (1, or with gang what it lacks of
  minMember): the session places something only if, for some request, the bound over the table's
  FutureIdle reaches the least of those (and the job has that many pending tasks).

Only the bound over FutureIdle (one per distinct request) and capacity's backlog test are asked
afresh each session, the latter of one job per queue and minResources: capacity's vote on a job reads
its queue's levels and its minResources alone (K14: a level's verdict per minResources, shared by the
jobs that ask it), and the test asks only whether any job would be admitted, so one job of each such
pair gives the answer all of them give (the refusals' explanations, which a skipped session does not
keep and enqueue records again in a session that runs, are the representatives' alone). Everything else is worked out from scratch when the delta does not start at
the snapshot the test last saw, or a session-wide input moved. Under `APPORTION_CHECK_STATE=1` every
answer is compared with `session_verdict` over every job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

import numpy as np

from apportion.actions.pass_over import PassOver, lacking
from apportion.cluster.model import (
    PENDING,
    PIPELINED,
    JobInfo,
    PodGroupPhase,
    TaskInfo,
)
from apportion.forecast.quiet import (
    FactsContext,
    close_phase,
    gang_decides,
    least_request,
    places_at_most,
    proof_blocker,
    session_verdict,
)
from apportion.forecast.quiet_whole import WholeRequests, whole_table
from apportion.framework.interface import Plugin
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.state import check


@dataclass(slots=True)
class Facts:
    """What the tests read of one job as it opened (see the module)."""

    moved: PodGroupPhase | None
    unschedulable: bool
    best_effort: bool
    pending: bool
    #: a backlog job's queue and minResources (`_admission_key`; None: not in the backlog)
    admission: tuple[object, ...] | None
    no_min_resources: bool
    #: allocate's bound: the smallest request's bytes and row, and the fewest placements that keep
    #: something (None: the job can keep nothing, whatever fits)
    key: bytes | None
    least: np.ndarray | None
    need: int
    #: the job object these were worked out on, and its task version and phase then
    job: JobInfo
    version: int
    phase: PodGroupPhase


@dataclass
class QuietTest:
    """The test a forecast simulator asks of each opened session (`Simulator.quiet`): None when the
    session may bind, pipeline, evict or admit, else the phases its close would move (uid -> phase;
    empty when it provably changes nothing at all; forecast/quiet.py), and counts of its answers."""

    #: sessions asked about; those that change nothing, and those that change only phases
    asked: int = 0
    quiet: int = 0
    phases_only: int = 0
    #: why the others ran, by the first reason found (for the benchmark's and the tests' reading)
    reasons: dict[str, int] = field(default_factory=dict)
    #: sessions whose facts were all worked out again (no delta from the last one asked, or a
    #: session-wide input moved)
    rebuilt: int = 0

    #: the snapshot number the facts were last brought up to, and the session-wide inputs then
    _at: int | None = None
    _inputs: tuple[object, ...] | None = None
    _facts: dict[str, Facts] = field(default_factory=dict)
    _moved: dict[str, PodGroupPhase] = field(default_factory=dict)
    _unschedulable: set[str] = field(default_factory=set)
    _best_effort: set[str] = field(default_factory=set)
    _pending: set[str] = field(default_factory=set)
    #: the backlog by queue and minResources (`_admission_key`)
    _backlog: dict[tuple[object, ...], set[str]] = field(default_factory=dict)
    _no_min: set[str] = field(default_factory=set)
    #: per request key: its row, and the jobs allocate would try with it (uid -> need)
    _rows: dict[bytes, np.ndarray] = field(default_factory=dict)
    _needs: dict[bytes, dict[str, int]] = field(default_factory=dict)
    #: the jobs a request of which (any task's) is not a whole amount below 2**50 (F4 needs none), and
    #: which request objects are whole (`WholeRequests`)
    _inexact: set[str] = field(default_factory=set)
    _whole_of: WholeRequests = field(default_factory=lambda: WholeRequests())

    def __call__(self, ssn: Session) -> dict[str, PodGroupPhase] | None:
        """The phases the opened session's close would move when its actions provably change nothing,
        else None (counted)."""
        why, phases = self.answer(ssn)
        self.count(why, phases)
        return None if why else phases

    def answer(self, ssn: Session) -> tuple[str, dict[str, PodGroupPhase]]:
        """`verdict`, compared under the self-check with `session_verdict` over every job."""
        why, phases = self.verdict(ssn)
        if check.enabled():
            want = session_verdict(ssn)
            if (why, phases) != want:
                raise check.StateCheckError(f"{check.ENV}: the quiet test kept from session to session answers "
                                            f"{(why, phases)}, the test over every job {want}")
        return why, phases

    def count(self, why: str, phases: dict[str, PodGroupPhase]) -> None:
        """Count one session's answer."""
        self.asked += 1
        if why:
            self.reasons[why] = self.reasons.get(why, 0) + 1
        elif phases:
            self.phases_only += 1
        else:
            self.quiet += 1

    def verdict(self, ssn: Session) -> tuple[str, dict[str, PodGroupPhase]]:
        """`session_verdict(ssn)`, from the facts kept (see the module)."""
        unproven, gang = proof_blocker(ssn)
        if unproven:
            return unproven, {}
        self._bring_up(ssn, gang)
        jobs = ssn.jobs

        def admits() -> bool:
            backlog = [jobs[uid] for uid in sorted(min(uids) for uids in self._backlog.values())]
            return ssn.enqueue_admissible(backlog) != []

        return self.decide(ssn.conf.actions, ssn.table.future_idle(), admits)

    def decide(self, actions: list[str], future: np.ndarray, admits: Callable[[], bool],
               places: Callable[[bytes, np.ndarray], int] | None = None,
               checking: bool | None = None) -> tuple[str, dict[str, PodGroupPhase]]:
        """The verdict from the facts as they stand, FutureIdle `future` and `admits()`, whether
        capacity's backlog test would admit one of the backlog's representatives (asked last).
        `places(key, least)`, when given, is `places_at_most(future, least)` kept over `future`
        (forecast/quiet_bound.py); compared with it under the self-check (`checking`: whether the
        self-check is on, when the caller has asked already)."""
        if self._pending and "allocate" in actions and "enqueue" not in actions:
            return "admission", {}  # allocate admits Pending jobs itself without enqueue
        phases = dict(self._moved)
        if "backfill" in actions and self._best_effort:
            return "backfill", {}
        if "allocate" in actions and self._needs:
            rows = self._rows
            checking = places is not None and (check.enabled() if checking is None else checking)
            for key, needs in self._needs.items():
                if not needs:
                    continue
                if places is None:
                    bound = places_at_most(future, rows[key])
                else:
                    bound = places(key, rows[key])
                    if checking and bound != places_at_most(future, rows[key]):
                        raise check.StateCheckError(f"{check.ENV}: the allocate bound kept row by row is {bound}, "
                                                    f"over every row {places_at_most(future, rows[key])}")
                if bound >= min(needs.values()):
                    return "placement", {}
        # asked last: with an answer other than "none" (a candidate, or no such test), enqueue asks
        # the same question first thing itself, on the same accounting
        if "enqueue" in actions and self._backlog and (self._no_min or admits()):
            return "admission", {}
        return "", phases

    def passed_over(self, ssn: Session) -> PassOver | None:
        """The jobs allocate may pass over in the opened session the test was just asked about and
        lets run (semantics F4; `hopeless_jobs`), or None."""
        return hopeless_jobs(self, ssn)

    # ----------------------------------------------------------------- the facts kept
    def _bring_up(self, ssn: Session, gang: Plugin[Session] | None) -> None:
        """The facts of every job of the session, worked out again for the jobs the delta names."""
        delta = ssn.snapshot.jobs_delta
        inputs = (tuple(ssn.table.columns), tuple(ssn.queues), gang is not None,
                  gang is not None and gang_decides(ssn), "enqueue" in ssn.enabled_actions)
        look = delta.since_last(self._at) if delta is not None and inputs == self._inputs else None
        self._at = None if delta is None else delta.snapshot
        self._inputs = inputs
        jobs = ssn.jobs
        decides, enqueue = bool(inputs[3]), bool(inputs[4])
        if look is None:
            self.rebuilt += 1
            for uid in list(self._facts):
                self.drop(uid)
            # every fact dropped: each job added, none to drop
            for uid, job in jobs.items():
                self.add(uid, job_facts(ssn, job, gang, decides, enqueue))
            return
        for uid in look | self._unschedulable:
            got = jobs.get(uid)
            self.drop(uid)
            if got is not None:
                self.add(uid, job_facts(ssn, got, gang, decides, enqueue))

    def drop(self, uid: str) -> None:
        """Forget the job's facts (and take them out of the sums)."""
        facts = self._facts.pop(uid, None)
        if facts is None:
            return
        self._inexact.discard(uid)
        self._moved.pop(uid, None)
        self._unschedulable.discard(uid)
        self._best_effort.discard(uid)
        self._pending.discard(uid)
        self._no_min.discard(uid)
        if facts.admission is not None:
            same = self._backlog[facts.admission]
            same.discard(uid)
            if not same:
                del self._backlog[facts.admission]
        if facts.key is not None:
            needs = self._needs[facts.key]
            del needs[uid]
            if not needs:
                del self._needs[facts.key]
                del self._rows[facts.key]

    def add(self, uid: str, facts: Facts, whole: bool | None = None) -> None:
        """Keep the job's facts (and count them into the sums). `whole`: whether every task's request
        is a whole amount below 2**50 (`WholeRequests`), when the caller knows it already."""
        self._facts[uid] = facts
        if not (self._whole_of(facts.job.tasks.values()) if whole is None else whole):
            self._inexact.add(uid)
        if facts.moved is not None:
            self._moved[uid] = facts.moved
        # each flag into its set (written out: asked for every job built again)
        if facts.unschedulable:
            self._unschedulable.add(uid)
        if facts.best_effort:
            self._best_effort.add(uid)
        if facts.pending:
            self._pending.add(uid)
        if facts.no_min_resources:
            self._no_min.add(uid)
        if facts.admission is not None:
            self._backlog.setdefault(facts.admission, set()).add(uid)
        if facts.key is not None:
            assert facts.least is not None
            self._rows.setdefault(facts.key, facts.least)
            self._needs.setdefault(facts.key, {})[uid] = facts.need


def hopeless_jobs(test: QuietTest, ssn: Session, places: Callable[[bytes, np.ndarray], int] | None = None,
                  inputs_of: bool = False, whole: Callable[[], bool] | None = None) -> PassOver | None:
    """The jobs of the opened session `ssn` that cannot keep a placement in it (semantics F4): with gang
    deciding, a job lacking `need` >= 1 tasks for JobReady or JobPipelined of which at most
    `places_at_most(FutureIdle, least)` < need fit on the table as it opened. None when there is none,
    or when the test's facts may not be this session's (they are those `test` just brought up, for
    the same session-wide inputs, on the very job objects), when an action may run before allocate
    (anything but enqueue, or allocate twice), or unless FutureIdle and every task's request (the
    jobs' and the pods' outside them) are whole amounts below 2**50: every sum the table and the
    plugins keep is then one of whole numbers, and a discarded statement gives back exactly what it
    took. `places(key, least)`, when given, is `places_at_most(FutureIdle, least)` kept over the
    session's FutureIdle as it opened (forecast/quiet_bound.py); compared with it under the self-check.
    `inputs_of`: the test was just asked of this very session, found its conf proven (`proof_blocker`)
    and brought its facts up for it, so its session-wide inputs are this session's (not worked out
    again; compared under the self-check). `whole()`, when given, is `whole_table` of the session's
    FutureIdle as it opened, kept with the FutureIdle `places` is kept over (compared under the
    self-check)."""
    needs = test._needs
    actions = ssn.conf.actions
    if not needs or actions.count("allocate") != 1:
        return None
    if any(a != "enqueue" for a in actions[: actions.index("allocate")]):
        return None
    held = test._inputs
    checking = check.enabled()
    if inputs_of and not checking:
        if held is None or not (held[2] and held[3]):
            return None  # no gang, or gang does not decide
    else:
        unproven, gang = proof_blocker(ssn)
        ok = not unproven and gang is not None and gang_decides(ssn)
        ok = ok and held == (tuple(ssn.table.columns), tuple(ssn.queues), True, True,
                             "enqueue" in ssn.enabled_actions)
        if inputs_of and ok != (held is not None and bool(held[2] and held[3])):
            raise check.StateCheckError(f"{check.ENV}: the quiet test's inputs kept for session {ssn.uid} are "
                                        f"not the session's (proven: {not unproven}, inputs {held})")
        if not ok:
            return None
    if test._inexact or not test._whole_of(ssn.snapshot.orphan_tasks):
        return None
    future = ssn.table.future_idle()
    if whole is None:
        if not whole_table(future):
            return None
    else:
        kept_whole = whole()
        if checking and kept_whole != whole_table(future):
            raise check.StateCheckError(f"{check.ENV}: FutureIdle kept whole row by row is {kept_whole}, over "
                                        f"the session's {not kept_whole}")
        if not kept_whole:
            return None
    jobs, facts = ssn.jobs, test._facts
    found: dict[str, tuple[int, int]] = {}
    checking = checking and places is not None
    for key, of_key in needs.items():
        if places is None:
            bound = places_at_most(future, test._rows[key])
        else:
            bound = places(key, test._rows[key])
            if checking and bound != places_at_most(future, test._rows[key]):
                raise check.StateCheckError(f"{check.ENV}: F4's bound kept row by row is {bound}, over the "
                                            f"session's FutureIdle {places_at_most(future, test._rows[key])}")
        for uid, need in of_key.items():
            if need <= bound:
                continue
            job = jobs.get(uid)
            f = facts[uid]
            if job is None or f.job is not job or f.version != job.version or f.phase is not job.phase:
                continue
            if need == 1 and lacking(job) != 1:
                continue  # ready or pipelined already (facts give a job lacking nothing need 1;
                # more is what it lacks, worked out on this very object)
            found[uid] = (need, bound)
    if not found:
        return None
    # FutureIdle is `future` at the table's touch position now: allocate's first look need not compare
    return PassOver(future.copy(), found, len(ssn.table.touched))


def job_facts(ssn: FactsContext, job: JobInfo, gang: Plugin[Session] | None, decides: bool,
              enqueue: bool) -> Facts:
    """One job's facts as `session_verdict`'s tests read them (forecast/quiet.py), in the session
    `ssn` (or what stands for it before the session is opened: forecast/quiet_early.py)."""
    phase = close_phase(job, gang, ssn.uid)
    pending = job.is_pending()
    counts = job.counts
    backlog = pending and job.queue in ssn.queues
    key: bytes | None = None
    least: np.ndarray | None = None
    need = 0
    if not (pending and enqueue) and counts.get(PENDING) and job.queue in ssn.queues:
        n, least = least_request(ssn, job)
        if least is not None:
            # a placement keeps something once min(bound, n) reaches `need`
            need = 1
            if decides:
                need = max(1, job.min_available - job.ready_num() - job.waiting_num() - job.pending_best_effort_num())
            if n >= need:
                key = least.tobytes()
            else:
                least = None
    now = job.phase
    # by position, in the fields' order (moved, unschedulable, best_effort, pending, admission,
    # no_min_resources, key, least, need, job, version, phase): made for every job built again
    return Facts(None if phase is now else phase, "Unschedulable" in job.conditions,
                 bool(job.pending_be or counts.get(PIPELINED)), pending, _admission_key(job) if backlog else None,
                 backlog and job.min_resources is None, key, least, need, job, job.version, now)


def fresh_tasks(job: JobInfo, was: Facts) -> list[tuple[str, TaskInfo]] | None:
    """The tasks of `job`, an object of the job whose last facts are `was` (a new build, or the same
    object given a phase), that are not the task objects under the same key of the object `was` was
    worked out on; None unless that object is unchanged since (its version then) and has the same
    task keys. A task's status and node change only through its job's `set_status`, which moves the
    version, so a task shared with that object is as it was when the job's held record was made (the
    facts and the held record of an object unchanged since are kept whole on the same ground)."""
    before = was.job.tasks
    tasks = job.tasks
    if was.job.version != was.version or len(tasks) != len(before):
        return None
    if tasks is before:
        return []
    fresh: list[tuple[str, TaskInfo]] = []
    for key, t in tasks.items():
        b = before.get(key)
        if b is not t:
            if b is None:
                return None
            fresh.append((key, t))
    return fresh


def _admission_key(job: JobInfo) -> tuple[object, ...]:
    """What capacity's JobEnqueueable vote reads of a job: its queue and its minResources by value."""
    r = job.min_resources
    if r is None:
        return (job.queue, None)
    return (job.queue, r.cpu, r.memory, tuple(r.scalars.items()))
