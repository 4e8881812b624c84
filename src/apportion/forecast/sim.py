"""The forecast simulator: the project's simulator, started from a cluster state instead of empty.

`forecast_simulator` builds `apportion.simulation.engine.Simulator` through its public seam
(`Simulator.from_state` with a `SimStart`, simulation/start.py); the loop, events, session
application, evictions and reservation follower are the simulator's own. What differs is where jobs
come from: every job of the start state is active from the first instant, its tasks where the state
has them (running tasks on their nodes, each with its own remaining time), and each session sees the
state's own objects (`DumpObjects`: pods with their affinities, tolerations and per-pod requests, the
pods of other schedulers, the nodes in the dump's order) with only statuses and nodes changed, so the
first session decides what `apportion cycle` decides on the same dump. Sessions run on the period
grid counted from the state's instant.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from apportion.actions.pass_over import PASS_OVER, PassOver
from apportion.cluster.model import (
    GROUP_RUNNING,
    PENDING,
    RELEASING,
    RUNNING,
    SUCCEEDED,
    JobInfo,
    NodeInfo,
    PodGroupPhase,
    TaskInfo,
    TaskStatus,
)
from apportion.cluster.snapshot import Snapshot
from apportion.collection import collection_paused
from apportion.forecast import job_build, job_since
from apportion.forecast.built_check import check_as_built, check_starts
from apportion.forecast.job_build import build_job, job_consts, job_fields
from apportion.forecast.job_build import fresh_task as _fresh_task
from apportion.forecast.job_build import task_copy as task_copy
from apportion.forecast.job_since import build_first, check_build
from apportion.forecast.quiet_early import EarlyQuietTest
from apportion.forecast.runtime import Assumed
from apportion.forecast.start import StartState
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.simulation.jobs import SimJob, SimTask
from apportion.simulation.scenario import JobSpec, RunSpec, Scenario
from apportion.simulation.start import SimStart, StartJob, StartTask
from apportion.simulation.workload import rng_for
from apportion.state import check

#: a forecast start's task status (forecast/start.py) as the simulator's task state
_SIM_STATUS = {"pending": PENDING, "running": RUNNING, "releasing": RELEASING,
               "done": SUCCEEDED}


class DumpObjects:
    """What sessions see of a start state taken from cluster objects (`SessionObjects`)."""

    def __init__(self, state: StartState, bookings: Sequence[tuple[float, Callable[[Snapshot], None]]],
                 keep_waiting: bool = True) -> None:
        self.t0 = state.t0
        #: hand a job's objects out again while nothing changed them, waiting jobs too (see job_info)
        self.keep_waiting = keep_waiting
        self.node_order = list(state.nodes)
        self.orphans = list(state.orphan_tasks)
        self.templates: dict[str, JobInfo] = {}
        self.template_tasks: dict[str, list[TaskInfo]] = {}
        #: per job uid, its tasks' statuses in the state by index, each kept until the simulation
        #: changes it (Bound stays Bound), then None
        self.original: dict[str, list[TaskStatus | None]] = {}
        #: changes to the sessions' objects from an instant on (seconds after the state's instant):
        #: a booked reservation as the plan follower would publish it (forecast/reserve.py)
        self.bookings = sorted(bookings, key=lambda b: b[0])
        #: the live nodes' names (all of them, and the dump's in its order) and the NodeInfo objects
        #: last built for them
        self._nodes: tuple[frozenset[str], tuple[str, ...], list[NodeInfo]] | None = None
        #: the live nodes' mapping and the simulator's count of node events when `_nodes` was last
        #: found to be its nodes (None: compare the names at the next session)
        self._nodes_seen: tuple[Collection[str], int] | None = None
        #: hand a kept job out again with its new phase when only the phase moved (`rephasable`);
        #: False builds it anew (the reference the tests compare with)
        self.rephase = True
        #: how many jobs were handed out again with a new phase instead of built
        self.rephased = 0
        #: the uids of the objects given a new phase since `take_moved`
        self.moved: set[str] = set()
        #: build with `build_fast`; False: with `build` (the reference the tests compare with)
        self.fast = True
        #: `build_fast` hands out again the tasks of the job's last object that a fresh build would
        #: give alike (`_task_again`); False: every task fresh (the reference the tests compare with)
        self.share_tasks = True
        #: how many tasks were handed out again so (for the tests' reading)
        self.tasks_shared = 0
        #: per job uid, its template's fields every build takes as they are (`build_fast`; a fork
        #: shares it, forecast/forward.py: it is the templates' alone)
        self._fresh_fields: dict[str, tuple[Any, ...]] = {}
        #: False once a job object was built without its starts (`starts_at_build`)
        self._starts_all = True
        #: whether a build may give a running task made anew its start from the simulation (`build_job`'s
        #: `starts`): the simulator's records by task key name each task's own (`Simulator.start_keys_own`)
        self.starts_known = False
        #: whether the self-check is on: asked of the environment here and once a session (`view_key`,
        #: `take_moved`) rather than at each of the thousands of jobs asked for
        self.checking = check.enabled()

    def starts_at_build(self) -> bool:
        """Whether every job object handed out so far was built with each running task it made anew
        given its start (`build_fast` with `starts_known` and `STARTS_AT_BUILD`: semantics F10), and
        the next will be (`JobsHandout.starts_at_build`)."""
        if not (self.fast and self.starts_known and job_build.STARTS_AT_BUILD):
            self._starts_all = False
        return self._starts_all

    def status_changed(self, job: SimJob, task: SimTask) -> None:
        """The dump's own status no longer applies."""
        statuses = self.original.get(job.uid)
        if statuses is not None:
            statuses[task.index] = None

    def adjust(self, snap: Snapshot, now: float, live_nodes: Collection[str], node_events: int | None = None) -> None:
        """The dump's nodes in its order (with their key: the same while the same of them are live),
        other schedulers' pods, and the bookings in force."""
        held = self._nodes
        seen = self._nodes_seen
        # the live nodes compared only after a node event (a forecast runs hundreds of sessions with
        # none); the mapping itself is kept, so that another one at the same address never passes
        same = node_events is not None and seen is not None and seen[0] is live_nodes and seen[1] == node_events
        if held is not None and same and not self.checking:
            names, snap.nodes = held[1], list(held[2])
            snap.nodes_key = ("start", id(self), names)
            snap.node_maps_as_left = True
            self._patch(snap, now)
            return
        self._nodes_seen = None if node_events is None else (live_nodes, node_events)
        live = live_nodes.keys() if isinstance(live_nodes, dict) else frozenset(live_nodes)
        if same and held is not None and held[0] != live:
            raise check.StateCheckError(f"{check.ENV}: the live nodes changed with no node event")
        if held is not None and held[0] == live:
            # the last session's NodeInfo objects: a session changes nothing on them but their task
            # maps, which are session open's to fill (it gives every node its map, and nothing reads
            # a node's map before). They are left as they are, so that open writes only the maps
            # that differ (K28) rather than every node's at every snapshot
            names, snap.nodes = held[1], list(held[2])
        else:
            order = [n for n in self.node_order if n.name in live]
            names = tuple(n.name for n in order)
            if held is not None and held[1] == names:
                nodes = held[2]
            else:
                nodes = [NodeInfo(name=n.name, index=i, allocatable=n.allocatable, labels=n.labels,
                                  taints=n.taints, unschedulable=n.unschedulable) for i, n in enumerate(order)]
            self._nodes = (frozenset(live), names, nodes)
            snap.nodes = list(nodes)
        snap.nodes_key = ("start", id(self), names)
        # the nodes (handed out again or built) with their maps untouched: only sessions write them
        snap.node_maps_as_left = True
        self._patch(snap, now)

    def _patch(self, snap: Snapshot, now: float) -> None:
        """Other schedulers' pods and the bookings in force at `now`."""
        snap.orphan_tasks = [_fresh_task(t, t.status, t.node_name) for t in self.orphans]
        for at, patch in self.bookings:
            if now >= self.t0 + at - 1e-9:
                patch(snap)

    def view_key(self, now: float) -> int:
        """How many bookings are in force at `now` (`adjust` patches those in)."""
        self.checking = check.enabled()
        return sum(1 for at, _ in self.bookings if now >= self.t0 + at - 1e-9)

    def kept(self, sj: SimJob) -> JobInfo | None:
        """The job object kept from the last session, while no task of it changed status there or
        since (a session that places a task, even one it takes back, clears allocated_as_added), nor
        its phase, queue or reservation; else None. A booking in force moves the job's object into its
        queue (forecast/reserve.py `booking_patch`): such an object is no longer as built and is not
        kept, so that the patch applies to a fresh build and the self-check compares like with like."""
        ji = sj.info
        if ji is not None and ji.allocated_as_added and ji.phase is sj.phase and ji.queue == sj.queue and sj.info_of == (
                sj.changes, sj.phase, sj.queue, sj.reservation_id):
            return ji
        return None

    def rephasable(self, sj: SimJob) -> JobInfo | None:
        """The job object kept from the last session when all that moved since is the job's phase (no
        task of it changed status, nor its queue or reservation, nor a booking moved it): a fresh build
        would differ from it only in the phase, which `job_info` then sets on it (`take_moved` names
        it); else None."""
        ji = sj.info
        if ji is not None and ji.allocated_as_added and ji.queue == sj.queue and sj.info_of[0] == sj.changes and (
                sj.info_of[2], sj.info_of[3]) == (sj.queue, sj.reservation_id):
            return ji
        return None

    def take_moved(self) -> set[str]:
        """The uids of the job objects `job_info` gave a new phase since the last call."""
        moved, self.moved = self.moved, set()
        self.checking = check.enabled()
        return moved

    def job_info(self, sj: SimJob) -> JobInfo | None:
        """The job from the dump's objects, its tasks' statuses and nodes the simulation's (None for a
        future arrival: the simulator's own job)."""
        tpl = self.templates.get(sj.uid)
        if tpl is None:
            return None
        ji = self.kept(sj)
        if ji is None and self.keep_waiting and self.rephase:
            ji = self.rephasable(sj)
            if ji is not None:
                self.rephased += 1
                # a phase moved (F2's write, or close's) and nothing else: the object as built is the
                # fresh build but for the phase. Its other holders read it by identity together with
                # its phase and version (the handout, the quiet tests, `derive`); between sessions, so
                # the next snapshot names it (`take_moved`) rather than the cache's log, which it may
                # have drained already and would name it once more at the snapshot after
                if ji.phase is not sj.phase:
                    ji.phase = sj.phase
                    self.moved.add(sj.uid)
                sj.info_of = (sj.changes, sj.phase, sj.queue, sj.reservation_id)
        if ji is not None:
            # kept from the last session: no task of it changed status there or since (a session that
            # places a task, even one it takes back, clears allocated_as_added), nor its phase; what a
            # session records on the job is cleared, and its tasks keep what session open filled in
            # (rows, compared columns, status at open), as the cache's kept jobs do: open clears the
            # rows when the node table's columns are not the last session's
            ji.conditions.clear()
            ji.nodes_fit_errors.clear()
            ji.failed_roles.clear()
            ji.job_fit_errors = ""
            if self.checking:
                check_as_built(ji, self.build(sj, tpl))
            return ji
        if not (self.fast and self.starts_known and job_build.STARTS_AT_BUILD):
            self._starts_all = False  # a build without its starts: `give_starts` looks at every job
        if self.fast:
            ji = self.build_fast(sj, tpl)
            if self.checking:
                check_as_built(ji, self.build(sj, tpl), "built fast")
                check_starts(ji, sj, self.template_tasks[sj.uid])
        else:
            ji = self.build(sj, tpl)
        if self.keep_waiting or (sj.phase is GROUP_RUNNING
                                 and all(t.status is RUNNING for t in sj.tasks)):
            sj.info, sj.info_of = ji, (sj.changes, sj.phase, sj.queue, sj.reservation_id)
        else:
            sj.info, sj.info_of = None, ()
        return ji

    def build(self, sj: SimJob, tpl: JobInfo) -> JobInfo:
        """A new job object from the template `tpl` of `sj`, its tasks' statuses and nodes the
        simulation's (the reference a kept object is checked against)."""
        ji = JobInfo(*job_fields(tpl))
        ji.queue, ji.phase = sj.queue, sj.phase
        ji.annotations = dict(tpl.annotations)
        ji.min_task_member = dict(tpl.min_task_member)
        ji.min_resources = None if tpl.min_resources is None else tpl.min_resources.clone()
        ji.tasks, ji.conditions, ji.nodes_fit_errors, ji.failed_roles = {}, {}, {}, set()
        ji.job_fit_errors = ""
        ji.allocated, ji.counts, ji.pending_be, ji.allocated_as_added = Resource(), {}, 0, True
        ji.gated_tasks, ji.version, ji.derived = 0, 0, {}
        original = self.original[sj.uid]
        for st, tt in zip(sj.tasks, self.template_tasks[sj.uid]):
            status = original[st.index]
            if status is not None:
                ji.add_task(_fresh_task(tt, status, tt.node_name))
            else:
                ji.add_task(_fresh_task(tt, st.status, st.node if st.status is not SUCCEEDED else ""))
        return ji

    def build_fast(self, sj: SimJob, tpl: JobInfo) -> JobInfo:
        """What `build` gives, faster (a job is built again each time a task of it starts or ends,
        thousands of times a forecast): each task made anew a copy of its template (`copy_task`), and
        `add_task`'s bookkeeping (counts, allocated, version, the log) done in `build_job`'s loop, in
        `add_task`'s order, so that `allocated` sums alike; a job none of whose tasks changed takes
        its template's bookkeeping (`build_first`, forecast/job_since.py, semantics F17).

        A job is built again when a task of it changed status, most often one of its ten: the tasks
        of its last object that no session placed, evicted or pipelined since (the object kept
        `allocated_as_added`) and to which a fresh build would give the same status, node and start
        are that object's, as a kept job's are (`task_again`, forecast/job_build.py; docs/semantics.md K36: what sessions
        fill in on such a task follows from its request and the node table's columns, and open pairs
        it with its last placement as it is, K31)."""
        prev = sj.info
        held = prev.tasks if self.share_tasks and prev is not None and prev.allocated_as_added else None
        uid = sj.uid
        consts = self._fresh_fields.get(uid)
        if consts is None:
            consts = self._fresh_fields[uid] = job_consts(tpl)
        templates, original = self.template_tasks[uid], self.original[uid]
        if held is None and job_since.FIRST_AS_STATE and None not in original:
            # every task as the state has it (a start job's first build): the template's bookkeeping
            starts = self.starts_known and job_build.STARTS_AT_BUILD
            first = build_first(sj, tpl, consts, templates, starts)
            if first is not None:
                if self.checking:
                    check_build(first, build_job(sj, tpl, consts, templates, original, None, starts)[0])
                return first
        ji, shared = build_job(sj, tpl, consts, templates, original, held, self.starts_known)
        self.tasks_shared += shared
        return ji


