"""The session: open, in-session operations (allocate, pipeline, evict and their undoing), close.

Follows `framework/session.go` and `framework/framework.go`. Plugins register callbacks by plugin name at
open; the dispatchers that consult them are inherited: framework/dispatch.py (orders, votes, victims,
simulate points; `session_plugins.go`) and framework/node_choice.py (predicates and scoring).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from apportion.cluster.model import (
    ALLOCATED,
    BINDING,
    FAILED,
    GROUP_COMPLETED,
    GROUP_INQUEUE,
    GROUP_PENDING,
    GROUP_RUNNING,
    GROUP_UNKNOWN,
    PENDING,
    PIPELINED,
    RELEASING,
    RUNNING,
    SUCCEEDED,
    FitError,
    JobInfo,
    NodeInfo,
    PodGroupPhase,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from apportion.cluster.node_table import NodeTable
from apportion.cluster.snapshot import Snapshot
from apportion.framework import extension as ep
from apportion.framework.arguments import Arguments
from apportion.framework.closing import Close, Closes, looks_since, note_unclosed
from apportion.framework.conf import PluginOption, SchedulerConf
from apportion.framework.interface import ExtensionPoints, Fn, Plugin, plugin_builder
from apportion.framework.job_visits import JOB_LOCAL_VALIDITY, JobVisits
from apportion.framework.node_choice import NodeChoice
from apportion.framework.open_parts import KIND_OF, OpenDelta
from apportion.framework.open_state import open_nodes
from apportion.framework.placement import PlacementCache
from apportion.framework.queue_picker import PickerFactory
from apportion.framework.queue_status import QueueStatuses
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource
from apportion.state import check

log = logging.getLogger(__name__)

#: the memo's entry: the last session's PodGroup phases, with the snapshot it was over (`podgroup_phases`)
PODGROUPS_MEMO = "session.podgroups"


@dataclass
class Event:
    """An event the session reports: the object (a job uid, or `session`), a reason and a message."""

    object: str
    reason: str
    message: str

    def to_json(self) -> dict[str, str]:
        """The event as the cycle output's `events` list holds it."""
        return {"object": self.object, "reason": self.reason, "message": self.message}


@dataclass
class EventHandler:
    """Volcano's EventHandler: what a plugin runs on every in-session allocation (allocate, pipeline, an
    eviction undone) and deallocation (evict, an allocation undone)."""

    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


