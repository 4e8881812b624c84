"""Session objects built from Kubernetes objects: TaskInfo, JobInfo, QueueInfo, NodeInfo.

These follow Volcano's `api/` types. Status rules (which status counts as allocated, ready, valid,
scheduled) live here so every action and plugin asks the same question the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import field
from enum import Enum
from typing import Any, Final, TypeVar

from apportion.cluster.placement_terms import NodeSelectorRequirement as NodeSelectorRequirement
from apportion.cluster.placement_terms import NodeSelectorTerm, PreferredTerm, Taint, Toleration
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource

_T = TypeVar("_T")


class TaskStatus(Enum):
    """A task's status (Volcano's TaskStatus)."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    # Enum hashes by name in Python code; statuses are dict keys and set members on every hot path, and
    # the identity hash is C-level. Iteration order over sets of statuses never decided anything: the
    # name hash was randomised per process already.
    __hash__ = object.__hash__


S = TaskStatus
#: AllocatedStatus: charged to job and queue.
ALLOCATED_STATUSES = frozenset({S.ALLOCATED, S.BINDING, S.BOUND, S.RUNNING})
#: ReadyTaskNum counts these.
READY_STATUSES = frozenset({S.BOUND, S.BINDING, S.RUNNING, S.ALLOCATED, S.SUCCEEDED})
#: ScheduledStatus, for the PodGroup phase.
SCHEDULED_STATUSES = frozenset({S.RUNNING, S.BOUND, S.FAILED, S.SUCCEEDED})
#: ValidTaskNum counts these.
VALID_STATUSES = frozenset({*ALLOCATED_STATUSES, S.SUCCEEDED, S.PIPELINED, S.PENDING})
#: Statuses that occupy node resources (take Idle, count in Used).
ON_NODE_STATUSES = frozenset({S.ALLOCATED, S.BINDING, S.BOUND, S.RUNNING, S.RELEASING, S.UNKNOWN})
#: Preempt's PreemptableStatus.
PREEMPTABLE_STATUSES = frozenset({S.BOUND, S.RUNNING})


class PodGroupPhase(Enum):
    """A PodGroup's phase."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"

    __hash__ = object.__hash__  # as TaskStatus


# Volcano's package-level constants (api.Pending, ..., scheduling.PodGroupRunning, ...). Hot paths read
# these, not `TaskStatus.PENDING`: on Python 3.11 every read of an Enum class's member goes through the
# enum metaclass's `__getattr__` hook (slot_tp_getattr_hook, ~700 instructions against ~10 for a global)
PENDING: Final = TaskStatus.PENDING
ALLOCATED: Final = TaskStatus.ALLOCATED
PIPELINED: Final = TaskStatus.PIPELINED
BINDING: Final = TaskStatus.BINDING
BOUND: Final = TaskStatus.BOUND
RUNNING: Final = TaskStatus.RUNNING
RELEASING: Final = TaskStatus.RELEASING
SUCCEEDED: Final = TaskStatus.SUCCEEDED
FAILED: Final = TaskStatus.FAILED
UNKNOWN: Final = TaskStatus.UNKNOWN
GROUP_PENDING: Final = PodGroupPhase.PENDING
GROUP_INQUEUE: Final = PodGroupPhase.INQUEUE
GROUP_RUNNING: Final = PodGroupPhase.RUNNING
GROUP_UNKNOWN: Final = PodGroupPhase.UNKNOWN
GROUP_COMPLETED: Final = PodGroupPhase.COMPLETED


_INDEX_RE = re.compile(r"^-?\d+$")


# slots: a simulation builds ~1,500 tasks and ~1,000 jobs per session and reads their fields on every
# hot path; slotted instances are built and read faster, and take less memory (benchmarks/README.md)
@dataclass(slots=True)
class TaskInfo:
    """A pod as the session sees it."""

    uid: str
    name: str
    namespace: str
    job: str
    resreq: Resource
    status: TaskStatus
    node_name: str = ""
    priority: int = 1
    raw_priority: int = 0
    priority_class_name: str = ""
    preemptable: bool = True
    preempt_never: bool = False
    role: str = ""
    creation: str = ""
    start_time: str = ""
    #: when the running attempt started, in seconds on the session's clock (`Session.now`); the simulator
    #: sets it, a dump gives `start_time` instead. Read by reclaim's optional minRuntime guard.
    started_at: float | None = None
    gated: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    required_terms: tuple[NodeSelectorTerm, ...] | None = None
    preferred_terms: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    #: kube-scheduler's non-zero request (cpu millicores, memory bytes) used by the score plugins.
    nonzero_cpu: float = 0.0
    nonzero_memory: float = 0.0
    #: filled in by the session: a numpy vector of resreq over the node table's columns.
    vec: Any = None
    #: filled in by the session: the node-table columns rule (a) compares for this request.
    cols: Any = None
    #: set when the task was pipelined after evictions (nominated node written at close).
    nominated_node: str = ""
    #: the status this task had when the session opened.
    initial_status: TaskStatus | None = None
    #: the status of the task's last in-session placement (for gang's unschedulable count).
    last_tx_status: TaskStatus | None = None
    #: set for the immutable predicate signature cache.
    predicate_key: Any = None
    #: kube-scheduler's integer requests of the pod (k8s_view.pod_requests), computed on first use:
    #: they follow from resreq and the non-zero requests, which a task never changes
    kube_requests: tuple[float, float, float, float, float] | None = None

    @property
    def key(self) -> str:
        """`namespace/name`: the task's key in the output."""
        return f"{self.namespace}/{self.name}"

    @property
    def best_effort(self) -> bool:
        """BestEffort: the task requests nothing."""
        return self.resreq.is_empty()

    def __hash__(self) -> int:
        return hash(self.uid)

    def __eq__(self, other: object) -> bool:
        return self is other