@dataclass
class ForecastQuietTest(EarlyQuietTest):
    """The forward run's quiet test (F1-F3), which also hands a session it lets run the jobs allocate
    may pass over there (semantics F4: `QuietTest.passed_over`, actions/pass_over.py)."""

    #: hand the set over (False: allocate tries every job, the reference the tests compare with)
    pass_over: bool = True
    #: sets handed over, and the jobs in them (for the benchmark's and the tests' reading)
    handed: int = 0
    handed_jobs: int = 0
    #: the last set handed over (allocate counts on it), and the counts of those before
    _last: PassOver | None = None
    _counted: tuple[int, int] = (0, 0)

    def __call__(self, ssn: Session) -> dict[str, PodGroupPhase] | None:
        """`EarlyQuietTest`'s answer; a session it lets run gets the jobs to pass over."""
        verdict = super().__call__(ssn)
        if verdict is None and self.pass_over:
            hand = self.passed_over(ssn)
            if hand is not None:
                ssn.shared[PASS_OVER] = hand
                last, self._last = self._last, hand
                if last is not None:
                    self._counted = (self._counted[0] + last.passed, self._counted[1] + last.tried)
                self.handed += 1
                self.handed_jobs += len(hand.jobs)
        return verdict

    @property
    def passed(self) -> int:
        """Jobs allocate passed over, over the run."""
        return self._counted[0] + (self._last.passed if self._last is not None else 0)

    @property
    def tried(self) -> int:
        """Jobs handed over that allocate tried all the same (the check at its turn failed, or the
        self-check tried them)."""
        return self._counted[1] + (self._last.tried if self._last is not None else 0)


