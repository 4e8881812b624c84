"""preempt: within a queue, starving higher-priority jobs (and tasks within a job) evict lower ones (§5.5)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from apportion.actions.common import evict_until_fits, fits_future_idle, pop_best, validate_victims
from apportion.cluster.model import PREEMPTABLE_STATUSES, JobInfo, QueueInfo, TaskInfo, TaskStatus
from apportion.framework.session import Session
from apportion.framework.statement import Statement

Filter = Callable[[TaskInfo], bool]


def execute(ssn: Session) -> None:
    """Preempt within each queue: between jobs, then within each starving job (§5.5)."""
    args = ssn.conf.action_arguments("preempt")
    topology_aware = bool(args.get("enableTopologyAwarePreemption", False))
    queues: list[QueueInfo] = []
    seen: set[str] = set()
    preemptors: dict[str, list[JobInfo]] = {}
    under_request: dict[str, list[JobInfo]] = {}
    task_lists: dict[str, list[TaskInfo]] = {}
    for uid in sorted(ssn.jobs):
        job = ssn.jobs[uid]
        if job.is_pending() or not ssn.job_valid(job)[0]:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None or not ssn.job_starving(job):
            continue
        if queue.name not in seen:
            seen.add(queue.name)
            queues.append(queue)
            preemptors[queue.name] = []
            under_request[queue.name] = []
        preemptors[queue.name].append(job)
        under_request[queue.name].append(job)
        tasks = [t for t in job.tasks.values() if t.status is TaskStatus.PENDING and not t.gated]
        tasks.sort(key=functools.cmp_to_key(ssn.task_compare))
        task_lists[job.uid] = tasks

    # each queue with a starving job popped once, through the picker (see reclaim)
    picker = ssn.queue_picker(queues)
    while len(picker):
        queue = picker.pop()
        # between jobs
        jobs = preemptors[queue.name]
        while jobs:
            job = pop_best(jobs, ssn.job_compare)
            stmt = Statement(ssn)
            tasks = task_lists[job.uid]
            while ssn.job_starving(job) and tasks:
                task = tasks.pop(0)

                def between(t: TaskInfo, job: JobInfo = job, task: TaskInfo = task) -> bool:
                    vjob = ssn.jobs.get(t.job)
                    return (
                        vjob is not None
                        and vjob.queue == job.queue
                        and t.job != job.uid
                        and (not task.best_effort or t.best_effort)
                    )

                preempt_for_task(ssn, stmt, task, between, topology_aware)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
        # within a job
        for job in under_request[queue.name]:
            pending = [t for t in job.tasks.values() if t.status is TaskStatus.PENDING and not t.gated]
            pending.sort(key=functools.cmp_to_key(ssn.task_compare))
            for task in pending:
                stmt = Statement(ssn)

                def within(t: TaskInfo, job: JobInfo = job, task: TaskInfo = task) -> bool:
                    return t.job == job.uid and (not task.best_effort or t.best_effort)

                if preempt_for_task(ssn, stmt, task, within, topology_aware):
                    stmt.commit()
                else:
                    stmt.discard()
                    break


def _eligible(ssn: Session, task: TaskInfo) -> bool:
    return not task.preempt_never


def preempt_for_task(ssn: Session, stmt: Statement, task: TaskInfo, keep: Filter, topology_aware: bool) -> bool:
    """Volcano's `preempt`: evict victims that pass `keep` on some node until the task fits; True if placed."""
    if not _eligible(ssn, task):
        return False
    if ssn.pre_predicate(task):
        return False
    rows = ssn.predicate_for_preempt(task)
    if len(rows) == 0:
        return False
    if topology_aware:
        return _topology_aware_preempt(ssn, stmt, task, rows, keep)
    return _normal_preempt(ssn, stmt, task, rows, keep)


def _candidates(ssn: Session, row: int, keep: Filter) -> list[TaskInfo]:
    return [
        t for t in ssn.nodes[row].tasks.values() if t.status in PREEMPTABLE_STATUSES and t.preemptable and keep(t)
    ]


