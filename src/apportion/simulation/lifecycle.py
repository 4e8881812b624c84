"""What happens to the simulated tasks between sessions: arrival's rejection, completion, eviction, node
failure, with the work an eviction loses counted.

The event half of the simulator (simulation/engine.py inherits this): every task status change goes
through `_set_status`, so kept JobInfos and the metrics see it; a stopped task either releases for the
scenario's eviction grace or frees its node at once. Follows the semantics guide's simulator section
(evictions restart a task from scratch; a gang restarts whole).
"""

from __future__ import annotations

import heapq
from typing import Any

from apportion.cluster.model import (
    GROUP_COMPLETED,
    PENDING,
    RELEASING,
    RUNNING,
    SUCCEEDED,
    NodeInfo,
    TaskStatus,
)
from apportion.resources import CPU, GPU
from apportion.simulation.feed import ClusterFeed
from apportion.simulation.jobs import EV_FINISH, EV_RELEASE, SimJob, SimTask
from apportion.simulation.recorder import Recorder
from apportion.simulation.start import SessionObjects, StartJob


class TaskLifecycle(ClusterFeed):
    """The event queue and the task state changes events and decisions make (mixed into Simulator)."""

    heap: list[tuple[float, int, str, int, Any]]
    _seq: int
    warnings: list[str]
    _warned: set[str]
    failed: dict[str, NodeInfo]
    node_tasks: dict[str, set[tuple[str, int]]]
    #: pod key (`namespace/name`) -> its job and task
    task_by_key: dict[str, tuple[SimJob, SimTask]]
    recorder: Recorder
    objects: SessionObjects | None
    t0: float
    period: float
    #: releasing tasks deleted in the start state: over once released, not restarted
    deleting: set[tuple[str, int]]
    #: start-state jobs kept out of the sessions until their reservation is active: uid -> its id
    held: dict[str, str]
    #: a job whose tasks are all over stays in the sessions, a Completed PodGroup (SimStart.keep_done)
    keep_done: bool
    #: an evicted member of a gang stops the whole gang (SimStart.whole_gangs)
    whole_gangs: bool

    # ================================================================= events and tasks
    def _start_jobs(self, jobs: list[StartJob]) -> None:
        """A start state's jobs active from `t0`: their tasks on their nodes, and the ends of the running
        and releasing ones queued. The events are queued in one heapify, not a push each: the queue pops
        them in the same order (every entry's sequence number differs), `_start_jobs_reference` pushes."""
        heap, node_tasks, task_by_key, deleting = self.heap, self.node_tasks, self.task_by_key, self.deleting
        release_at = self.t0 + self.period
        seq = self._seq
        for sj_start in jobs:
            sj = sj_start.job
            uid = sj.uid
            for t, ts in zip(sj.tasks, sj_start.tasks):
                task_by_key[ts.key] = (sj, t)
                status = t.status
                if status is not RUNNING and status is not RELEASING:
                    continue
                held = node_tasks.get(t.node)
                if held is None:
                    held = node_tasks[t.node] = set()
                held.add((uid, t.index))
                if status is RELEASING:
                    if ts.deleted:
                        deleting.add((uid, t.index))
                    seq += 1
                    heap.append((release_at if ts.end is None else ts.end, EV_RELEASE, t.name, seq,
                                 (uid, t.index, t.attempt)))
                elif ts.end is not None:
                    seq += 1
                    heap.append((ts.end, EV_FINISH, t.name, seq, (uid, t.index, t.attempt)))
            self._start_job(sj)
        self._seq = seq
        heapq.heapify(heap)

    def _start_jobs_reference(self, jobs: list[StartJob]) -> None:
        """`_start_jobs` a push at a time (the reference it is tested against)."""
        for sj_start in jobs:
            sj = sj_start.job
            for t, ts in zip(sj.tasks, sj_start.tasks):
                self.task_by_key[ts.key] = (sj, t)
                if t.status is not RUNNING and t.status is not RELEASING:
                    continue
                self.node_tasks.setdefault(t.node, set()).add((sj.uid, t.index))
                if t.status is RELEASING:
                    if ts.deleted:
                        self.deleting.add((sj.uid, t.index))
                    self._push(self.t0 + self.period if ts.end is None else ts.end, EV_RELEASE, t.name,
                               (sj.uid, t.index, t.attempt))
                elif ts.end is not None:
                    self._push(ts.end, EV_FINISH, t.name, (sj.uid, t.index, t.attempt))
            self._start_job(sj)

    def _start_job(self, sj: SimJob) -> None:
        self.jobs[sj.uid] = sj
        if sj.uid in self.held:
            # kept out until the plan follower finds its reservation active (follower.py `_let_in`)
            sj.state = "held"
        else:
            self.active[sj.uid] = sj
        if self.objects is None:
            if sj.state == "held":
                return
            # sessions see it through the cache, as an arrival (objects build their own jobs)
            self._dirty.add(sj.uid)
            self._early_dirty.add(sj.uid)
            self.recorder.work_changed(sj.queue)
        else:
            self._objects_jobs.add(sj.uid)

    def _push(self, t: float, kind: int, name: str, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (t, kind, name, self._seq, payload))

    def warn(self, msg: str) -> None:
        """Add a warning to the run's list, once per text."""
        if msg not in self._warned:
            self._warned.add(msg)
            self.warnings.append(msg)

    def _reject(self, job: SimJob, message: str) -> None:
        job.state = "rejected"
        job.message = message
        self.recorder.event(self.now, job.uid, "Rejected", message)

    def _finish(self, job: SimJob, idx: int, attempt: int) -> None:
        t = job.tasks[idx]
        if t.status is not RUNNING or t.attempt != attempt:
            return  # an attempt that was evicted or killed meanwhile
        self._free(job, t)
        self._set_status(job, t, SUCCEEDED)
        self._task_over(job)

    def _release_deleted(self, job: SimJob, t: SimTask) -> None:
        """A task deleted in the start state is released: it is over, not restarted."""
        self._free(job, t)
        self._set_status(job, t, SUCCEEDED)
        self._task_over(job)

    def _task_over(self, job: SimJob) -> None:
        """One more task of the job is over; with the last the job is done (and leaves the sessions
        unless finished jobs stay: `keep_done`)."""
        job.done_tasks += 1
        if job.done_tasks == len(job.tasks):
            job.state = "done"
            job.finish = self.now
            job.phase = GROUP_COMPLETED
            if not self.keep_done:
                self.active.pop(job.uid, None)

    def _free(self, job: SimJob, t: SimTask) -> None:
        if t.node:
            self.node_tasks.get(t.node, set()).discard((job.uid, t.index))
        t.node = ""

    def _set_status(self, job: SimJob, t: SimTask, status: TaskStatus) -> None:
        """Every task status change goes through here: kept JobInfos are checked against `changes`, and
        the metrics recount only the queues named here."""
        if self.objects is not None:
            self.objects.status_changed(job, t)
        t.status = status
        job.changes += 1
        self._dirty.add(job.uid)
        self._early_dirty.add(job.uid)
        self.recorder.work_changed(job.queue)

    def _stop(self, job: SimJob, t: SimTask, *, restart: bool) -> None:
        """A running task stops now (evicted, killed, node lost): count the lost work."""
        if t.status is not RUNNING:
            return
        ran = max(0.0, self.now - t.start)
        job.lost_gpu_seconds += ran * job.resreq.get(GPU) / 1000.0
        job.lost_cpu_seconds += ran * job.resreq.get(CPU) / 1000.0
        t.attempt += 1
        grace = self.sc.run.eviction_grace
        if grace > 0 and t.node in self.nodes:
            self._set_status(job, t, RELEASING)
            self._push(self.now + grace, EV_RELEASE, t.name, (job.uid, t.index, t.attempt))
        else:
            self._free(job, t)
            self._set_status(job, t, PENDING if restart else SUCCEEDED)

    def _evict(self, job: SimJob, t: SimTask, reason: str) -> None:
        job.evictions += 1
        lost_before = job.lost_gpu_seconds
        victims = [x for x in job.tasks if x.status is RUNNING] if job.spec.gang and self.whole_gangs else [t]
        for v in victims:
            self._stop(job, v, restart=True)
        self.recorder.eviction(self.now, job, t, reason, job.lost_gpu_seconds - lost_before)

    def _node_event(self, ev: Any) -> None:
        self._node_changes += 1
        if ev.type == "fail":
            for name in ev.nodes:
                node = self.nodes.pop(name, None)
                if node is None:
                    continue
                self.failed[name] = node
                for uid, idx in sorted(self.node_tasks.get(name, set())):
                    job = self.jobs[uid]
                    t = job.tasks[idx]
                    if t.status is RELEASING:
                        self._free(job, t)
                        self._set_status(job, t, PENDING)
                        continue
                    self.recorder.event(self.now, job.uid, "NodeFailed", f"{t.name} lost with node {name}")
                    job.evictions += 1
                    for v in ([x for x in job.tasks if x.status is RUNNING] if job.spec.gang else [t]):
                        self._stop(job, v, restart=True)
                self.node_tasks[name] = set()
        elif ev.type == "recover":
            for name in ev.nodes:
                node = self.failed.pop(name, None)
                if node is not None:
                    self.nodes[name] = node
        else:
            for n in ev.new_nodes:
                self.nodes[n.name] = n
                self.node_tasks[n.name] = set()
            for where, obj in ev.new_node_objects:
                self._node_objs[obj["metadata"]["name"]] = (where, obj)
        self.recorder.cluster_changed(self.now)