def default_task_compare(l: TaskInfo, r: TaskInfo) -> int:
    """Volcano's CompareTask: name index, then creation time, then UID (all string comparisons)."""
    # allocate sorts every waiting job's tasks with this: a name's index is parsed once, not per comparison
    li, ri = name_index(l.name), name_index(r.name)
    if li is not None and ri is not None and li != ri:
        return -1 if li < ri else 1
    if l.creation != r.creation:
        return -1 if l.creation < r.creation else 1
    if l.uid != r.uid:
        return -1 if l.uid < r.uid else 1
    return 0


#: name -> its index (`name_index`), bounded
_NAME_INDEX: dict[str, int | None] = {}
_NAME_INDEX_MAX = 200_000


def name_index(name: str) -> int | None:
    """The index CompareTask reads from a task's name: its last `-`-separated part when the name has at
    least three parts and that part is an integer, else None."""
    try:
        return _NAME_INDEX[name]
    except KeyError:
        pass
    parts = name.split("-")
    index = int(parts[-1]) if len(parts) >= 3 and _INDEX_RE.match(parts[-1]) else None
    if len(_NAME_INDEX) < _NAME_INDEX_MAX:
        _NAME_INDEX[name] = index
    return index


def default_task_compare_reference(l: TaskInfo, r: TaskInfo) -> int:
    """`default_task_compare` parsing both names at every comparison, as Volcano does (the reference)."""
    lp, rp = l.name.split("-"), r.name.split("-")
    if len(lp) >= 3 and len(rp) >= 3 and _INDEX_RE.match(lp[-1]) and _INDEX_RE.match(rp[-1]):
        li, ri = int(lp[-1]), int(rp[-1])
        if li != ri:
            return -1 if li < ri else 1
    if l.creation != r.creation:
        return -1 if l.creation < r.creation else 1
    if l.uid != r.uid:
        return -1 if l.uid < r.uid else 1
    return 0


@dataclass
class FitError:
    """Volcano's FitError: why a node did not fit a task, and whether that can change."""

    node: str
    reasons: list[str]
    unresolvable: bool = False


