"""The forecast simulator: the project's simulator, started from a cluster state instead of empty.

`ForecastSimulator` is `apportion.simulation.engine.Simulator` with its loop, events, session
application, evictions and reservation follower unchanged. What differs is where jobs come from:
every job of the start state is active from the first instant, its tasks where the state has them
(running tasks on their nodes, each with its own remaining time), and each session sees the state's
own objects (pods with their affinities, tolerations and per-pod requests, the pods of other
schedulers, the nodes in the dump's order) with only statuses and nodes changed, so the first session
decides what `apportion cycle` decides on the same dump. Sessions run on the period grid counted from
the state's instant.
"""

from __future__ import annotations

import copy
import math
import operator
from dataclasses import fields
from pathlib import Path
from typing import Any

from apportion.cluster.model import JobInfo, NodeInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.cluster.snapshot import Snapshot
from apportion.forecast.runtime import Assumed
from apportion.forecast.start import StartState
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.simulation.jobs import EV_FINISH, EV_RELEASE, EV_WAKE, SimJob, SimTask
from apportion.simulation.scenario import JobSpec, RunSpec, Scenario
from apportion.simulation.workload import rng_for

#: a forecast start's task status (forecast/start.py) as the simulator's task state
_SIM_STATUS = {"pending": TaskStatus.PENDING, "running": TaskStatus.RUNNING, "releasing": TaskStatus.RELEASING,
               "done": TaskStatus.SUCCEEDED}


#: TaskInfo's fields in __init__ order: a copy is TaskInfo(*_task_fields(t)), not `dataclasses.replace`,
#: which builds keyword arguments field by field (benchmarks/README.md)
_task_fields = operator.attrgetter(*(f.name for f in fields(TaskInfo)))
_job_fields = operator.attrgetter(*(f.name for f in fields(JobInfo)))


def _fresh_task(t: TaskInfo, status: TaskStatus, node: str) -> TaskInfo:
    """A copy of a template task for one session: what a session fills in starts empty (the rest it
    never edits in place: it replaces a task's containers)."""
    new = TaskInfo(*_task_fields(t))
    new.status = status
    new.node_name = node
    new.vec = new.cols = new.initial_status = new.last_tx_status = None
    new.nominated_node = ""
    return new