def forecast_simulator(state: StartState, *, assumed: Assumed | None = None, seed: int = 0,
                       targets: tuple[str, ...] | list[str] = (), horizon: float | None = None,
                       bookings: Sequence[tuple[float, Callable[[Snapshot], None]]] = (),
                       keep_waiting: bool = True, skip_quiet: bool = True, pass_over: bool = True) -> Simulator:
    """The simulator started from `state`; `run()` once, then read `jobs[uid].first_start` (the
    state's clock).

    `assumed` gives runtimes the state does not know (drawn with `seed`); without it such tasks never
    end. `targets`: job uids whose first start ends the run once all have started (the rest of the
    future is not needed). `horizon`: seconds after the state's instant at which the run stops.
    `bookings`: (seconds after now, change to a session's objects) in force from that instant on.
    `keep_waiting=False`: only jobs whose every task runs are handed out again from session to
    session (for a caller that changes the jobs of a snapshot in place, as the fit checks do).
    `skip_quiet=False`: run every session, also those the quiet test shows to change nothing
    (forecast/quiet.py; the reference the tests compare with). `sim.sessions` counts both.
    `pass_over=False`: allocate tries every job of a session that runs, also those the quiet test shows
    cannot keep a placement (semantics F4; the reference). Without `skip_quiet` no job is passed over.
    """
    plan_children = {q.name for kids in state.children.values() for q in kids}
    queues = {n: q for n, q in state.queues.items() if n not in plan_children}
    sc = Scenario(name="forecast", source="forecast", base=Path("."), nodes=list(state.nodes), queues=queues,
                  priority_classes=dict(state.priority_classes), conf=state.conf, conf_text="",
                  jobs=list(state.arrivals), generators=[], traces=[], plans={}, reservations=[], node_events=[],
                  run=RunSpec(horizon=None if horizon is None else state.t0 + horizon, period=state.period,
                              seed=seed, drain=False))
    objects = DumpObjects(state, bookings, keep_waiting)
    # a record per job and task and the simulator's own per task, all living on through the run and
    # forming no cycles (kube's build_snapshot says why paused)
    with collection_paused():
        sim = _simulator(sc, state, objects, assumed, seed, targets)
    objects.starts_known = sim.start_keys_own
    # a scheduler whose decisions never settle (reclaim evicting and placing the same pods again every
    # period) would otherwise be simulated to the horizon one period at a time
    sim.max_sessions = FORWARD_SESSION_LIMIT
    # a forecast reads the jobs' starts and ends, never the recorder's time series or queue reports
    sim.recording = False
    sim.why_pending = False  # nor the why-pending texts (docs/semantics.md F6)
    # its run makes no cyclic garbage (sessions free themselves; the self-check's runs confirm it)
    sim.collect_cycles = False
    if skip_quiet:
        test = ForecastQuietTest(pass_over=pass_over)
        sim.quiet = test
        sim.early = test.before_open
    return sim