class Session(NodeChoice):
    """One scheduling session over one snapshot. A snapshot is consumed by the session that opens it."""

    #: tests switch this off to compare plugins' queue pickers against the reference scan
    fast_queue_pickers = True
    #: tests switch this off to compare enqueue's backlog test (add_enqueue_test) with the votes
    fast_enqueue_refusals = True
    #: at close, the jobs whose close is computed in full: what close hooks visit; after close, those
    #: and the jobs whose event alone was made again (framework/closing.py)
    closing: list[JobInfo]
    #: after close, every job's close (framework/closing.py)
    closes: Closes
    #: whether close makes the why-pending texts (the jobs' Unschedulable events, their pending tasks'
    #: explanations): a forecast's forward run, which reads none, switches them off (docs/semantics.md F6)
    why_pending = True

    def __init__(self, snapshot: Snapshot, conf: SchedulerConf, *, session_id: str = "session-1") -> None:
        self.uid = session_id
        self.conf = conf
        self.snapshot = snapshot
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.nodes: list[NodeInfo] = snapshot.nodes
        #: the caller's memo carried across snapshots (None: nothing carried); see Snapshot.memo
        self.memo: dict[str, Any] | None = snapshot.memo
        self.node_by_name: dict[str, NodeInfo] = _node_by_name(self.nodes, self.memo)
        self.warnings: list[str] = list(snapshot.warnings) + list(conf.warnings)
        self.enabled_actions = set(conf.actions)
        #: the session's clock in seconds (the simulator's time), or None: then the wall clock (epoch)
        self.now: float | None = None
        #: the simulate extension points serve only topology-aware preemption; plugins skip their per-task
        #: PrePredicate copies of queue state when no configured action can read them.
        self.simulation_state_needed = "preempt" in self.enabled_actions and bool(
            conf.action_arguments("preempt").get("enableTopologyAwarePreemption", False)
        )
        #: True while the nodes' task maps are shared with the memo's open state (copied before a change)
        self.shared_node_tasks = False
        self._own_rows: set[int] = set()
        self.table: NodeTable
        self.total_resource: Resource
        #: the generation of the open state kept in the memo for this session (None: none kept), and
        #: what changed since the last open over the memo (None: the node side was placed in full)
        self.open_generation: int | None = None
        self.open_delta: OpenDelta | None = open_nodes(self)

        ExtensionPoints.__init__(self)
        #: per point, the (tier, option, fn) list dispatchers walk; rebuilt when a plugin registers.
        self._dispatch: dict[str, list[tuple[int, PluginOption, Fn]]] = {}
        self.event_handlers: list[EventHandler] = []
        #: per task uid, what PrePredicate hooks left for that task's simulations (made on first write)
        self.cycle_states: dict[str, dict[str, Any]] = {}
        self.binds: dict[str, str] = {}
        self.evictions: set[str] = set()
        self.evict_reasons: dict[str, str] = {}
        self.events: list[Event] = []
        #: explanations per object (job uid or task key), most recent last.
        self.explanations: dict[str, list[str]] = {}
        #: nodes that allocate found unresolvable for a task (filtered out by reclaim/preempt).
        self.unresolvable_nodes: dict[str, set[int]] = {}
        self.failed_choices = {}
        #: plugins whose predicate / node-order answers are node-local, with their placement-key functions
        self.node_local_keys: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        #: their optional one-node answers (see add_node_local_key)
        self.node_row_fns: dict[str, Callable[[TaskInfo, int], Any]] = {}
        self.placement = PlacementCache(self)
        #: queue-order plugins' fast pickers (used when that plugin alone orders queues)
        self.queue_pickers: dict[str, PickerFactory] = {}
        self.enqueue_tests: dict[str, Callable[[list[JobInfo]], list[JobInfo]]] = {}
        self.enqueue_answer_tests: dict[str, Callable[[list[JobInfo]], list[str | None]]] = {}
        #: per-session state that several plugins share (e.g. the Kubernetes node view), by name
        self.shared: dict[str, Any] = {}
        self.plugins: list[tuple[PluginOption, Plugin[Session]]] = []
        self.queue_decisions_blocked: str | None = None
        self.closed = False
        for tier in conf.tiers:
            for opt in tier.plugins:
                try:
                    builder = plugin_builder(opt.name)
                except LookupError as e:
                    self.warnings.append(f"plugin {opt.name!r} cannot be loaded ({e}); skipped")
                    continue
                if builder is None:
                    self.warnings.append(f"plugin {opt.name!r} is not registered; skipped")
                    continue
                plugin = builder(Arguments(opt.arguments, owner=opt.name, warnings=self.warnings))
                self.plugins.append((opt, plugin))
        for _, plugin in self.plugins:
            plugin.on_session_open(self)
        #: the jobs the actions visit (quiet ones are passed over; framework/job_visits.py)
        self.visits = JobVisits(self.jobs, self.job_valid,
                                tuple(opt.name for _, opt, _ in self._consulted(ep.JOB_VALID)),
                                self.memo, self.open_delta, self.open_generation)
        # Volcano gives every pending task of a valid job an empty cycle state here. Readers take a
        # missing one as empty (`get(uid, {})`, read only) and writers `setdefault` it, so they are made
        # when first written instead: filling them in cost a pass over every waiting task per session.

    def job_local_validity(self) -> bool:
        """Whether every JobValid plugin consulted answers from the job alone (its task statuses, phase and
        minimums: framework/job_visits.py JOB_LOCAL_VALIDITY)."""
        return all(opt.name in JOB_LOCAL_VALIDITY for _, opt, _ in self._consulted(ep.JOB_VALID))

    # ================================================================= event handlers
    def add_event_handler(self, handler: EventHandler) -> None:
        """AddEventHandler: call the handler on every allocation and deallocation of this session."""
        self.event_handlers.append(handler)

    # ================================================================= in-session operations
    def _fire(self, task: TaskInfo, allocate: bool) -> None:
        for h in self.event_handlers:
            f = h.allocate if allocate else h.deallocate
            if f is not None:
                f(task)

    def _move(self, task: TaskInfo, new: TaskStatus, node_name: str) -> None:
        """Change status and node placement together, keeping the node table and job counts current."""
        old_kind = KIND_OF[task.status]
        if old_kind is not None and task.node_name:
            node = self.node_by_name[task.node_name]
            self.table.remove(node.index, self.task_vec(task), old_kind)
            self._own_tasks(node).pop(task.key, None)
        job = self.jobs[task.job]
        job.set_status(task, new)
        self.visits.moved.add(task.job)
        task.node_name = node_name
        new_kind = KIND_OF[new]
        if new_kind is not None and node_name:
            node = self.node_by_name[node_name]
            self.table.add(node.index, self.task_vec(task), new_kind)
            self._own_tasks(node)[task.key] = task

    def _own_tasks(self, node: NodeInfo) -> dict[str, TaskInfo]:
        """The node's task map, copied first while it is the memo's (framework/open_state.py)."""
        if self.shared_node_tasks and node.index not in self._own_rows:
            node.tasks = dict(node.tasks)
            self._own_rows.add(node.index)
        return node.tasks

    def do_allocate(self, task: TaskInfo, row: int) -> None:
        """Allocate the task on the row's node inside the session (Allocated; event handlers told)."""
        self._move(task, ALLOCATED, self.nodes[row].name)
        task.last_tx_status = ALLOCATED
        self._fire(task, True)

    def do_pipeline(self, task: TaskInfo, row: int) -> None:
        """Pipeline the task on the row's node inside the session (Pipelined; event handlers told)."""
        self._move(task, PIPELINED, self.nodes[row].name)
        task.last_tx_status = PIPELINED
        self._fire(task, True)

    def do_evict(self, task: TaskInfo, reason: str) -> TaskStatus:
        """Evict the task inside the session (Releasing; event handlers told); returns its status before."""
        prev = task.status
        self._move(task, RELEASING, task.node_name)
        self._fire(task, False)
        return prev

    def undo_allocate(self, task: TaskInfo) -> None:
        """Undo an allocation or a pipelining: the task is Pending again, on no node."""
        self._move(task, PENDING, "")
        task.last_tx_status = None
        self._fire(task, False)

    def undo_evict(self, task: TaskInfo) -> None:
        # Keep: undoing an eviction restores Running even for a victim that was Bound.
        """Undo an eviction: the task is Running on its node again."""
        self._move(task, RUNNING, task.node_name)
        self._fire(task, True)

    def commit_bind(self, task: TaskInfo) -> None:
        """Send the bind: the task is Binding and joins the session's binds."""
        job = self.jobs[task.job]
        job.set_status(task, BINDING)
        self.binds[task.key] = task.node_name

    def commit_evict(self, task: TaskInfo, reason: str) -> None:
        """Send the eviction: the task joins the session's evictions, with the reason."""
        self.evictions.add(task.key)
        self.evict_reasons[task.key] = reason

    def allocate_and_dispatch(self, task: TaskInfo, row: int) -> None:
        """Session.Allocate (backfill): place at once; if the job is ready, bind all its Allocated tasks."""
        self.do_allocate(task, row)
        job = self.jobs[task.job]
        if self.job_ready(job):
            for t in sorted(job.tasks.values(), key=lambda x: x.uid):
                if t.status is ALLOCATED:
                    self.commit_bind(t)

    # ================================================================= explanations
    def explain(self, obj: str, message: str) -> None:
        """Record why a job or task could not go further (shown as an event if it stays pending)."""
        lst = self.explanations.setdefault(obj, [])
        if message not in lst:
            lst.append(message)

    def record_fit_errors(self, job: JobInfo, task: TaskInfo, summary: list[tuple[str, int]], total: int) -> None:
        """Record why no node took the task, as kube-scheduler words it (`0/N nodes are available: ...`),
        on the job and as an explanation."""
        if not summary:
            text = f"0/{total} nodes are available"
        else:
            parts = [f"{n} node(s) {text}" for text, n in sorted(summary, key=lambda x: (-x[1], x[0]))]
            text = f"0/{total} nodes are available: " + ", ".join(parts)
        job.note_change()
        job.nodes_fit_errors[task.uid] = [FitError("", [text])]
        job.job_fit_errors = text
        if task.role:
            job.failed_roles.add(task.role)
        self.explain(task.key, text)

    # ================================================================= close
    def close(self) -> None:
        """CloseSession: plugin close hooks (gang writes conditions), then PodGroup phases and the
        why-pending events. A job closed as it was last time over the same memo is not visited again
        (framework/closing.py)."""
        if self.closed:
            return
        closing = Close(self)
        self.closing = closing.split()
        for _, plugin in self.plugins:
            plugin.on_session_close(self)
        closing.finish(self._pod_group_phase, lambda uid, msg: Event(uid, "Unschedulable", msg))
        self.closes = closing.closes
        events: list[Event] = []
        if self.queue_decisions_blocked:
            events.append(Event("session", "QueueDecisionsBlocked", self.queue_decisions_blocked))
        events.extend(closing.events())
        self.events = events
        self.closed = True

    def release(self) -> None:
        """Drop the plugins and every table that refers to them, once the caller is done with the session.

        Plugins keep the session and the session keeps the plugins (and their bound methods), so a
        finished session is a reference cycle that only Python's cycle collector frees: by then its
        objects have been promoted to the oldest generation, where a caller that runs thousands of
        sessions pays for them in full collections (benchmarks/README.md). After `release` the session's
        results (binds, evictions, jobs, events, explanations) are still readable; nothing that
        consults a plugin works any more. Releasing a released session does nothing (a session given
        again by `engine.run_cache_session` is released by each caller that reads it).
        """
        if not hasattr(self, "placement"):
            return
        if not self.closed:
            # a session dropped without its close (a forecast's skipped session): the next close over
            # the memo looks at what its jobs' delta names as well, not at every job
            note_unclosed(self.memo, self.snapshot.jobs_delta)
        self.plugins = []
        self.fns = {p: {} for p in self.fns}
        self._dispatch = {}
        self.event_handlers = []
        self.queue_pickers = {}
        self.enqueue_tests = {}
        self.enqueue_answer_tests = {}
        self.node_local_keys = {}
        self.node_row_fns = {}
        self.shared = {}
        del self.placement

    def _pod_group_phase(self, job: JobInfo) -> PodGroupPhase:
        cond = job.conditions.get("Unschedulable")
        return phase_written_back(job, bool(cond and cond[0] == "True" and cond[3] == self.uid))

    # ================================================================= results
    def pipelined(self) -> dict[str, str]:
        """Task key -> node of every task the session left Pipelined, jobs in the session's order."""
        jobs = self.jobs
        if self.visits.active:
            # a quiet job has no pipelined task unless one of its tasks moved: only the others can, and
            # of those only the ones that held one at open or moved since (`JobVisits.may_hold_pipelined`)
            may = self.visits.may_hold_pipelined()
            found = [uid for uid in (self.visits.visit() if may is None else may)
                     if jobs[uid].counts.get(PIPELINED)]
            if len(found) > 1:
                found.sort(key=list(jobs).index)
            if may is not None and check.enabled():
                every = [uid for uid in self.visits.visit() if jobs[uid].counts.get(PIPELINED)]
                if found != sorted(every, key=list(jobs).index):
                    raise check.StateCheckError(f"{check.ENV}: the jobs holding pipelined tasks, from those that "
                                                "held one at open or moved, differ from those among every visited job")
            holding: Iterable[JobInfo] = (jobs[uid] for uid in found)
        else:
            holding = (j for j in jobs.values() if j.counts.get(PIPELINED))
        return {t.key: t.node_name for j in holding for t in j.tasks.values() if t.status is PIPELINED}

    def podgroup_phases(self) -> dict[str, str]:
        """Job uid -> its phase's value, for every job (after close). A caller that carries a memo
        gets the last session's map with only the jobs the snapshot's jobs delta names made again
        (docs/semantics.md K17): not in the session's job order then, but a new job after the others."""
        jobs = self.jobs
        memo = self.memo
        delta = self.snapshot.jobs_delta
        held = memo.get(PODGROUPS_MEMO) if memo is not None and delta is not None else None
        look = looks_since(memo, delta, held[0]) if held is not None and delta is not None else None
        if look is None or held is None:
            out = {uid: j.phase.value for uid, j in jobs.items()}
        else:
            out = dict(held[1])
            for uid in look:
                job = jobs.get(uid)
                if job is None:
                    out.pop(uid, None)
                else:
                    out[uid] = job.phase.value
            if check.enabled() and out != {uid: j.phase.value for uid, j in jobs.items()}:
                raise check.StateCheckError(f"{check.ENV}: the PodGroup phases made from the jobs' delta differ "
                                            "from every job's")
        if memo is not None:
            if delta is None:
                memo.pop(PODGROUPS_MEMO, None)
            else:
                memo[PODGROUPS_MEMO] = (delta.snapshot, dict(out))  # a copy: callers may edit theirs
        return out

    def queue_reports(self) -> QueueStatuses:
        """Queue name -> its status from the plugins' queue reports (the first plugin to report a queue
        wins). When one plugin alone reports, its report as it gave it (a copy, with what it says
        changed since its last one)."""
        reports = [rep for rep in (plugin.queue_report(self) for _, plugin in self.plugins) if rep]
        if len(reports) == 1:
            only = reports[0]
            return only.copy_as() if isinstance(only, QueueStatuses) else QueueStatuses(only)
        out = QueueStatuses()
        for rep in reports:
            for name, attrs in rep.items():
                out.setdefault(name, attrs)
        return out