class ForecastSimulator(Simulator):
    """Runs a start state forward; `run()` once, then read `jobs[uid].first_start` (the state's clock).

    `assumed` gives runtimes the state does not know (drawn with `seed`); without it such tasks never
    end. `targets`: job uids whose first start ends the run once all have started (the rest of the
    future is not needed). `horizon`: seconds after the state's instant at which the run stops.
    """

    def __init__(self, state: StartState, *, assumed: Assumed | None = None, seed: int = 0,
                 targets: tuple[str, ...] | list[str] = (), horizon: float | None = None) -> None:
        plan_children = {q.name for kids in state.children.values() for q in kids}
        queues = {n: q for n, q in state.queues.items() if n not in plan_children}
        sc = Scenario(name="forecast", source="forecast", base=Path("."), nodes=list(state.nodes), queues=queues,
                      priority_classes=dict(state.priority_classes), conf=state.conf, conf_text="",
                      jobs=list(state.arrivals), generators=[], traces=[], plans={}, reservations=[], node_events=[],
                      run=RunSpec(horizon=None if horizon is None else state.t0 + horizon, period=state.period,
                                  seed=seed, drain=False))
        super().__init__(sc, conf=state.conf, seed=seed, label="forecast")
        self.t0 = state.t0
        self.now = state.t0
        self.state = state
        self.node_order = list(state.nodes)
        self.orphans = list(state.orphan_tasks)
        self.templates: dict[str, JobInfo] = {}
        self.template_tasks: dict[str, list[TaskInfo]] = {}
        #: a task's status in the state, kept until the simulation changes it (Bound stays Bound)
        self.original: dict[tuple[str, int], TaskStatus] = {}
        self.targets = set(targets)
        #: tasks being deleted in the state: gone once released (the simulator restarts the tasks it
        #: evicts itself, but a pod deleted in the cluster is not the simulation's to bring back)
        self.deleting: set[tuple[str, int]] = set()
        if state.plans:
            self.plans = copy.deepcopy(state.plans)
            self.children = copy.deepcopy(state.children)
            for plan in self.plans.values():
                for r in plan.reservations.values():
                    for p in r.change_points():
                        if p > self.t0:
                            self._push(p, EV_WAKE, r.id, None)
        self.res_by_name.update(state.reservation_ids)
        self.res_accepted.update(state.reservation_accepted)
        self._start_jobs(assumed, seed)

    # ----------------------------------------------------------------- set-up
    def _start_jobs(self, assumed: Assumed | None, seed: int) -> None:
        state = self.state
        # draws in a fixed order (jobs by uid, tasks in order) so a seed gives the same runtimes
        need = sum(1 for j in state.jobs for t in j.tasks if t.status == "running"
                   and t.remaining is None) + sum(1 for j in state.jobs if j.runtime is None)
        drawn = list(assumed.draw(rng_for(seed, "forecast-runtimes"), need)) if assumed is not None and need else []
        for js in state.jobs:
            tpl = js.template
            runtime = js.runtime
            if runtime is None and drawn:
                runtime = float(drawn.pop())
            first = tpl.tasks[next(iter(tpl.tasks))].resreq if tpl.tasks else Resource()
            spec = JobSpec(name=tpl.name, queue=tpl.queue, arrival=self.t0,
                           duration=math.inf if runtime is None else runtime, tasks=len(js.tasks),
                           min_member=tpl.min_available, resources=first, priority_class=tpl.priority_class_name)
            sj = SimJob(spec=spec, uid=tpl.uid, queue=tpl.queue, creation=tpl.creation, priority=tpl.priority,
                        resreq=first, min_resources=tpl.min_resources or Resource(), phase=tpl.phase, state="active")
            self.templates[tpl.uid] = tpl
            self.template_tasks[tpl.uid] = [t.template for t in js.tasks]
            for ts in js.tasks:
                st = SimTask(index=ts.index, name=ts.template.name, status=_SIM_STATUS[ts.status], node=ts.node,
                             start=self.t0 - ts.elapsed)
                sj.tasks.append(st)
                self.original[(tpl.uid, ts.index)] = ts.template.status
                self.task_by_key[ts.template.key] = (sj, st)
                if ts.status == "done":
                    sj.done_tasks += 1
                if ts.status not in ("running", "releasing"):
                    continue
                self.node_tasks.setdefault(ts.node, set()).add((tpl.uid, ts.index))
                left = ts.remaining
                if left is None and ts.status == "running" and assumed is not None and drawn:
                    whole = float(drawn.pop())
                    left = max(0.0, whole - ts.elapsed) if ts.template.start_time else whole
                if ts.status == "releasing":
                    self.deleting.add((tpl.uid, ts.index))
                    # a pod being deleted frees its node by the next session unless its end is known
                    self._push(self.t0 + (self.period if left is None else left), EV_RELEASE, st.name,
                               (tpl.uid, ts.index, st.attempt))
                elif left is not None:
                    self._push(self.t0 + left, EV_FINISH, st.name, (tpl.uid, ts.index, st.attempt))
            self.jobs[tpl.uid] = sj
            self.active[tpl.uid] = sj

    # ----------------------------------------------------------------- the simulator's hooks
    def _grid(self, t: float) -> float:
        k = math.ceil((t - self.t0) / self.period - 1e-9)
        return self.t0 + k * self.period

    def _event(self, kind: int, payload: Any) -> None:
        if kind == EV_RELEASE and (payload[0], payload[1]) in self.deleting:
            uid, idx, attempt = payload
            self.deleting.discard((uid, idx))
            job = self.jobs[uid]
            t = job.tasks[idx]
            if t.status is TaskStatus.RELEASING and t.attempt == attempt:
                self.dirty = True
                self._free(job, t)
                self._set_status(job, t, TaskStatus.SUCCEEDED)
                job.done_tasks += 1
                if job.done_tasks == len(job.tasks):
                    job.state, job.finish, job.phase = "done", self.now, PodGroupPhase.COMPLETED
                    self.active.pop(uid, None)
                return
        super()._event(kind, payload)

    def _set_status(self, job: SimJob, t: SimTask, status: TaskStatus) -> None:
        self.original.pop((job.uid, t.index), None)
        super()._set_status(job, t, status)

    def _session(self) -> None:
        super()._session()
        if self.targets and all(self.jobs[u].first_start is not None for u in self.targets):
            # every job asked about has started: nothing later can change its answer
            self.heap.clear()
            self.dirty = False

    def _snapshot(self) -> Snapshot:
        snap = super()._snapshot()
        order = [n for n in self.node_order if n.name in self.nodes]
        snap.nodes = [NodeInfo(name=n.name, index=i, allocatable=n.allocatable, labels=n.labels, taints=n.taints,
                               unschedulable=n.unschedulable) for i, n in enumerate(order)]
        snap.orphan_tasks = [_fresh_task(t, t.status, t.node_name) for t in self.orphans]
        return snap

    def _job_info(self, sj: SimJob) -> JobInfo:
        tpl = self.templates.get(sj.uid)
        if tpl is None:
            return super()._job_info(sj)  # a future arrival: the simulator's own job
        of = (sj.changes, sj.phase, sj.queue, sj.reservation_id)
        ji = sj.info
        if ji is not None and sj.info_of == of and ji.allocated_as_added and ji.phase is sj.phase:
            # kept from the last session, as the simulator keeps its own (see Simulator._job_info)
            ji.conditions.clear()
            ji.nodes_fit_errors.clear()
            ji.failed_roles.clear()
            ji.job_fit_errors = ""
            for ti in ji.tasks.values():
                ti.vec = ti.cols = ti.initial_status = None
            return ji
        ji = JobInfo(*_job_fields(tpl))
        ji.queue, ji.phase = sj.queue, sj.phase
        ji.annotations = dict(tpl.annotations)
        ji.min_task_member = dict(tpl.min_task_member)
        ji.min_resources = None if tpl.min_resources is None else tpl.min_resources.clone()
        ji.tasks, ji.conditions, ji.nodes_fit_errors, ji.failed_roles = {}, {}, {}, set()
        ji.job_fit_errors = ""
        ji.allocated, ji.counts, ji.pending_be, ji.allocated_as_added = Resource(), {}, 0, True
        ji.gated_tasks, ji.version, ji.derived = 0, 0, {}
        original = self.original
        for st, tt in zip(sj.tasks, self.template_tasks[sj.uid]):
            status = original.get((sj.uid, st.index))
            if status is not None:
                ji.add_task(_fresh_task(tt, status, tt.node_name))
            else:
                ji.add_task(_fresh_task(tt, st.status, st.node if st.status is not TaskStatus.SUCCEEDED else ""))
        if sj.phase is PodGroupPhase.RUNNING and all(t.status is TaskStatus.RUNNING for t in sj.tasks):
            sj.info, sj.info_of = ji, of
        else:
            sj.info, sj.info_of = None, ()
        return ji