def _simulator(sc: Scenario, state: StartState, objects: DumpObjects, assumed: Assumed | None, seed: int,
               targets: Collection[str]) -> Simulator:
    # a function of its own so that the start records (a StartTask per task) are gone when the collector
    # is back: its first collection then scans only what lives on
    start = SimStart(t0=state.t0, jobs=_start_jobs(state, objects, assumed, seed),
                     plans=copy.deepcopy(state.plans) if state.plans else {},
                     children=copy.deepcopy(state.children) if state.plans else {},
                     reservation_ids=dict(state.reservation_ids),
                     reservation_accepted=dict(state.reservation_accepted), objects=objects,
                     wakes=[state.t0 + at for at, _patch in objects.bookings if at > 0],
                     stop_when_started=frozenset(targets), held=dict(state.held),
                     keep_done=state.keep_done, queue_order=state.queue_order,
                     whole_gangs=state.whole_gangs)
    return Simulator.from_state(sc, start, conf=state.conf, seed=seed, label="forecast")


#: the most sessions a forecast's forward run simulates; the job's start is then unknown (None)
FORWARD_SESSION_LIMIT = 20_000


def draws_needed(state: StartState) -> int:
    """How many runtimes an assumed runtime has to give: running pods without a known end, and jobs
    without a runtime. With none, the forecast simulator runs alike with or without one."""
    return sum(1 for j in state.jobs for t in j.tasks if t.status == "running"
               and t.remaining is None) + sum(1 for j in state.jobs if j.runtime is None)