def _preemptor_fits(ssn: Session, task: TaskInfo, row: int) -> bool:
    queue = ssn.queues[ssn.jobs[task.job].queue]
    if not ssn.allocatable(queue, task):
        return False
    if not fits_future_idle(ssn, task, row):
        return False
    pf = ssn.plugin_predicates(task, np.array([row], dtype=np.int64))
    return bool(pf.ok[0])


def _normal_preempt(ssn: Session, stmt: Statement, task: TaskInfo, rows: np.ndarray, keep: Filter) -> bool:
    for row in ssn.sorted_by_score(task, rows):
        candidates = ssn.sort_victims(_candidates(ssn, row, keep), task)
        victims = ssn.preemptable(task, candidates)
        if not validate_victims(ssn, task, row, victims):
            continue
        units = ([v] for v in ssn.sort_victims(victims, task))
        if evict_until_fits(ssn, stmt, task, row, units, functools.partial(_preemptor_fits, ssn, task, row),
                            "preempt"):
            return True
    return False


def _topology_aware_preempt(ssn: Session, stmt: Statement, task: TaskInfo, rows: np.ndarray, keep: Filter) -> bool:
    """A kube-scheduler-style dry run on simulated state (§5.5), deterministic: offset 0, name order."""
    args = ssn.conf.action_arguments("preempt")
    pct = int(args.get("minCandidateNodesPercentage", 10))
    lo = int(args.get("minCandidateNodesAbsolute", 1))
    hi = int(args.get("maxCandidateNodesAbsolute", 100))
    want = max(lo, min(hi, len(rows) * pct // 100))
    queue = ssn.queues[ssn.jobs[task.job].queue]
    base_state = ssn.cycle_states.get(task.uid, {})
    candidates: list[tuple[int, list[TaskInfo]]] = []
    for row in sorted(int(r) for r in rows):
        if len(candidates) >= want:
            break
        state = _clone_state(base_state)
        potential = ssn.sort_victims(ssn.preemptable(task, _candidates(ssn, row, keep)), task)
        if not validate_victims(ssn, task, row, potential):
            continue
        avail = ssn.table.future_idle_row(row).copy()
        cols = ssn.table.compare_columns(task.resreq)
        vec = ssn.task_vec(task)

        def fits(avail: np.ndarray = avail, state: dict = state, row: int = row, vec: np.ndarray = vec,
                 cols: np.ndarray = cols) -> bool:
            r, a = vec[cols], avail[cols]
            return (
                ssn.simulate_allocatable(queue, task, state)
                and bool(np.all((r < a) | (np.abs(r - a) < 0.1)))
                and ssn.simulate_predicate(task, row, state) is None
            )

        removed: list[TaskInfo] = []
        for v in potential:
            if fits():
                break
            avail += ssn.task_vec(v)
            ssn.simulate_remove_task(state, v, row)
            removed.append(v)
        if not fits():
            continue
        # reprieve: highest priority first, keep each one that can go back while the preemptor still fits
        victims = []
        for v in sorted(removed, key=lambda t: (-t.raw_priority, t.uid)):
            avail -= ssn.task_vec(v)
            ssn.simulate_add_task(state, v, row)
            if fits():
                continue
            avail += ssn.task_vec(v)
            ssn.simulate_remove_task(state, v, row)
            victims.append(v)
        if victims:
            candidates.append((row, victims))
    if not candidates:
        return False

    def rank(c: tuple[int, list[TaskInfo]]) -> tuple:
        row, vs = c
        top = max(v.raw_priority for v in vs)
        latest = max((v.start_time for v in vs if v.raw_priority == top), default="")
        return (top, sum(v.raw_priority for v in vs), len(vs), _neg(latest), ssn.nodes[row].name)

    row, victims = min(candidates, key=rank)
    node_stmt = Statement(ssn)
    for v in ssn.sort_victims(victims, task):
        node_stmt.evict(v, "preempt")
    if not fits_future_idle(ssn, task, row):
        node_stmt.discard()
        return False
    node_stmt.pipeline(task, row, after_eviction=True)
    stmt.merge(node_stmt)
    return True


def _clone_state(state: dict) -> dict:
    return {k: (v.clone() if hasattr(v, "clone") else v) for k, v in state.items()}


def _neg(s: str) -> tuple[int, ...]:
    """Sort key that orders later timestamps first."""
    return tuple(-ord(c) for c in s)