#: the memo's entry: the last session's nodes (the NodeInfo objects, in order) and their map by name
NODES_MEMO = "session.node-by-name"


def _node_by_name(nodes: list[NodeInfo], memo: dict[str, Any] | None) -> dict[str, NodeInfo]:
    """Node name -> node. A caller that carries a memo and hands the same NodeInfo objects out again
    (the simulator's and the forecast's nodes) gets the last session's map while the objects are those,
    in the same order (compared by identity, without reading them; a node's name never changes, and
    no one edits the map)."""
    held = memo.get(NODES_MEMO) if memo is not None else None
    if held is not None and len(held[0]) == len(nodes) and all(map(operator.is_, held[0], nodes)):
        out: dict[str, NodeInfo] = held[1]
        if check.enabled() and out != {n.name: n for n in nodes}:
            raise check.StateCheckError(f"{check.ENV}: the nodes' map by name kept over the memo differs "
                                        "from the nodes' own names")
        return out
    out = {n.name: n for n in nodes}
    if memo is not None:
        memo[NODES_MEMO] = (list(nodes), out)
    return out


def phase_written_back(job: JobInfo, unschedulable: bool) -> PodGroupPhase:
    """The PodGroup phase a session's close writes back for a job (Volcano's `jobStatus`):
    `unschedulable` is whether the job holds this session's Unschedulable condition."""
    if unschedulable and job.counts.get(RUNNING, 0):
        return GROUP_UNKNOWN
    scheduled = job.scheduled_num() + job.releasing_with_node_num()
    if scheduled >= job.min_available:
        completed = job.counts.get(SUCCEEDED, 0) + job.counts.get(FAILED, 0)
        # "scheduled equals completed": releasing tasks with a node are scheduled but not completed
        return GROUP_COMPLETED if scheduled == completed else GROUP_RUNNING
    if job.phase is not GROUP_INQUEUE:
        return GROUP_PENDING
    return GROUP_INQUEUE
