"""The session: open, the extension-point dispatchers, in-session operations, close.

Follows `framework/session.go`, `framework/session_plugins.go` and `framework/framework.go`. Plugins
register callbacks by plugin name at open; dispatchers walk the tiers in order and consult a plugin only
if it registered the point and its switch for that point is on (§4.2 of the semantics guide).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from apportion.cluster.model import (
    ON_NODE_STATUSES,
    FitError,
    JobInfo,
    NodeInfo,
    PodGroupPhase,
    QueueInfo,
    TaskInfo,
    TaskStatus,
    default_task_compare,
)
from apportion.cluster.node_table import NodeTable
from apportion.cluster.snapshot import Snapshot
from apportion.framework import extension as ep
from apportion.framework.arguments import Arguments
from apportion.framework.conf import PluginOption, SchedulerConf
from apportion.framework.interface import ExtensionPoints, Fn, NodeFilter, Plugin, plugin_builder
from apportion.framework.placement import PlacementCache
from apportion.framework.queue_picker import PickerFactory, QueuePicker, ScanPicker
from apportion.resources import Resource, format_amount

log = logging.getLogger(__name__)


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


def _node_kind(status: TaskStatus) -> str | None:
    if status is TaskStatus.RELEASING:
        return "releasing"
    if status is TaskStatus.PIPELINED:
        return "pipelined"
    if status in ON_NODE_STATUSES:
        return "used"
    return None


class Session(ExtensionPoints):
    """One scheduling session over one snapshot. A snapshot is consumed by the session that opens it."""

    #: tests switch this off to compare plugins' queue pickers against the reference scan
    fast_queue_pickers = True

    def __init__(self, snapshot: Snapshot, conf: SchedulerConf, *, session_id: str = "session-1") -> None:
        self.uid = session_id
        self.conf = conf
        self.snapshot = snapshot
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.nodes: list[NodeInfo] = snapshot.nodes
        #: the caller's memo carried across snapshots (None: nothing carried); see Snapshot.memo
        self.memo: dict[str, Any] | None = snapshot.memo
        self.node_by_name: dict[str, NodeInfo] = {n.name: n for n in self.nodes}
        self.warnings: list[str] = list(snapshot.warnings) + list(conf.warnings)
        self.enabled_actions = set(conf.actions)
        #: the session's clock in seconds (the simulator's time), or None: then the wall clock (epoch)
        self.now: float | None = None
        #: the simulate extension points serve only topology-aware preemption; plugins skip their per-task
        #: PrePredicate copies of queue state when no configured action can read them.
        self.simulation_state_needed = "preempt" in self.enabled_actions and bool(
            conf.action_arguments("preempt").get("enableTopologyAwarePreemption", False)
        )
        extra = {n for j in self.jobs.values() for t in j.tasks.values() for n in t.resreq.scalars}
        extra.update(n for t in snapshot.orphan_tasks for n in t.resreq.scalars)
        self.table = NodeTable([n.name for n in self.nodes], [n.allocatable for n in self.nodes], extra)
        self.total_resource = Resource()
        for n in self.nodes:
            self.total_resource.add(n.allocatable)
        self._place_initial_tasks()

        ExtensionPoints.__init__(self)
        #: per point, the (tier, option, fn) list dispatchers walk; rebuilt when a plugin registers.
        self._dispatch: dict[str, list[tuple[int, PluginOption, Fn]]] = {}
        self.event_handlers: list[EventHandler] = []
        self.cycle_states: dict[str, dict[str, Any]] = {}
        self.binds: dict[str, str] = {}
        self.evictions: set[str] = set()
        self.evict_reasons: dict[str, str] = {}
        self.events: list[Event] = []
        #: explanations per object (job uid or task key), most recent last.
        self.explanations: dict[str, list[str]] = {}
        #: nodes that allocate found unresolvable for a task (filtered out by reclaim/preempt).
        self.unresolvable_nodes: dict[str, set[int]] = {}
        #: plugins whose predicate / node-order answers are node-local, with their placement-key functions
        self.node_local_keys: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        #: their optional one-node answers (see add_node_local_key)
        self.node_row_fns: dict[str, Callable[[TaskInfo, int], Any]] = {}
        self.placement = PlacementCache(self)
        #: queue-order plugins' fast pickers (used when that plugin alone orders queues)
        self.queue_pickers: dict[str, PickerFactory] = {}
        #: per-session state that several plugins share (e.g. the Kubernetes node view), by name
        self.shared: dict[str, Any] = {}
        self.old_phases = {uid: j.phase for uid, j in self.jobs.items()}
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
        for job in self.jobs.values():
            if not self.job_valid(job)[0]:
                continue
            for t in job.tasks.values():
                if t.status is TaskStatus.PENDING and not t.gated:
                    self.cycle_states[t.uid] = {}

    # ================================================================= set-up
    def _place_initial_tasks(self) -> None:
        """Every task that occupies a node joins it, in job then task order, and the node table takes
        them all in one vectorised step."""
        placed: list[TaskInfo] = []
        rows: list[int] = []
        kinds: list[str] = []

        def collect(t: TaskInfo) -> None:
            kind = _node_kind(t.status)
            if kind is None or not t.node_name:
                return
            node = self.node_by_name.get(t.node_name)
            if node is None:
                return
            node.tasks[t.key] = t
            placed.append(t)
            rows.append(node.index)
            kinds.append(kind)

        for job in self.jobs.values():
            for t in job.tasks.values():
                t.initial_status = t.status
                collect(t)
        for t in self.snapshot.orphan_tasks:
            collect(t)
        vecs = self.table.vectors([t.resreq for t in placed])
        for t, v in zip(placed, vecs):
            t.vec = v
        self.table.add_many(rows, vecs, kinds)

    def task_vec(self, t: TaskInfo) -> np.ndarray:
        """The task's request as a node-table row, computed once per task."""
        if t.vec is None:
            t.vec = self.table.vector(t.resreq)
        return t.vec

    def task_cols(self, t: TaskInfo) -> np.ndarray:
        """The node-table columns rule (a) compares for the task's request, computed once per task."""
        if t.cols is None:
            t.cols = self.table.compare_columns(t.resreq)
        return t.cols

    def fits_idle_rows(self, t: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """Rule (a) of the request against Idle, for every row at once."""
        return self.table.fits(self.task_vec(t), self.task_cols(t), self.table.idle[rows])

    # ================================================================= registration
    def _fns_changed(self, point: str) -> None:
        self._dispatch.pop(point, None)

    def add_node_local_key(self, plugin: str, fn: Callable[[TaskInfo], Hashable | None],
                           row_fn: Callable[[TaskInfo, int], Any] | None = None) -> None:
        """Vouch that the plugin's predicate / node-order answer for a node depends only on that node and
        on what `fn(task)` summarises (None: not for this task). Enables the placement cache.

        `row_fn(task, row)` is the same answer for one node, computed without arrays: (passes,
        unresolvable) for a predicate, the score for a node-order function. It must equal the vectorised
        function's answer for that row exactly; the cache refreshes the node a placement touched with it,
        where a numpy call on a one-row array costs more in overhead than the arithmetic.
        """
        self.node_local_keys[plugin] = fn
        if row_fn is not None:
            self.node_row_fns[plugin] = row_fn

    def add_queue_picker(self, plugin: str, factory: PickerFactory) -> None:
        """Offer a picker that finds the best queue faster under the plugin's own queue order."""
        self.queue_pickers[plugin] = factory

    def queue_picker(self, queues: list[QueueInfo]) -> QueuePicker:
        """The queues to visit, best first: the plugin's picker when it alone orders queues, else the scan."""
        fns = self._consulted(ep.QUEUE_ORDER)
        if len(fns) == 1 and self.fast_queue_pickers:
            factory = self.queue_pickers.get(fns[0][1].name)
            if factory is not None:
                return factory(queues, self.queue_compare)
        return ScanPicker(queues, self.queue_compare)

    def add_event_handler(self, handler: EventHandler) -> None:
        """AddEventHandler: call the handler on every allocation and deallocation of this session."""
        self.event_handlers.append(handler)

    def _enabled(self, opt: PluginOption, point: str) -> bool:
        gates = ep.GATES[point]
        return not gates or any(opt.enabled(g) for g in gates)

    def _consulted(self, point: str) -> list[tuple[int, PluginOption, Fn]]:
        """(tier index, option, fn) for every enabled plugin that registered the point, in order."""
        cached = self._dispatch.get(point)
        if cached is not None:
            return cached
        table = self.fns[point]
        out = []
        for tier_index, tier in enumerate(self.conf.tiers):
            for opt in tier.plugins:
                fn = table.get(opt.name)
                if fn is not None and self._enabled(opt, point):
                    out.append((tier_index, opt, fn))
        self._dispatch[point] = out
        return out

    def consulted(self, point: str) -> list[tuple[int, PluginOption, Fn]]:
        """(tier index, option, fn) of every plugin the dispatcher of `point` consults, in order."""
        return self._consulted(point)

    def has_fn(self, point: str) -> bool:
        """Whether any plugin the point's dispatcher consults registered it."""
        return bool(self._consulted(point))

    # ================================================================= orders
    def queue_compare(self, l: QueueInfo, r: QueueInfo) -> int:
        """QueueOrderFn: the plugins' order, then creation time, then name; negative when `l` goes first."""
        for _, _, fn in self._consulted(ep.QUEUE_ORDER):
            order = fn(l, r)
            if order:
                return order
        if l.creation != r.creation:
            return -1 if l.creation < r.creation else 1
        return -1 if l.name < r.name else (1 if l.name > r.name else 0)

    def job_compare_plugins(self, l: JobInfo, r: JobInfo) -> int:
        """The plugins' JobOrderFn answer alone (0 when none decides)."""
        for _, _, fn in self._consulted(ep.JOB_ORDER):
            order = fn(l, r)
            if order:
                return order
        return 0

    def job_compare(self, l: JobInfo, r: JobInfo) -> int:
        """JobOrderFn: the plugins' order, then creation time, then uid; negative when `l` goes first."""
        order = self.job_compare_plugins(l, r)
        if order:
            return order
        if l.creation != r.creation:
            return -1 if l.creation < r.creation else 1
        return -1 if l.uid < r.uid else (1 if l.uid > r.uid else 0)

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        """TaskOrderFn: the plugins' order, then Volcano's default task comparison."""
        for _, _, fn in self._consulted(ep.TASK_ORDER):
            order = fn(l, r)
            if order:
                return order
        return default_task_compare(l, r)

    def victim_queue_compare(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
        """VictimQueueOrderFn: the plugins' order of two victims' queues for the preemptor's queue; with no
        plugin, the reverse of the queue order."""
        fns = self._consulted(ep.VICTIM_QUEUE_ORDER)
        for _, _, fn in fns:
            order = fn(l, r, preemptor)
            if order:
                return order
        if fns:
            return 0
        return -self.queue_compare(l, r)

    def victim_compare(self, l: TaskInfo, r: TaskInfo, preemptor: TaskInfo | None) -> int:
        """BuildVictimsPriorityQueue's order: negative when l is evicted before r."""
        if l.job == r.job:
            return -self.task_compare(l, r)
        lj, rj = self.jobs.get(l.job), self.jobs.get(r.job)
        if lj is None or rj is None:
            if lj is None and rj is not None:
                return -1
            if rj is None and lj is not None:
                return 1
            return -1 if l.uid > r.uid else (1 if l.uid < r.uid else 0)
        if lj.queue != rj.queue and preemptor is not None and preemptor.job in self.jobs:
            pq = self.queues[self.jobs[preemptor.job].queue]
            order = self.victim_queue_compare(self.queues[lj.queue], self.queues[rj.queue], pq)
            if order:
                return order
        order = -self.job_compare_plugins(lj, rj)
        if order:
            return order
        return -self.task_compare(l, r)

    def sort_victims(self, victims: list[TaskInfo], preemptor: TaskInfo | None) -> list[TaskInfo]:
        """The victims in the order they are evicted (victim_compare)."""
        def cmp(a: TaskInfo, b: TaskInfo) -> int:
            return self.victim_compare(a, b, preemptor)

        return sorted(victims, key=functools.cmp_to_key(cmp))

    # ================================================================= job-level votes
    def job_valid(self, job: JobInfo) -> tuple[bool, str]:
        """JobValid: (valid, the reason of the first plugin that says no)."""
        for _, _, fn in self._consulted(ep.JOB_VALID):
            ok, msg = fn(job)
            if not ok:
                return False, msg
        return True, ""

    def job_ready(self, job: JobInfo) -> bool:
        """JobReady: every consulted plugin says the job is ready."""
        return all(fn(job) for _, _, fn in self._consulted(ep.JOB_READY))

    def _vote(self, point: str, job: JobInfo) -> bool:
        tier_of_permit: int | None = None
        current_tier = -1
        for tier_index, _, fn in self._consulted(point):
            if tier_index != current_tier:
                if tier_of_permit is not None:
                    return True
                current_tier = tier_index
            res = fn(job)
            if res < 0:
                return False
            if res > 0:
                tier_of_permit = tier_index
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        """JobPipelined: the tiered vote (a reject refuses; a tier with a permit and no reject admits; all
        abstaining admits)."""
        return self._vote(ep.JOB_PIPELINED, job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        """JobEnqueueable: the tiered vote, as job_pipelined."""
        return self._vote(ep.JOB_ENQUEUEABLE, job)

    def job_enqueued(self, job: JobInfo) -> None:
        """JobEnqueued: tell every consulted plugin that enqueue admitted the job."""
        for _, _, fn in self._consulted(ep.JOB_ENQUEUED):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """JobStarving: the first tier with a plugin decides, all its plugins agreeing; False with none."""
        decided_tier: int | None = None
        result = True
        for tier_index, _, fn in self._consulted(ep.JOB_STARVING):
            if decided_tier is not None and tier_index != decided_tier:
                break
            decided_tier = tier_index
            result = result and bool(fn(job))
        return result if decided_tier is not None else False

    # ================================================================= queue-level votes
    def overused(self, queue: QueueInfo) -> bool:
        """Overused: some consulted plugin says the queue is overused."""
        return any(fn(queue) for _, _, fn in self._consulted(ep.OVERUSED))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Allocatable: every consulted plugin lets the queue take the task now."""
        return all(fn(queue, task) for _, _, fn in self._consulted(ep.ALLOCATABLE))

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Preemptive: every consulted plugin lets the queue reclaim for the task."""
        return all(fn(queue, task) for _, _, fn in self._consulted(ep.PREEMPTIVE))

    # ================================================================= victims
    def _victims(self, point: str, evictor: TaskInfo, evictees: list[TaskInfo]) -> list[TaskInfo]:
        current_tier = -1
        victims: list[TaskInfo] | None = None
        stopped = False
        for tier_index, _, fn in self._consulted(point):
            if tier_index != current_tier:
                if current_tier >= 0 and victims:
                    return victims
                current_tier, victims, stopped = tier_index, None, False
            if stopped:
                continue
            cands, vote = fn(evictor, evictees)
            if vote == ep.ABSTAIN:
                continue
            if not cands:
                victims, stopped = None, True
                continue
            if victims is None:
                victims = list(cands)
            else:
                keep = {id(c) for c in cands}
                inter = [v for v in victims if id(v) in keep]
                victims = inter or None
        return victims or []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Preemptable: the candidates the tiers agree the preemptor may evict."""
        return self._victims(ep.PREEMPTABLE, preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Reclaimable: the candidates the tiers agree the reclaimer may evict."""
        return self._victims(ep.RECLAIMABLE, reclaimer, candidates)

    # ================================================================= predicates and scoring
    def pre_predicate(self, task: TaskInfo) -> str | None:
        """PrePredicate: None, or the first plugin's reason the task cannot be placed anywhere."""
        for _, _, fn in self._consulted(ep.PRE_PREDICATE):
            err = fn(task)
            if err:
                return str(err)
        return None

    def plugin_predicates(self, task: TaskInfo, rows: np.ndarray) -> NodeFilter:
        """Every plugin predicate over the rows; a node failing one plugin is not asked by the next."""
        ok = np.ones(len(rows), dtype=bool)
        unresolvable = np.zeros(len(rows), dtype=bool)
        reasons: list[tuple[str, np.ndarray]] = []
        for _, _, fn in self._consulted(ep.PREDICATE):
            live = np.nonzero(ok)[0]
            if len(live) == 0:
                break
            verdict: NodeFilter = fn(task, rows[live])
            fail = ~verdict.ok
            ok[live[fail]] = False
            unresolvable[live[verdict.unresolvable & fail]] = True
            for text, mask in verdict.reasons:
                full = np.zeros(len(rows), dtype=bool)
                full[live[mask]] = True
                reasons.append((text, full))
        return NodeFilter(ok, unresolvable, reasons)

    def predicate_for_allocate(self, task: TaskInfo, rows: np.ndarray | None = None) -> tuple[np.ndarray, list[tuple[str, int]]]:
        """allocate's predicate: request <= FutureIdle, then the plugin predicates.

        Returns the feasible rows and the failure summary (reason, node count) for explanations.
        """
        if rows is None:
            rows = np.arange(len(self.nodes))
        vec = self.task_vec(task)
        cols = self.task_cols(task)
        future = self.table.future_idle()[rows]
        fit = self.table.fits(vec, cols, future)
        summary: list[tuple[str, int]] = []
        if not fit.all():
            for j in cols:
                short = (vec[j] >= future[:, j] + 0.1) & (np.abs(vec[j] - future[:, j]) >= 0.1)
                n = int(short.sum())
                if n:
                    name = self.table.columns[j]
                    best = float(future[:, j].max()) if len(future) else 0.0
                    summary.append(
                        (f"insufficient {name} (need {format_amount(name, vec[j])}, "
                         f"best node has {format_amount(name, max(best, 0.0))})", n)
                    )
        cand = rows[fit]
        pf = self.plugin_predicates(task, cand)
        for text, mask in pf.reasons:
            n = int(mask.sum())
            if n:
                summary.append((text, n))
        if pf.unresolvable.any():
            self.unresolvable_nodes.setdefault(task.uid, set()).update(int(x) for x in cand[pf.unresolvable])
        return cand[pf.ok], summary

    def predicate_for_preempt(self, task: TaskInfo) -> np.ndarray:
        """reclaim/preempt's predicate: no resource test; only unresolvable failures reject a node."""
        skip = self.unresolvable_nodes.get(task.uid, set())
        rows = np.array([i for i in range(len(self.nodes)) if i not in skip], dtype=np.int64)
        pf = self.plugin_predicates(task, rows)
        return rows[~pf.unresolvable]

    def node_scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """NodeOrder: the consulted plugins' scores of the rows, summed."""
        scores = np.zeros(len(rows))
        for _, _, fn in self._consulted(ep.NODE_ORDER):
            scores += fn(task, rows)
        return scores

    def best_node(self, task: TaskInfo, rows: np.ndarray) -> int:
        """Pick the node for a task among candidate rows: best-node plugins, else the top score.

        Ties go to the smallest node name (rows are in name order), not at random as in Volcano.
        """
        if len(rows) == 1:
            return int(rows[0])
        scores = self.node_scores(task, rows)
        for _, _, fn in self._consulted(ep.BEST_NODE):
            choice = fn(task, rows, scores)
            if choice is not None:
                return int(choice)
        return int(rows[int(np.argmax(scores))])

    def choose_node(self, task: TaskInfo) -> tuple[int | None, bool, list[tuple[str, int]]]:
        """allocate's node choice: feasible nodes (FutureIdle and the predicates), those that fit Idle
        if any, then the best score. Returns (row, whether it fits Idle, failure summary); the row is
        None, with the summary, when no node is feasible."""
        choice = self.placement.choose(task)
        if choice is not None:
            return choice[0], choice[1], []
        feasible, summary = self.predicate_for_allocate(task)
        if len(feasible) == 0:
            return None, False, summary
        idle_ok = self.fits_idle_rows(task, feasible)
        fits_idle = bool(idle_ok.any())
        return self.best_node(task, feasible[idle_ok] if fits_idle else feasible), fits_idle, summary

    def sorted_by_score(self, task: TaskInfo, rows: np.ndarray) -> list[int]:
        """The rows, best score first (ties by row, that is by node name)."""
        scores = self.node_scores(task, rows)
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i]))
        return [int(rows[i]) for i in order]

    # ================================================================= simulate points
    def simulate_allocatable(self, queue: QueueInfo, task: TaskInfo, state: dict[str, Any]) -> bool:
        """SimulateAllocatable: every consulted plugin lets the queue take the task in the simulated state."""
        return all(fn(queue, task, state) for _, _, fn in self._consulted(ep.SIMULATE_ALLOCATABLE))

    def simulate_predicate(self, task: TaskInfo, row: int, state: dict[str, Any]) -> str | None:
        """SimulatePredicate: None, or the first plugin's reason the row will not do in the simulated
        state."""
        for _, _, fn in self._consulted(ep.SIMULATE_PREDICATE):
            err = fn(task, row, state)
            if err:
                return str(err)
        return None

    def simulate_add_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateAddTask: every consulted plugin puts the task on the row in the simulated state."""
        for _, _, fn in self._consulted(ep.SIMULATE_ADD_TASK):
            fn(state, task, row)

    def simulate_remove_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateRemoveTask: every consulted plugin takes the task off the row in the simulated state."""
        for _, _, fn in self._consulted(ep.SIMULATE_REMOVE_TASK):
            fn(state, task, row)

    # ================================================================= in-session operations
    def _fire(self, task: TaskInfo, allocate: bool) -> None:
        for h in self.event_handlers:
            f = h.allocate if allocate else h.deallocate
            if f is not None:
                f(task)

    def _move(self, task: TaskInfo, new: TaskStatus, node_name: str) -> None:
        """Change status and node placement together, keeping the node table and job counts current."""
        old_kind = _node_kind(task.status)
        if old_kind is not None and task.node_name:
            node = self.node_by_name[task.node_name]
            self.table.remove(node.index, self.task_vec(task), old_kind)
            node.tasks.pop(task.key, None)
        job = self.jobs[task.job]
        job.set_status(task, new)
        task.node_name = node_name
        new_kind = _node_kind(new)
        if new_kind is not None and node_name:
            node = self.node_by_name[node_name]
            self.table.add(node.index, self.task_vec(task), new_kind)
            node.tasks[task.key] = task

    def do_allocate(self, task: TaskInfo, row: int) -> None:
        """Allocate the task on the row's node inside the session (Allocated; event handlers told)."""
        self._move(task, TaskStatus.ALLOCATED, self.nodes[row].name)
        task.last_tx_status = TaskStatus.ALLOCATED
        self._fire(task, True)

    def do_pipeline(self, task: TaskInfo, row: int) -> None:
        """Pipeline the task on the row's node inside the session (Pipelined; event handlers told)."""
        self._move(task, TaskStatus.PIPELINED, self.nodes[row].name)
        task.last_tx_status = TaskStatus.PIPELINED
        self._fire(task, True)

    def do_evict(self, task: TaskInfo, reason: str) -> TaskStatus:
        """Evict the task inside the session (Releasing; event handlers told); returns its status before."""
        prev = task.status
        self._move(task, TaskStatus.RELEASING, task.node_name)
        self._fire(task, False)
        return prev

    def undo_allocate(self, task: TaskInfo) -> None:
        """Undo an allocation or a pipelining: the task is Pending again, on no node."""
        self._move(task, TaskStatus.PENDING, "")
        task.last_tx_status = None
        self._fire(task, False)

    def undo_evict(self, task: TaskInfo) -> None:
        # Keep: undoing an eviction restores Running even for a victim that was Bound.
        """Undo an eviction: the task is Running on its node again."""
        self._move(task, TaskStatus.RUNNING, task.node_name)
        self._fire(task, True)

    def commit_bind(self, task: TaskInfo) -> None:
        """Send the bind: the task is Binding and joins the session's binds."""
        job = self.jobs[task.job]
        job.set_status(task, TaskStatus.BINDING)
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
                if t.status is TaskStatus.ALLOCATED:
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
        job.nodes_fit_errors[task.uid] = [FitError("", [text])]
        job.job_fit_errors = text
        if task.role:
            job.failed_roles.add(task.role)
        self.explain(task.key, text)

    # ================================================================= close
    def close(self) -> None:
        """CloseSession: plugin close hooks (gang writes conditions), then PodGroup phases."""
        if self.closed:
            return
        for _, plugin in self.plugins:
            plugin.on_session_close(self)
        for job in self.jobs.values():
            job.phase = self._pod_group_phase(job)
        self._build_events()
        self.closed = True

    def release(self) -> None:
        """Drop the plugins and every table that refers to them, once the caller is done with the session.

        Plugins keep the session and the session keeps the plugins (and their bound methods), so a
        finished session is a reference cycle that only Python's cycle collector frees: by then its
        objects have been promoted to the oldest generation, where a caller that runs thousands of
        sessions pays for them in full collections (benchmarks/README.md). After `release` the session's
        results (binds, evictions, jobs, events, explanations) are still readable; nothing that
        consults a plugin works any more.
        """
        self.plugins = []
        self.fns = {p: {} for p in self.fns}
        self._dispatch = {}
        self.event_handlers = []
        self.queue_pickers = {}
        self.node_local_keys = {}
        self.node_row_fns = {}
        self.shared = {}
        del self.placement

    def _pod_group_phase(self, job: JobInfo) -> PodGroupPhase:
        running = job.counts.get(TaskStatus.RUNNING, 0)
        cond = job.conditions.get("Unschedulable")
        if running and cond and cond[0] == "True" and cond[3] == self.uid:
            return PodGroupPhase.UNKNOWN
        scheduled = job.scheduled_num() + job.releasing_with_node_num()
        if scheduled >= job.min_available:
            completed = job.counts.get(TaskStatus.SUCCEEDED, 0) + job.counts.get(TaskStatus.FAILED, 0)
            # "scheduled equals completed": releasing tasks with a node are scheduled but not completed
            return PodGroupPhase.COMPLETED if scheduled == completed else PodGroupPhase.RUNNING
        if job.phase is not PodGroupPhase.INQUEUE:
            return PodGroupPhase.PENDING
        return PodGroupPhase.INQUEUE

    def _build_events(self) -> None:
        events: list[Event] = []
        if self.queue_decisions_blocked:
            events.append(Event("session", "QueueDecisionsBlocked", self.queue_decisions_blocked))
        for uid in sorted(self.jobs):
            job = self.jobs[uid]
            pending = sorted(
                (t for t in job.tasks.values() if t.status is TaskStatus.PENDING),
                key=functools.cmp_to_key(self.task_compare),
            ) if job.counts.get(TaskStatus.PENDING) else []
            job_msgs = self.explanations.get(uid, [])
            if job.phase is PodGroupPhase.PENDING and job.tasks:
                msg = "; ".join(job_msgs) or "podgroup is Pending: not admitted by enqueue in this session"
                events.append(Event(uid, "Unschedulable", msg))
                continue
            if not pending:
                continue
            msgs = list(job_msgs)
            for t in pending:
                for m in self.explanations.get(t.key, []):
                    tm = f"{t.name}: {m}"
                    if not any(m in known for known in msgs):
                        msgs.append(tm)
                if len(msgs) >= 6:
                    break
            if not msgs:
                msgs = [f"{len(pending)} task(s) left pending: no action of this session reached them"]
            events.append(Event(uid, "Unschedulable", "; ".join(msgs)))
        self.events = events

    # ================================================================= results
    def pipelined(self) -> dict[str, str]:
        """Task key -> node of every task the session left Pipelined."""
        return {
            t.key: t.node_name
            for j in self.jobs.values()
            for t in j.tasks.values()
            if t.status is TaskStatus.PIPELINED
        }

    def queue_reports(self) -> dict[str, dict[str, Any]]:
        """Queue name -> attributes from the plugins' queue reports (the first plugin to report a queue
        wins)."""
        out: dict[str, dict[str, Any]] = {}
        for _, plugin in self.plugins:
            rep = plugin.queue_report(self)
            if rep:
                for name, attrs in rep.items():
                    out.setdefault(name, attrs)
        return out


def finite(x: float) -> bool:
    """Neither infinite nor NaN."""
    return not (math.isinf(x) or math.isnan(x))
