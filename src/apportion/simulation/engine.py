"""The discrete-event simulator over the real engine.

The simulator owns the workload (jobs, tasks, the reservation plans) and time. What a scheduler would
see of the cluster lives in a SchedulerCache (`apportion.state`), fed by watch events as the
simulator's state changes: a job's arrival adds its PodGroup and Pods, a task's start or end modifies
its Pod, a finished job is deleted, a node failure deletes its Node. Each scheduling step runs one real
session over the cache's snapshot (`apportion.engine.open_session` / `run_session`), and the decisions
come back through the Binder, Evictor and StatusUpdater protocols:

* binds: the task runs on that node from now and completes `duration` later;
* evictions (reclaim, preempt): the victim stops; the work it had done is lost and counted; it
  restarts from scratch as a new pending attempt. A gang (minMember > 1) restarts whole: a
  distributed job cannot go on without a member, so every running member stops with it;
* pipelined tasks stay pending; a later session places them once the victims' resources are free;
* podgroup phases are carried from one session to the next (Pending → Inqueue → Running).

Sessions run on the period grid (t = k × period) but only when something can change: after an
event (arrival, completion, node event, reservation boundary) or after a session that changed
something. A session that changed nothing would decide the same again on the same state, so the
simulator jumps straight to the next event: a month of trace costs sessions in proportion to its
events, not to its seconds.

Everything is deterministic: events at the same time are ordered by kind then name, jobs by
(arrival, name), and synthetic workloads come from seeded numpy Generators.
"""

from __future__ import annotations

import heapq
import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from apportion.cluster.model import (
    PENDING,
    RELEASING,
    SUCCEEDED,
    JobInfo,
    NodeInfo,
    PodGroupPhase,
    QueueInfo,
)
from apportion.cluster.snapshot import Snapshot
from apportion.engine import dispatch, open_session, run_session
from apportion.framework.conf import SchedulerConf
from apportion.framework.session import Session
from apportion.resources import PODS
from apportion.simulation.collector import collector_for_long_runs
from apportion.simulation.handout import JobsHandout, give_session_starts
from apportion.simulation.jobs import (
    EV_ARRIVAL,
    EV_FINISH,
    EV_NODE,
    EV_RELEASE,
    EV_RESERVATION,
    EV_WAKE,
    NAMESPACE,
    SimJob,
    SimTask,
)
from apportion.simulation.observer import SessionObserver
from apportion.simulation.outlet import Outlet
from apportion.simulation.queue_order import CacheQueueOrder, QueueOrder
from apportion.simulation.recorder import Recorder
from apportion.simulation.reservations import SimPlan, default_child, simulation_plans
from apportion.simulation.result import SimulationResult
from apportion.simulation.scenario import JobSpec, Scenario
from apportion.simulation.session_checks import check_carried, check_quiet
from apportion.simulation.skipping import EarlyTest, QuietSkipping
from apportion.simulation.start import SessionObjects, SimStart, objects_delta
from apportion.simulation.workload import workload
from apportion.state import check
from apportion.state.cache import SchedulerCache

log = logging.getLogger(__name__)