def _start_jobs(state: StartState, objects: DumpObjects, assumed: Assumed | None, seed: int) -> list[StartJob]:
    # draws in a fixed order (jobs by uid, tasks in order) so a seed gives the same runtimes
    need = draws_needed(state) if assumed is not None else 0
    drawn = list(assumed.draw(rng_for(seed, "forecast-runtimes"), need)) if assumed is not None and need else []
    t0 = state.t0
    out = []
    for js in state.jobs:
        tpl = js.template
        runtime = js.runtime
        if runtime is None and drawn:
            runtime = float(drawn.pop())
        first = tpl.tasks[next(iter(tpl.tasks))].resreq if tpl.tasks else Resource()
        spec = JobSpec(name=tpl.name, queue=tpl.queue, arrival=t0,
                       duration=math.inf if runtime is None else runtime, tasks=len(js.tasks),
                       min_member=tpl.min_available, resources=first, priority_class=tpl.priority_class_name)
        sj = SimJob(spec=spec, uid=tpl.uid, queue=tpl.queue, creation=tpl.creation, priority=tpl.priority,
                    resreq=first, min_resources=tpl.min_resources or Resource(), phase=tpl.phase, state="active")
        objects.templates[tpl.uid] = tpl
        objects.template_tasks[tpl.uid] = [t.template for t in js.tasks]
        statuses: list[TaskStatus | None] = [None] * len(js.tasks)
        objects.original[tpl.uid] = statuses
        starts = []
        # SimTask(index, name, status, node, start) and StartTask(key, end, deleted) by position: one
        # of each per task of the dump, so keyword matching would be paid ten thousand times
        for ts in js.tasks:
            st = SimTask(ts.index, ts.template.name, _SIM_STATUS[ts.status], ts.node, t0 - ts.elapsed)
            sj.tasks.append(st)
            statuses[ts.index] = ts.template.status
            if ts.status == "done":
                sj.done_tasks += 1
            left = ts.remaining
            if left is None and ts.status == "running" and assumed is not None and drawn:
                whole = float(drawn.pop())
                left = max(0.0, whole - ts.elapsed) if ts.template.start_time else whole
            # a pod being deleted frees its node by the next session unless its end is known, and is
            # then over (deleted in the cluster, not the simulation's to bring back)
            starts.append(StartTask(ts.template.key, None if left is None else t0 + left, ts.status == "releasing"))
        out.append(StartJob(job=sj, tasks=starts))
    return out
