"""The seam between where cluster state comes from and the simulator that runs it forward.

`start_state` takes the cluster objects (a `Snapshot`: nodes, queues, jobs with their tasks, the pods of
other schedulers) and the instant they describe, and returns what the forecast simulator starts from:
every task's status and node, how long each running task has left, how long a task runs once started,
and where each of those numbers came from. Today the objects come from a kubectl dump
(`apportion.cluster.snapshot.load_snapshot`); the live cluster-state cache hands the same objects over,
so switching to it changes only the caller.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from datetime import datetime
from typing import TYPE_CHECKING

from apportion.cluster.model import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from apportion.cluster.snapshot import Snapshot
from apportion.collection import collection_paused
from apportion.durations import newest, parse_duration, parse_time, try_time
from apportion.errors import InputError
from apportion.forecast.runtime import DURATION_KEY, EXPECTED_END_KEY
from apportion.framework.conf import SchedulerConf
from apportion.lean_dataclass import dataclass

if TYPE_CHECKING:  # types of fields only: their modules come with the simulator that fills them
    from apportion.simulation.reservations import SimPlan
    from apportion.simulation.scenario import JobSpec

# where a number came from (the forecast's `basis` counts pods by these)
EXPECTED_END = "expected-end"
DURATION = "duration"
ASSUMED = "assumed"
BASIS_UNKNOWN = "unknown"
#: a pod being deleted without an expected end: it frees its node by the next session
BASIS_RELEASING = "releasing"


@dataclass
class TaskStart:
    """One task as the forecast starts it."""

    index: int
    template: TaskInfo
    #: pending | running | releasing | done (the simulator's task states)
    status: str
    node: str = ""
    #: seconds the task has run when the forecast starts (0 when its start time is unknown)
    elapsed: float = 0.0
    #: seconds left for a running (or releasing) task; None: drawn from the assumed runtime, or never
    remaining: float | None = None
    #: a running task's own whole runtime (`apportion.io/duration`), when it has one
    runtime: float | None = None
    basis: str = BASIS_UNKNOWN


@dataclass
class JobStart:
    """One job (podgroup) as the forecast starts it."""

    template: JobInfo
    tasks: list[TaskStart]
    #: the runtime of one of its tasks once started (pending tasks, and tasks restarted after an
    #: eviction); None: the assumed runtime, or never ending when none is assumed
    runtime: float | None
    runtime_basis: str

    @property
    def uid(self) -> str:
        """`namespace/podgroup`."""
        return self.template.uid

    @property
    def pending(self) -> bool:
        """Not started: some task waits and none holds a node."""
        return any(t.status == "pending" for t in self.tasks) and not any(
            t.status in ("running", "releasing") for t in self.tasks)


@dataclass
class StartState:
    """Everything the forecast simulator starts from. Times are seconds on the state's clock: `t0` is
    `now` (0 for a dump; a simulator's own clock when a test or benchmark starts from one)."""

    now: datetime
    nodes: list[NodeInfo]
    queues: dict[str, QueueInfo]
    conf: SchedulerConf
    jobs: list[JobStart]
    priority_classes: dict[str, int] = field(default_factory=dict)
    orphan_tasks: list[TaskInfo] = field(default_factory=list)
    period: float = 1.0
    t0: float = 0.0
    #: reservation plans of reservable queues and their current children (empty for a dump: its
    #: reservation queues are ordinary queues with what they hold now)
    plans: dict[str, SimPlan] = field(default_factory=dict)
    children: dict[str, list[QueueInfo]] = field(default_factory=dict)
    #: future arrivals, on the state's clock (empty: the forecast knows of no new work)
    arrivals: list[JobSpec] = field(default_factory=list)
    #: reservation name -> id, and whether it was accepted (arrivals that name a reservation)
    reservation_ids: dict[str, str] = field(default_factory=dict)
    reservation_accepted: dict[str, bool] = field(default_factory=dict)
    #: jobs (uid -> reservation id) kept out of the scheduler until a plan's follower finds their
    #: reservation active (the service's jobs submitted to a reservation that has not started)
    held: dict[str, str] = field(default_factory=dict)
    #: jobs that finish stay in the sessions as Completed PodGroups (simulation/start.py `SimStart`)
    keep_done: bool = False
    #: the queues' order in the live cache the state comes from (SimStart.queue_order); None: the
    #: simulator's own
    queue_order: list[str] | None = None
    #: an evicted member of a gang stops the whole gang (SimStart.whole_gangs)
    whole_gangs: bool = True
    warnings: list[str] = field(default_factory=list)

    def job(self, uid: str) -> JobStart | None:
        """The job called `uid`, if the state has it."""
        for j in self.jobs:
            if j.uid == uid:
                return j
        return None

    def basis_counts(self) -> Counter[str]:
        """Running pods by where their remaining time comes from."""
        return Counter(t.basis for j in self.jobs for t in j.tasks if t.status in ("running", "releasing"))


#: True: `newest_timestamp` parses each distinct stamp once (a dump's 10,000 pods share a few hundred),
#: and `start_state` each distinct start time once; False: every stamp is parsed where it is read (the
#: reference, `Snapshot.newest_time`)
DISTINCT_STAMPS = True


def newest_timestamp(snap: Snapshot, times: dict[str, datetime | None] | None = None) -> datetime | None:
    """The newest creation or start time in the cluster objects (the default `now`). `times`, when
    given, takes each stamp read with what it parses to (`try_time`), for `start_state` to read."""
    if not DISTINCT_STAMPS:
        return snap.newest_time()
    # the stamps `Snapshot.newest_time` reads, in its order, each at its first place: a repeat parses to
    # what its first did, which `newest` keeps (it keeps the first of equal times)
    stamps = dict.fromkeys(q.creation for q in snap.queues.values())
    for j in snap.jobs.values():
        stamps[j.creation] = None
        for task in j.tasks.values():
            stamps[task.creation] = None
            stamps[task.start_time] = None
    for o in snap.orphan_tasks:
        stamps[o.creation] = None
        stamps[o.start_time] = None
    return newest(stamps, times)


def _annotation(task: TaskInfo, job: JobInfo, key: str) -> tuple[str, str] | None:
    """(value, where) from the pod, else from its PodGroup."""
    if key in task.annotations:
        return task.annotations[key], f"pod {task.key}: metadata.annotations.{key}"
    if key in job.annotations:
        return job.annotations[key], f"podgroup {job.uid}: metadata.annotations.{key}"
    return None


#: the longest runtime or time left an annotation may give (a forecast's times stay within what a
#: date can say, and a pod's typo cannot break the forecasts of every job queued behind it silently)
LONGEST_S = 100 * 365 * 86400.0


def _within(seconds: float, where: str) -> float:
    if seconds > LONGEST_S:
        raise InputError(f"{seconds:.0f} seconds is more than the 100 years a forecast looks ahead", where=where)
    return seconds


def _own_runtime(task: TaskInfo, job: JobInfo) -> float | None:
    """The task's `apportion.io/duration` (the pod's, else its PodGroup's) in seconds; None without one.

    A plain number of seconds in range is read at once; anything else (a Go duration, a bad value) goes
    through `_own_runtime_reference`, whose errors name where the value came from: that text is made
    only for those, not for each of a dump's pods."""
    ann = task.annotations
    if DURATION_KEY in ann:
        value = ann[DURATION_KEY]
    elif DURATION_KEY in job.annotations:
        value = job.annotations[DURATION_KEY]
    else:
        return None
    if type(value) is str:
        try:
            v = float(value.strip())
        except ValueError:
            pass
        else:
            # what parse_duration and _within give such a number (nan and inf fail the test)
            if 0.0 <= v <= LONGEST_S:
                return v
    return _own_runtime_reference(task, job)


def _own_runtime_reference(task: TaskInfo, job: JobInfo) -> float | None:
    """`_own_runtime` by the general path (the reference its fast path is tested against)."""
    d = _annotation(task, job, DURATION_KEY)
    return _within(parse_duration(d[0], d[1]), d[1]) if d else None


#: the statuses `_task_start` tells apart, read once: on Python 3.11 each read of an Enum class's member
#: (`TaskStatus.RUNNING`) goes through the enum metaclass's `__getattr__` hook, four times the cost of a
#: plain class attribute, and `_task_start` runs for each of a dump's pods
_FINISHED = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
_WAITING = (TaskStatus.PENDING, TaskStatus.PIPELINED)
_RELEASING = TaskStatus.RELEASING


def _task_start(index: int, t: TaskInfo, job: JobInfo, now: datetime,
                times: dict[str, datetime | None] | None = None,
                elapsed_of: dict[str, float] | None = None) -> TaskStart:
    task_status = t.status
    if task_status in _FINISHED:
        return TaskStart(index, t, "done")
    if task_status in _WAITING or not t.node_name:
        return TaskStart(index, t, "pending", runtime=_own_runtime(t, job))
    # anything else on a node holds it (Unknown too, as far as a session goes)
    status = "releasing" if task_status is _RELEASING else "running"
    if times is None or elapsed_of is None:
        started = try_time(t.start_time)
        elapsed = max(0.0, (now - started).total_seconds()) if started is not None else 0.0
    else:  # the pods of a gang started together: each distinct start time parsed, and subtracted, once
        stamp = t.start_time
        started = times[stamp] if stamp in times else times.setdefault(stamp, try_time(stamp))
        elapsed = elapsed_of.get(stamp, -1.0)
        if elapsed < 0.0:  # (an elapsed time is never negative: -1 is "not yet")
            elapsed = elapsed_of[stamp] = max(0.0, (now - started).total_seconds()) if started is not None else 0.0
    runtime = _own_runtime(t, job)
    # (most pods carry no expected end: the look-up call is made only for those that do)
    end = (_annotation(t, job, EXPECTED_END_KEY)
           if EXPECTED_END_KEY in t.annotations or EXPECTED_END_KEY in job.annotations else None)
    if end is not None:
        left = _within((parse_time(end[0], end[1]) - now).total_seconds(), end[1])
        return TaskStart(index, t, status, t.node_name, elapsed, max(0.0, left), runtime, EXPECTED_END)
    if runtime is not None and started is not None:
        return TaskStart(index, t, status, t.node_name, elapsed, max(0.0, runtime - elapsed), runtime, DURATION)
    return TaskStart(index, t, status, t.node_name, elapsed, None, runtime,
                     BASIS_RELEASING if status == "releasing" else BASIS_UNKNOWN)


def _job_runtime(job: JobInfo, tasks: list[TaskStart]) -> tuple[float | None, str]:
    """A task's runtime once started: the job's (or its pods') `apportion.io/duration`, else the
    whole runtime an expected-end gives a running task that has a start time."""
    if DURATION_KEY in job.annotations:
        where = f"podgroup {job.uid}: metadata.annotations.{DURATION_KEY}"
        return _within(parse_duration(job.annotations[DURATION_KEY], where), where), DURATION
    own = [t.runtime for t in tasks if t.runtime is not None]
    if own:
        return max(own), DURATION
    whole = [t.elapsed + t.remaining for t in tasks
             if t.basis == EXPECTED_END and t.remaining is not None and t.template.start_time]
    if whole:
        return max(whole), EXPECTED_END
    return None, BASIS_UNKNOWN


def start_state(snap: Snapshot, conf: SchedulerConf, now: datetime, *, period: float = 1.0,
                times: dict[str, datetime | None] | None = None) -> StartState:
    """The forecast's start state from cluster objects describing the cluster at `now`. `times`: stamps
    already parsed (what `newest_timestamp` filled in), read instead of parsing them again.

    `snap` is read, not changed: the simulator copies what it hands to each session.
    """
    if not (0.001 <= period <= 86400):
        raise InputError(f"the session period must be between 0.001 and 86400 seconds, got {period}")
    jobs: list[JobStart] = []
    if not DISTINCT_STAMPS:
        times = None
    elif times is None:
        times = {}
    elapsed_of: dict[str, float] = {}
    # one record per task, all living on, no cycles among them (kube's build_snapshot says why paused)
    with collection_paused():
        for uid in sorted(snap.jobs):
            job = snap.jobs[uid]
            tasks = [_task_start(i, t, job, now, times, elapsed_of) for i, t in enumerate(job.tasks.values())]
            runtime, basis = _job_runtime(job, tasks)
            jobs.append(JobStart(job, tasks, runtime, basis))
    return StartState(now=now, nodes=list(snap.nodes), queues=dict(snap.queues), conf=conf, jobs=jobs,
                      priority_classes=dict(snap.priority_classes), orphan_tasks=list(snap.orphan_tasks),
                      period=period, warnings=list(snap.warnings))