class Simulator(QuietSkipping):
    """State, event queue and the loop. Build with a scenario (or `from_state`); `run()` once."""

    def __init__(self, scenario: Scenario, *, conf: SchedulerConf | None = None, seed: int | None = None,
                 label: str = "", start: SimStart | None = None) -> None:
        self.sc = scenario
        self.conf = conf or scenario.conf
        self.seed = scenario.run.seed if seed is None else seed
        self.period = scenario.run.period
        self.label = label
        self.warnings: list[str] = list(scenario.warnings)
        self._warned: set[str] = set()
        #: the clock's start: sessions run on the period grid from here
        self.t0 = 0.0
        self.now = 0.0
        #: what sessions see of a start state that came from cluster objects (None: the scenario's jobs),
        #: and the jobs they built for the last session (`handout.every = True`: every job asked for
        #: at every session, the reference)
        self.objects: SessionObjects | None = None
        self.handout: JobsHandout | None = None
        #: releasing tasks deleted in the start state: over once released, not restarted
        self.deleting: set[tuple[str, int]] = set()
        #: job uids whose first start ends the run once all have started (empty: run to the end)
        self.stop_when_started: frozenset[str] = frozenset()
        self.heap: list[tuple[float, int, str, int, Any]] = []
        self._seq = 0
        # nodes: live templates by name; failed ones are kept aside until they recover
        self.nodes: dict[str, NodeInfo] = {n.name: n for n in scenario.nodes}
        self.failed: dict[str, NodeInfo] = {}
        self.node_tasks: dict[str, set[tuple[str, int]]] = {n: set() for n in self.nodes}
        #: what a scheduler sees: fed by events at each session from the state below (see _flush)
        self.cache = SchedulerCache(report=self.warn)
        self._node_objs: dict[str, tuple[str, dict[str, Any]]] = {}
        #: jobs whose pods or podgroup may differ from what the cache holds
        self._dirty: set[str] = set()
        #: those changed (again) since the last early quiet test was handed them (`_early_view`)
        self._early_dirty: set[str] = set()
        #: node events so far, and their count when the cache was last told the nodes (-1: never)
        self._node_changes = 0
        self._nodes_told = -1
        #: jobs a start state's objects build for every session (SimStart.objects): never told to the cache
        self._objects_jobs: set[str] = set()
        #: what the cache was last told: per pod key (status, node), per podgroup uid (phase, queue, ...)
        self._told: dict[str, tuple[Any, ...]] = {}
        self._told_pg: dict[str, tuple[Any, ...]] = {}
        #: child queues the cache holds, by name
        self._told_queues: dict[str, QueueInfo] = {}
        self._requests: dict[str, dict[str, str]] = {}
        #: carried from session to session: plugins keep here what only the queue specs and the cluster
        #: decide (capacity's tree), keyed by those inputs, so a change in either is never missed
        self._memo: dict[str, Any] = {}
        #: the session's queues from the cache's, in the order sessions see them (and the root queue
        #: they see when the scenario and the cache have none)
        self._queue_order = QueueOrder()
        #: the jobs of the last snapshot, by uid (the cache hands unchanged ones out again)
        self._last_jobs: dict[str, JobInfo] = {}
        self.jobs: dict[str, SimJob] = {}
        self.active: dict[str, SimJob] = {}
        #: task key (namespace/name, as sessions name tasks) -> its job and task; whether each task of the
        #: start state's jobs entered a key of its own (none shares one with another task, an arrival's too)
        self.task_by_key: dict[str, tuple[SimJob, SimTask]] = {}
        self.start_keys_own = False
        self.queues = scenario.queues
        self.hierarchical = any(o.enabled("enableHierarchy") for t in self.conf.tiers for o in t.plugins)
        self.plans: dict[str, SimPlan] = simulation_plans(scenario.plans, scenario.queues, scenario.reservations,
                                                          self.period)
        self.res_by_name: dict[str, str] = {}  # scenario reservation name -> id (accepted or not)
        self.res_accepted: dict[str, bool] = {}
        self.reservation_log: list[dict[str, Any]] = []
        self.children: dict[str, list[QueueInfo]] = {}
        #: start-state jobs kept out of the sessions until their reservation is active: uid -> its id
        self.held: dict[str, str] = {}
        self.keep_done = False
        self.whole_gangs = True
        self.recorder = Recorder(self, [*scenario.nodes, *(n for ev in scenario.node_events for n in ev.new_nodes)])
        #: sample the recorder's time series after each session and take each session's queue report
        #: (a forecast, which reads only the jobs, turns this off)
        self.recording = True
        #: whether sessions make the why-pending texts (events, pending tasks' explanations) and the
        #: jobs' `message` from them (a forecast, which reads neither, turns this off: semantics F6)
        self.why_pending = True
        #: False: the cycle collector off while the run goes, not frozen out (simulation/collector.py)
        self.collect_cycles = True
        self.sessions = 0
        #: asked of each opened session: None when it may bind, pipeline, evict or admit; else the
        #: PodGroup phases its close would move (uid -> phase; empty: it provably changes nothing), so
        #: that it is not run and those phases are written instead (the forecast's test, semantics F1
        #: and F2; under the self-check it runs and must change those phases and nothing else).
        #: `sessions` counts such sessions too, `sessions_skipped` them alone
        self.quiet: Callable[[Session], Mapping[str, PodGroupPhase] | None] | None = None
        #: asked before the snapshot and the open instead, when only tasks finished since the last
        #: open (semantics F3, simulation/skipping.py); None: never
        self.early: EarlyTest | None = None
        self.sessions_skipped = 0
        self._other_events = self._snapshots = 0
        self._opened: tuple[Any, ...] | None = None
        #: stop after this many sessions (None: no limit); `stopped_at_limit` says whether it did
        self.max_sessions: int | None = None
        self.stopped_at_limit = False
        self.events = 0
        #: told before and after every scheduling step (simulation/observer.py)
        self.observers: list[SessionObserver] = []
        self.dirty = True
        self.last_session: float | None = None
        self._load_cluster(nodes=start is None or start.objects is None)  # objects give sessions nodes
        horizon = scenario.run.horizon
        for spec in workload(scenario, self.seed):
            if horizon is None or spec.arrival <= horizon:
                self._add_job(spec)
        for i, ev in enumerate(scenario.node_events):
            self._push(ev.at, EV_NODE, f"node-event-{i:05d}", ev)
        for r in scenario.reservations:
            self._push(r.submit_at, EV_RESERVATION, r.name, r)
        if start is not None:
            self._begin(start)

    @classmethod
    def from_state(cls, scenario: Scenario, start: SimStart, *, conf: SchedulerConf | None = None,
                   seed: int | None = None, label: str = "") -> Simulator:
        """A simulator that starts from a state rather than empty: the scenario gives the cluster,
        the queues, the conf and the future (arrivals, node events, the horizon), `start` the jobs
        active from `start.t0` (see simulation/start.py)."""
        return cls(scenario, conf=conf, seed=seed, label=label, start=start)

    def _begin(self, start: SimStart) -> None:
        self.t0 = self.now = start.t0
        self.objects = start.objects
        self.handout = None if start.objects is None else JobsHandout(start.objects)
        self.stop_when_started = frozenset(start.stop_when_started)
        if start.plans:
            self.plans = start.plans
            self.children = start.children
            for plan in self.plans.values():
                for name, p in plan.wake_points():
                    if p > self.t0:
                        self._push(p, EV_WAKE, name, None)
        self.res_by_name.update(start.reservation_ids)
        self.res_accepted.update(start.reservation_accepted)
        self.held = dict(start.held)
        self.keep_done = start.keep_done
        self.whole_gangs = start.whole_gangs
        if start.queue_order is not None:
            self._queue_order = CacheQueueOrder(start.queue_order)
        for i, at in enumerate(start.wakes):
            if at > self.t0:
                self._push(at, EV_WAKE, f"wake-{i:04d}", None)
        keys = len(self.task_by_key)
        self._start_jobs(start.jobs)
        self.start_keys_own = len(self.task_by_key) - keys == sum(len(j.tasks) for j in start.jobs)

    # ================================================================= set-up
    def _add_job(self, spec: JobSpec) -> None:
        uid = f"{NAMESPACE}/{spec.name}"
        prio = self.sc.priority_classes.get(spec.priority_class, 0) if spec.priority_class else 0
        minres = spec.resources.clone().multi(spec.min_member)
        minres.scalars.pop(PODS, None)
        # creation sorts like the arrival time (fixed width) so Volcano's FIFO tie-breaks follow arrivals
        job = SimJob(spec=spec, uid=uid, queue=spec.queue, creation=f"{spec.arrival:020.3f}", priority=prio,
                     resreq=spec.resources, min_resources=minres,
                     tasks=[SimTask(index=i, name=f"{spec.name}-task-{i}") for i in range(spec.tasks)])
        self.jobs[uid] = job
        for t in job.tasks:
            self.task_by_key[f"{NAMESPACE}/{t.name}"] = (job, t)
        self._push(spec.arrival, EV_ARRIVAL, spec.name, uid)

    # ================================================================= the loop
    def _grid(self, t: float) -> float:
        if self.t0:
            return self.t0 + math.ceil((t - self.t0) / self.period - 1e-9) * self.period
        k = math.ceil(t / self.period - 1e-9)
        return k * self.period

    def run(self, progress: Callable[[float, float], None] | None = None) -> SimulationResult:
        """Run to the horizon (or until the workload drains and nothing can change)."""
        with collector_for_long_runs(self.collect_cycles):
            return self._run(progress)

    def run_until(self, until: float) -> bool:
        """Run every scheduling step before the instant `until` (with the events up to each) and stop
        before the first at or after it (within 1e-9, the tolerance of a booking's start), so that a
        caller can copy the simulator there and go on differently (the forecast's reservation tries,
        forecast/forward.py). False when the run ended before `until` (nothing left to change, the
        horizon, the session limit). `run_until` and `run` may follow; each goes on from here."""
        with collector_for_long_runs(self.collect_cycles):
            while (t_sess := self._next_session()) is not None:
                if t_sess >= until - 1e-9:
                    return True
                self._step(t_sess)
        return False

    def _run(self, progress: Callable[[float, float], None] | None) -> SimulationResult:
        wall0 = time.perf_counter()
        horizon = self.sc.run.horizon if self.sc.run.horizon is not None else math.inf
        last_arrival = max((j.spec.arrival for j in self.jobs.values()), default=0.0)
        goal = horizon if math.isfinite(horizon) else max(last_arrival, 1.0)
        self.recorder.sample(0.0)
        while (t_sess := self._next_session()) is not None:
            self._step(t_sess)
            if progress is not None:
                progress(self.now, goal)
        self.recorder.finish(self.now)
        return SimulationResult(
            scenario=self.sc, conf=self.conf, jobs=sorted(self.jobs.values(), key=lambda j: (j.spec.arrival, j.uid)),
            recorder=self.recorder, plans=self.plans, reservation_log=self.reservation_log, sessions=self.sessions,
            events=self.events, end_time=self.now, wall_seconds=time.perf_counter() - wall0,
            warnings=self.warnings, label=self.label, seed=self.seed,
        )

    def _next_session(self) -> float | None:
        """The instant of the next scheduling step, or None when the run is over."""
        horizon = self.sc.run.horizon if self.sc.run.horizon is not None else math.inf
        t_ev = self.heap[0][0] if self.heap else math.inf
        if self.dirty:
            t_sess = self._grid(self.now)
            if self.last_session is not None and t_sess <= self.last_session:
                t_sess = self.last_session + self.period
        else:
            t_sess = self._grid(t_ev) if math.isfinite(t_ev) else math.inf
        if min(t_ev, t_sess) == math.inf:
            return None  # nothing left that could change anything
        if self.max_sessions is not None and self.sessions >= self.max_sessions:
            self.stopped_at_limit = True
            return None
        if min(t_ev, t_sess) > horizon and (not self.sc.run.drain or not self.active):
            return None
        if not self.active and not self.held and not self.dirty and all(
                k in (EV_WAKE, EV_NODE) for _, k, *_ in self.heap):
            return None  # the workload is over; only cluster or plan boundaries remain
        return t_sess

    def _step(self, t_sess: float) -> None:
        """The events up to and including the session instant, then the session: a job arriving at t
        is seen by the session at t, and a task finishing at t has freed its node by then."""
        while self.heap and self.heap[0][0] <= t_sess:
            t, kind, _name, _seq, payload = heapq.heappop(self.heap)
            self.now = t
            self._event(kind, payload)
            self.events += 1
        self.now = t_sess
        self._session()
        if self.recording:
            self.recorder.sample(self.now)

    # ================================================================= events
    def _event(self, kind: int, payload: Any) -> None:
        self.dirty = True
        if kind != EV_FINISH:
            self._other_events += 1
        if kind == EV_ARRIVAL:
            self._arrive(self.jobs[payload])
        elif kind == EV_FINISH:
            uid, idx, attempt = payload
            self._finish(self.jobs[uid], idx, attempt)
        elif kind == EV_RELEASE:
            uid, idx, attempt = payload
            job = self.jobs[uid]
            t = job.tasks[idx]
            if (uid, idx) in self.deleting:
                self.deleting.discard((uid, idx))
                if t.status is RELEASING and t.attempt == attempt:
                    self._release_deleted(job, t)
                    return
            if t.status is RELEASING and t.attempt == attempt:
                self._free(job, t)
                self._set_status(job, t, PENDING if job.state == "active" else SUCCEEDED)
        elif kind == EV_NODE:
            self._node_event(payload)
        elif kind == EV_RESERVATION:
            self._submit_reservation(payload)
        elif kind == EV_WAKE:
            pass  # a reservation boundary: the follower runs at the next session

    def _arrive(self, job: SimJob) -> None:
        spec = job.spec
        if spec.queue in self.plans:
            plan = self.plans[spec.queue]
            if spec.reservation:
                rid = self.res_by_name.get(spec.reservation, "")
                if not rid or not self.res_accepted.get(spec.reservation):
                    self._reject(job, f"Application {job.uid} names reservation {spec.reservation!r}, "
                                      "which was not accepted")
                    return
                res = plan.reservations.get(rid)
                if res is None or not res.active(self.now):
                    self._reject(job, f"Application {job.uid} submitted to a reservation which is not "
                                      f"currently active: {rid}")
                    return
                job.reservation_id = rid
                job.queue = rid
            else:
                job.queue = default_child(spec.queue)
        job.state = "active"
        self.active[job.uid] = job
        self._dirty.add(job.uid)
        self._early_dirty.add(job.uid)
        self.recorder.work_changed(job.queue)

    # ================================================================= one session
    def _snapshot(self) -> Snapshot:
        """The cache's snapshot, with jobs in uid order and queues in the scenario's order, then the plan
        follower's children, then root (the order sessions have always seen them in)."""
        handout = self.handout
        touched = handout.touched(self._dirty) if handout is not None else set()
        self._snapshots += 1
        self._flush()
        snap = self.cache.snapshot(keep=True)
        checking = check.enabled()
        if checking:
            check.check_snapshot(self.cache, snap)
        snap.jobs = {uid: snap.jobs[uid] for uid in sorted(snap.jobs)}
        changed: set[str] | None = None
        cache_jobs = snap.jobs
        if handout is not None:
            # a start state from cluster objects builds (some of) its jobs itself (the forecast, from
            # a dump's pods): asked again only for the jobs that may have changed (simulation/handout.py)
            snap.jobs, changed = handout.hand_out(self.active, snap.jobs, touched, snap.jobs_delta)
        last = self._last_jobs
        delta = snap.jobs_delta
        give_session_starts(snap.jobs, cache_jobs, changed, delta, last, self.task_by_key, handout,
                            self.objects is not None, checking)
        self._last_jobs = snap.jobs
        snap.queues = self._queue_order.queues(snap.queues, self.queues, self.children, self.hierarchical, checking)
        snap.memo = self._memo
        if self.objects is not None:
            # the start state's nodes (not the cache's, which no session sees), with their key (K9)
            self.cache.nodes_unseen(snap.nodes)
            self.objects.adjust(snap, self.now, self.nodes, self._node_changes)
            snap.jobs_delta = objects_delta(snap.jobs, last, delta, changed,
                                            handout.gone if handout is not None else None)
        return snap

    def snapshot(self) -> Snapshot:
        """The objects the next session would see (fresh per call), e.g. to try a change on them: with
        no jobs' delta, since the caller may replace jobs in it."""
        snap = self._snapshot()
        snap.jobs_delta = None
        if self.handout is not None:
            self.handout.forget()
        return snap

    def _session(self) -> None:
        for obs in self.observers:
            obs.before_session(self)
        self._follow_plans()
        self.last_session = self.now
        self.dirty = False
        if self.active:
            self._run_session()
        if self.stop_when_started and all(self.jobs[u].first_start is not None for u in self.stop_when_started):
            # every job asked about has started: nothing later can change its answer
            self.heap.clear()
            self.dirty = False
        for obs in self.observers:
            obs.after_session(self)

    def _run_session(self) -> None:
        self.sessions += 1
        early = None
        if self.early is not None and self.handout is not None:
            view = self._early_view(self.handout.touched(set()) | self.handout.volatile)
            early = None if view is None else self.early(view)
            if early is not None and not check.enabled():
                self._skip_early(early)
                return
        snap = self._snapshot()
        ssn = open_session(snap, self.conf, session_id=f"session-{self.sessions}")
        ssn.now = self.now
        ssn.why_pending = self.why_pending
        self._note_open()
        verdict = self.quiet(ssn) if self.quiet is not None else None
        warnings_at_open = list(ssn.warnings)
        if early is not None:
            # the quiet test compared its answer with the early one (forecast/quiet_early.py)
            self._check_early_warnings(f"session {ssn.uid} at {self.now}", ssn)
        if verdict is not None and not check.enabled():
            self._skip_session(ssn, verdict)
            return
        phases_before = {uid: sj.phase for uid, sj in self.active.items()} if verdict is not None else {}
        # the queue report is read by the recorder alone: a forecast (no recording) leaves it unmade
        result = run_session(ssn, queue_report=self.recording)
        if check.enabled():
            check.check_cache(self.cache)
        for w in result.warnings:
            self.warn(w)
        changed = bool(result.binds or result.evictions or result.pipelined)
        outlet = Outlet(self)
        # a job closed as in the last session has the phase and message that session gave it; the
        # outlet reads phases alone, so no condition objects are made for it
        dispatch(result, outlet, outlet, outlet, recomputed_only=True, queues=False, conditions=False)
        changed = changed or outlet.phase_changed
        closes = ssn.closes.jobs
        for job in ssn.closing if ssn.why_pending else ():
            ev = closes[job.uid].event
            if ev is not None:
                sj3 = self.active.get(job.uid)
                if sj3 is not None:
                    sj3.message = ev.message
        if check.enabled():
            check_carried(self.active, result)
            if verdict is not None:
                moved = {uid: sj.phase for uid, sj in self.active.items() if phases_before.get(uid) is not sj.phase}
                check_quiet(f"session {ssn.uid} at {self.now}", result, verdict, moved, warnings_at_open)
        if self.recording:
            self.recorder.session_report(self.now, result.queue_status)
        ssn.release()
        self.dirty = changed


def simulate(scenario: Scenario, *, conf: SchedulerConf | None = None, seed: int | None = None,
             label: str = "", progress: Callable[[float, float], None] | None = None) -> SimulationResult:
    """Run a scenario (optionally with another scheduler configuration or seed)."""
    return Simulator(scenario, conf=conf, seed=seed, label=label).run(progress)


__all__ = ["Simulator", "simulate"]