@dataclass(slots=True)  # as TaskInfo
class JobInfo:
    """A PodGroup and its tasks."""

    uid: str
    name: str
    namespace: str
    queue: str
    min_available: int = 0
    min_task_member: dict[str, int] = field(default_factory=dict)
    min_resources: Resource | None = None
    priority: int = 0
    priority_class_name: str = ""
    phase: PodGroupPhase = PodGroupPhase.PENDING
    creation: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    #: condition type -> (status, reason, message, session id), as close hooks write them; a job whose
    #: close a session carried over from the last one is not visited (framework/closing.py): the
    #: session's conditions are those of `Session.closes`
    conditions: dict[str, tuple[str, str, str, str]] = field(default_factory=dict)
    #: per task uid: the fit errors recorded in this session.
    nodes_fit_errors: dict[str, list[FitError]] = field(default_factory=dict)
    #: role names whose tasks failed to fit in this session.
    failed_roles: set[str] = field(default_factory=set)
    job_fit_errors: str = ""
    schedule_start: float | None = None
    #: maintained incrementally: sum of resreq over allocated-status tasks.
    allocated: Resource = field(default_factory=Resource)

    #: task count per status, maintained by add_task/set_status so readiness checks are O(1).
    counts: dict[TaskStatus, int] = field(default_factory=dict)
    pending_be: int = 0
    #: False once a task's status changed or a task was replaced: `allocated` is then no longer the
    #: plain sum, in task order, that `allocated_sum` can hand out without walking the tasks.
    allocated_as_added: bool = True
    #: how many gated tasks were added: 0 means no gated pod, so nothing to deduct from minResources
    gated_tasks: int = 0
    #: bumped by every task added and every task status changed
    version: int = 0
    #: what plugins computed from the job (see `derive`), by name, as (version, phase, inputs, value).
    #: A caller that keeps a JobInfo across sessions keeps these too.
    derived: dict[str, tuple[int, PodGroupPhase, Any, Any]] = field(default_factory=dict)
    #: a cache that sessions the same cluster again and again logs here (a set it shares between its
    #: jobs) the uid of every job of its snapshots that changed since it was handed out: a task added or
    #: its status changed, the phase set (docs/semantics.md K17)
    log: set[str] | None = field(default=None, compare=False, repr=False)
    #: likewise, the jobs a session wrote notes on (conditions, fit errors: `note_change`), which a
    #: snapshot clears before handing the job out again
    notes: set[str] | None = field(default=None, compare=False, repr=False)

    # ------------------------------------------------------------- membership and status
    def note_change(self) -> None:
        """Log the job in `notes`: a session calls it on a job it writes notes on (conditions, fit
        errors), which a snapshot must clear before handing the job out again."""
        notes = self.notes
        if notes is not None:
            notes.add(self.uid)

    def set_phase(self, phase: PodGroupPhase) -> None:
        """Set the phase, logging the job as changed when the phase moves (see `log`)."""
        if phase is not self.phase:
            self.phase = phase
            log = self.log
            if log is not None:
                log.add(self.uid)

    def add_task(self, t: TaskInfo) -> None:
        """AddTaskInfo: add (or replace) a task, keeping the counts and `allocated` current."""
        self.version += 1
        log = self.log
        if log is not None:
            log.add(self.uid)
        if t.uid in self.tasks:
            self.allocated_as_added = False
        if t.gated:
            self.gated_tasks += 1
        self.tasks[t.uid] = t
        self.counts[t.status] = self.counts.get(t.status, 0) + 1
        if t.status in ALLOCATED_STATUSES:
            self.allocated.add(t.resreq)
        if t.status is PENDING and t.best_effort:
            self.pending_be += 1

    def set_status(self, t: TaskInfo, new: TaskStatus) -> None:
        """Change a task's status, keeping counts and `allocated` current."""
        old = t.status
        if old is new:
            return
        self.version += 1
        self.allocated_as_added = False
        log = self.log
        if log is not None:
            log.add(self.uid)
        self.counts[old] -= 1
        self.counts[new] = self.counts.get(new, 0) + 1
        was, now = old in ALLOCATED_STATUSES, new in ALLOCATED_STATUSES
        if was and not now:
            self.allocated.sub_without_assert(t.resreq)
        elif now and not was:
            self.allocated.add(t.resreq)
        if t.best_effort:
            if old is PENDING:
                self.pending_be -= 1
            if new is PENDING:
                self.pending_be += 1
        t.status = new

    def derive(self, name: str, inputs: Any, compute: Callable[[], _T]) -> _T:
        """compute(), kept under `name` while the task statuses (`version`), the phase and `inputs` (what
        else the value depends on, compared with ==) stay as they were. Callers read the value and
        never change it."""
        hit = self.derived.get(name)
        if hit is not None and hit[0] == self.version and hit[1] is self.phase and hit[2] == inputs:
            return hit[3]
        value = compute()
        self.derived[name] = (self.version, self.phase, inputs, value)
        return value

    # ------------------------------------------------------------- counts
    def allocated_sum(self) -> Resource:
        """A new Resource: the requests of the allocated-status tasks added up in task order, as
        session open charges them (the running `allocated` is that sum until a status changes)."""
        if self.allocated_as_added:
            return self.allocated.clone()
        r = Resource()
        for t in self.tasks.values():
            if t.status in ALLOCATED_STATUSES:
                r.add(t.resreq)
        return r

    def tasks_with(self, statuses: frozenset[TaskStatus]) -> list[TaskInfo]:
        """The tasks in any of the statuses, in task order."""
        return [t for t in self.tasks.values() if t.status in statuses]

    def count(self, statuses: frozenset[TaskStatus]) -> int:
        """How many tasks are in any of the statuses."""
        n = 0
        for s, k in self.counts.items():  # a job's tasks are in few statuses; `statuses` lists up to 6
            if s in statuses:
                n += k
        return n

    def ready_num(self) -> int:
        """ReadyTaskNum: tasks Allocated, Binding, Bound, Running or Succeeded."""
        return self.count(READY_STATUSES)

    def waiting_num(self) -> int:
        """WaitingTaskNum: the Pipelined tasks."""
        return self.counts.get(PIPELINED, 0)

    def pending_best_effort_num(self) -> int:
        """PendingBestEffortTaskNum: the Pending tasks that request nothing."""
        return self.pending_be

    def valid_num(self) -> int:
        """ValidTaskNum: tasks Pending, Pipelined, allocated or Succeeded."""
        return self.count(VALID_STATUSES)

    def scheduled_num(self) -> int:
        """Tasks Running, Bound, Succeeded or Failed (ScheduledStatus, for the PodGroup phase)."""
        return self.count(SCHEDULED_STATUSES)

    def releasing_with_node_num(self) -> int:
        """Releasing tasks that still hold a node."""
        if not self.counts.get(RELEASING):
            return 0  # asked of every job at every close: most have no releasing task to look for
        return sum(1 for t in self.tasks.values() if t.status is RELEASING and t.node_name)

    def is_pending(self) -> bool:
        """The PodGroup is Pending: enqueue has not admitted it."""
        return self.phase is GROUP_PENDING

    def elastic(self) -> Resource:
        """ElasticResources: the positive part of allocated - minResources (pods included)."""
        if self.min_resources is None:
            # Volcano: minResources absent -> the whole allocated is elastic.
            return self.allocated.clone()
        return self.allocated.exceeded_part(self.min_resources)

    def total_request(self) -> Resource:
        """TotalRequest: every task's request, added up."""
        r = Resource()
        for t in self.tasks.values():
            r.add(t.resreq)
        return r

    def pending_request(self) -> Resource:
        """The Pending tasks' requests, added up."""
        r = Resource()
        for t in self.tasks.values():
            if t.status is PENDING:
                r.add(t.resreq)
        return r

    def gated_request(self) -> Resource:
        """The scheduling-gated Pending tasks' requests, added up."""
        r = Resource()
        for t in self.tasks.values():
            if t.gated and t.status is PENDING:
                r.add(t.resreq)
        return r

    def role_counts(self, statuses: frozenset[TaskStatus], *, pending_best_effort: bool = False) -> dict[str, int]:
        """Role -> how many of its tasks are in the statuses (and, if asked, Pending best-effort)."""
        out: dict[str, int] = {}
        for t in self.tasks.values():
            if t.status in statuses or (
                pending_best_effort and t.status is PENDING and t.best_effort
            ):
                out[t.role] = out.get(t.role, 0) + 1
        return out

    def task_min_sum(self) -> int:
        """The per-role minimum members (minTaskMember), added up."""
        return sum(self.min_task_member.values())


@dataclass
class QueueInfo:
    """A Volcano Queue."""

    name: str
    weight: int = 1
    capability: Resource = field(default_factory=Resource)
    deserved: Resource = field(default_factory=Resource)
    guarantee: Resource = field(default_factory=Resource)
    #: whether spec.capability / spec.deserved were written at all (partial specs matter).
    capability_set: bool = False
    deserved_set: bool = False
    parent: str = ""
    reclaimable: bool = True
    priority: int = 0
    state: str = "Open"
    creation: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    #: which cpu/memory dimensions spec.capability wrote (for partial-capability rules).
    capability_names: frozenset[str] = frozenset()

    @property
    def uid(self) -> str:
        """The queue's uid: its name."""
        return self.name

    def is_open(self) -> bool:
        """The queue's state is Open."""
        return self.state == "Open"


@dataclass
class NodeInfo:
    """A node. Resource state lives in the session's NodeTable; this holds identity and the task map."""

    name: str
    index: int
    allocatable: Resource
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
