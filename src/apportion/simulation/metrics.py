"""Metrics: per-queue time series, per-job outcomes, utilisation, fairness, evictions, reservations.

The Recorder samples the simulator's state after every step that changed it; time series are step
functions (a value holds until the next sample), and every average below is time-weighted over them.

* allocated, pending demand: sums of task requests of running / pending tasks per leaf queue;
* deserved: what the queue plugin reported for the queue in the last session (`queues[q].deserved`),
  else the queue's `spec.deserved` (the plan follower's value for reservation children);
* share: max over the deserved's dimensions of allocated / deserved (Volcano's share);
* fairness: Jain's index (Σx)² / (n·Σx²) of x = share over the busy leaf queues (allocated or
  pending > 0, with a non-empty deserved), time-weighted over the periods with at least one;
* utilisation: used / cluster allocatable per resource.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from apportion.resources import CPU, GPU, MEMORY, PODS, Resource, to_natural_value

if TYPE_CHECKING:
    from apportion.simulation.engine import SimulationResult, Simulator
    from apportion.simulation.jobs import SimJob, SimTask


def _nat(name: str, v: float) -> float:
    """Natural units for series: cores, GiB of memory, devices."""
    if name == MEMORY:
        return v / 2**30
    return to_natural_value(name, v)


@dataclass
class Series:
    """One leaf queue's step functions, stored at their change points only: `times` is the queue's
    own, and a value holds until the next entry. A thousand queues over thousands of sessions would
    otherwise cost a float per queue, dimension and session (gigabytes), though most queues are idle.
    """

    times: list[float] = field(default_factory=list)
    allocated: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    deserved: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    pending: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    share: list[float] = field(default_factory=list)
    last: tuple[float, ...] | None = None

    def put(self, t: float, dims: list[str], values: tuple[float, ...]) -> None:
        """Record `values` (allocated, deserved, pending per dim, then share) at t if they changed."""
        if values == self.last:
            return
        if self.times and self.times[-1] == t:
            self.times.pop()
            for m in (self.allocated, self.deserved, self.pending):
                for d in dims:
                    m[d].pop()
            self.share.pop()
        n = len(dims)
        self.times.append(t)
        for i, d in enumerate(dims):
            self.allocated[d].append(values[i])
            self.deserved[d].append(values[n + i])
            self.pending[d].append(values[2 * n + i])
        self.share.append(values[3 * n])
        self.last = values


class Recorder:
    """Collects samples and counters while the simulator runs."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        total = Resource()
        for n in sim.sc.nodes:
            total.add(n.allocatable)
        for ev in sim.sc.node_events:
            for n in ev.new_nodes:
                total.add(n.allocatable)
        self.dims = [d for d in (CPU, MEMORY, GPU) if total.get(d) > 0] + sorted(
            n for n in total.scalars if n not in (GPU, PODS) and total.get(n) > 0)
        self.times: list[float] = []
        self.queues: dict[str, Series] = {}
        self.used: dict[str, list[float]] = defaultdict(list)
        self.total: dict[str, list[float]] = defaultdict(list)
        self.fairness: list[float] = []
        self.busy: list[int] = []
        self.events: list[tuple[float, str, str, str]] = []
        self.evictions: list[tuple[float, str, str, str]] = []
        #: GPU-seconds of work lost to evictions, per eviction reason (reclaim, preempt)
        self.lost_gpu_seconds: dict[str, float] = defaultdict(float)
        #: per job uid: how many times it was evicted, per reason (a job reclaimed again and again is
        #: what reclaim oscillation looks like)
        self.evicted_jobs: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.reported: dict[str, Resource] = {}
        self._des_cache: dict[str, tuple[Resource, tuple[float, ...], list[str]]] = {}
        self._reported_nat: dict[str, dict[str, float]] = {}
        self._static_leaves: list[str] | None = None
        #: bumped whenever `reported` changes: _leaf_queues rebuilds its answer only then (or when the
        #: plan children change)
        self._reported_version = 0
        #: the last answer of _leaf_queues: (reported version, plan children lists, leaves)
        self._leaves: tuple[int, list[list[Any]], dict[str, Resource]] | None = None
        self._des_last: tuple[dict[str, Resource], dict[str, tuple[tuple[float, ...], list[str]]]] | None = None
        #: the cluster's allocatable total, until the next node event
        self._cluster_total: Resource | None = None
        #: per job uid: its per-task request in each sampled dimension (a job's requests never change)
        self._req: dict[str, list[float]] = {}
        self._had_work: set[str] = set()
        #: queues whose jobs changed since the last sample (the simulator says which: work_changed)
        self._dirty: set[str] = set()
        #: per queue with running or waiting tasks: allocated and pending, raw units, per dimension,
        #: summed over its active jobs in the simulator's order; recounted only for dirty queues
        self._work: dict[str, tuple[list[float], list[float]]] = {}
        #: per queue, as last sampled: its share and whether its deserved names any dimension
        self._shares: dict[str, tuple[float, bool]] = {}
        self.final_time = 0.0

    # ----------------------------------------------------------------- hooks
    def work_changed(self, queue: str) -> None:
        """A job of `queue` changed a task's status, arrived, left or moved (to or from it)."""
        self._dirty.add(queue)

    def cluster_changed(self, t: float) -> None:
        """A node event changed the cluster: its total is computed again at the next sample."""
        self._cluster_total = None

    def event(self, t: float, obj: str, reason: str, message: str) -> None:
        """Record an event (time, object, reason, message)."""
        self.events.append((t, obj, reason, message))

    def eviction(self, t: float, job: SimJob, task: SimTask, reason: str, lost_gpu_seconds: float = 0.0) -> None:
        """`task` of `job` was evicted for `reason`; the job lost that much GPU work with it (a gang's
        every running member)."""
        self.evictions.append((t, job.uid, task.name, reason))
        self.lost_gpu_seconds[reason] += lost_gpu_seconds
        self.evicted_jobs[job.uid][reason] += 1

    def session_report(self, t: float, queues: dict[str, dict[str, Any]]) -> None:
        """Take each queue's `deserved` from the queue plugin's report of a session."""
        for name, attrs in queues.items():
            d = attrs.get("deserved")
            if isinstance(d, dict) and d:
                nat = {k: float(v) for k, v in d.items() if isinstance(v, (int, float))}
                # an unchanged value keeps its object: sample() recognises unchanged queues by identity
                if self._reported_nat.get(name) != nat:
                    self._reported_nat[name] = nat
                    self.reported[name] = Resource.from_natural(nat)
                    self._reported_version += 1

    # ----------------------------------------------------------------- sampling
    def _leaf_queues(self) -> dict[str, Resource]:
        """Leaf queue -> deserved (reported, else spec); the same dict while neither changed."""
        sim = self.sim
        # the children lists themselves, compared by identity (the follower replaces a list that
        # changes; holding them keeps an id from being reused)
        kids_now = list(sim.children.values())
        last = self._leaves
        if (last is not None and last[0] == self._reported_version and len(last[1]) == len(kids_now)
                and all(a is b for a, b in zip(last[1], kids_now))):
            return last[2]
        if self._static_leaves is None:  # the scenario's tree is fixed; only plan children change
            parents = {q.parent for q in sim.queues.values() if q.parent}
            self._static_leaves = [n for n in sim.queues if n not in parents and n not in sim.plans]
        out: dict[str, Resource] = {}
        for name in self._static_leaves:
            out[name] = self.reported.get(name, sim.queues[name].deserved)
        for kids in sim.children.values():
            for q in kids:
                out[q.name] = q.deserved
        self._leaves = (self._reported_version, kids_now, out)
        return out

    def _deserved_nat(self, leaves: dict[str, Resource],
                      changed: set[str]) -> dict[str, tuple[tuple[float, ...], list[str]]]:
        """Per leaf: deserved in natural units and the dimensions it names (cached by identity, as
        the deserved Resources are replaced, not mutated, when they change); adds to `changed` the
        leaves whose deserved changed."""
        if self._des_last is not None and self._des_last[0] is leaves:
            return self._des_last[1]  # the same leaves, deserved and all: nothing changed
        out = {}
        cache = self._des_cache
        for q, des in leaves.items():
            hit = cache.get(q)
            if hit is None or hit[0] is not des:
                new = (des, tuple(_nat(d, des.get(d)) for d in self.dims), [d for d in self.dims if des.get(d) > 0])
                if hit is None or hit[1] != new[1]:
                    changed.add(q)
                hit = cache[q] = new
            out[q] = (hit[1], hit[2])
        self._des_last = (leaves, out)
        return out

    def sample(self, t: float) -> None:
        """Record every time series at time t: per queue allocated, deserved, pending and share, and the
        cluster's use."""
        sim = self.sim
        dims = self.dims
        nd = len(dims)
        leaves = self._leaf_queues()
        changed: set[str] = set()
        des = self._deserved_nat(leaves, changed)
        dirty, self._dirty = self._dirty, set()
        work = self._work
        if dirty:
            # allocated and pending requests per dirty queue: the same sums, in the same order, as a
            # pass over every active job would give for it
            fresh: dict[str, tuple[list[float], list[float]]] = {}
            for job in sim.active.values():
                if job.queue not in dirty:
                    continue
                running = waiting = 0
                for task in job.tasks:
                    if task.status == "running":
                        running += 1
                    elif task.status == "pending":
                        waiting += 1
                if not running and not waiting:
                    continue
                req = self._req.get(job.uid)
                if req is None:
                    req = self._req[job.uid] = [job.resreq.get(d) for d in dims]
                a, p = fresh.get(job.queue) or fresh.setdefault(job.queue, ([0.0] * nd, [0.0] * nd))
                for i in range(nd):
                    a[i] += running * req[i]
                    p[i] += waiting * req[i]
            for q in dirty:
                if q in fresh:
                    work[q] = fresh[q]
                else:
                    work.pop(q, None)
        if self.times and self.times[-1] == t:
            self._drop_last()
        self.times.append(t)
        zero = [0.0] * nd
        used = [0.0] * nd
        xs = []
        t0 = self.times[0]
        # A queue without work now or at the last sample, whose deserved did not change, would record
        # the same values again (Series.put drops them): with 1,000 mostly idle queues, skip it. So is
        # a queue whose work and deserved did not change; it still counts towards the cluster's use.
        known = self.queues.keys()
        recount = dirty | changed | (leaves.keys() - known) | (known - leaves.keys())
        todo = work.keys() | self._had_work | recount
        self._had_work = set(work)
        shares = self._shares
        for q in sorted(todo):  # sorted: `used` adds up in the same order whatever the history
            a, p = work.get(q, (zero, zero))
            if q in recount or q not in shares:
                d_nat, keys = des.get(q, (tuple(zero), []))
                sh = 0.0
                for d in keys:
                    i = dims.index(d)
                    sh = max(sh, _nat(d, a[i]) / d_nat[i])
                shares[q] = (sh, bool(keys))
                values = (*(_nat(d, a[i]) for i, d in enumerate(dims)), *d_nat,
                          *(_nat(d, p[i]) for i, d in enumerate(dims)), sh)
                s = self.queues.get(q)
                if s is None:
                    s = self.queues[q] = Series()
                    if t > t0:  # a queue first seen late was empty before
                        s.put(t0, dims, (0.0,) * (3 * nd + 1))
                s.put(t, dims, values)
            if a is not zero:
                for i in range(nd):
                    used[i] += a[i]
                sh, named = shares[q]
                if named:
                    xs.append((q, sh))
        total = self._cluster_total
        if total is None:
            total = self._cluster_total = Resource()
            for n in sim.nodes.values():
                total.add(n.allocatable)
        for i, d in enumerate(dims):
            self.used[d].append(_nat(d, used[i]))
            self.total[d].append(_nat(d, total.get(d)))
        busy = [x for _, x in sorted(xs)]
        self.busy.append(len(busy))
        self.fairness.append(jain(busy) if busy else float("nan"))

    def _drop_last(self) -> None:
        # a second sample at the same instant replaces the first (queues' Series do that in put)
        self.times.pop()
        for d in self.dims:
            self.used[d].pop()
            self.total[d].pop()
        self.busy.pop()
        self.fairness.pop()

    def finish(self, t: float) -> None:
        """The run ended at t."""
        self.final_time = max(t, self.times[-1] if self.times else 0.0)


def jain(xs: list[float]) -> float:
    """Jain's fairness index of non-negative values: 1 when equal, 1/n when one takes all."""
    s = sum(xs)
    sq = sum(x * x for x in xs)
    if sq == 0:
        return 1.0
    return s * s / (len(xs) * sq)


def time_weighted(times: list[float], values: list[float], end: float) -> float:
    """Mean of a step function over [times[0], end], skipping NaN stretches."""
    if not times:
        return float("nan")
    t = np.asarray(times + [max(end, times[-1])])
    v = np.asarray(values, dtype=float)
    dt = np.diff(t)
    ok = ~np.isnan(v) & (dt > 0)
    if not ok.any():
        ok = ~np.isnan(v)
        return float(v[ok].mean()) if ok.any() else float("nan")
    return float((v[ok] * dt[ok]).sum() / dt[ok].sum())


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def _r(x: float, nd: int = 6) -> float | None:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return None
    return round(float(x), nd)


def queue_of_record(job: SimJob) -> str:
    """The queue a job is reported under: its submitted queue (reservation jobs under the plan queue)."""
    return job.spec.queue


def summarize(res: SimulationResult) -> dict[str, Any]:
    """The summary (summary.json): deterministic, no wall-clock values."""
    rec = res.recorder
    end = rec.final_time
    jobs = res.jobs
    by_queue: dict[str, list[SimJob]] = defaultdict(list)
    for j in jobs:
        by_queue[queue_of_record(j)].append(j)
    queues: dict[str, Any] = {}
    for q in sorted(by_queue):
        js = by_queue[q]
        waits = [j.first_start - j.spec.arrival for j in js if j.first_start is not None]
        jcts = [j.finish - j.spec.arrival for j in js if j.state == "done" and j.finish is not None]
        entry: dict[str, Any] = {
            "jobs": len(js),
            "completed": sum(1 for j in js if j.state == "done"),
            "rejected": sum(1 for j in js if j.state == "rejected"),
            "killed": sum(1 for j in js if j.state == "killed"),
            "unfinished": sum(1 for j in js if j.state in ("active", "waiting")),
            "wait": {"mean": _r(float(np.mean(waits)) if waits else float("nan")), "p50": _r(_pct(waits, 50)),
                     "p95": _r(_pct(waits, 95)), "max": _r(max(waits) if waits else float("nan"))},
            "jct": {"mean": _r(float(np.mean(jcts)) if jcts else float("nan")), "p50": _r(_pct(jcts, 50)),
                    "p95": _r(_pct(jcts, 95))},
            "evictions": sum(j.evictions for j in js),
            "lostGpuHours": _r(sum(j.lost_gpu_seconds for j in js) / 3600.0),
        }
        queues[q] = entry
    series: dict[str, Any] = {}
    for q in sorted(rec.queues):
        s = rec.queues[q]
        series[q] = {
            "allocated": {d: _r(time_weighted(s.times, s.allocated[d], end)) for d in rec.dims},
            "deserved": {d: _r(time_weighted(s.times, s.deserved[d], end)) for d in rec.dims},
            "pending": {d: _r(time_weighted(s.times, s.pending[d], end)) for d in rec.dims},
            "share": _r(time_weighted(s.times, s.share, end)),
        }
        if q in queues:
            queues[q]["timeAverage"] = series[q]
    # a reservable queue's jobs ran in its children (the plan follower's queues): its time averages
    # are their sums (a sum of time averages is the time average of the sum)
    for q in res.plans:
        kids = [k for k in series if k == f"{q}-default" or k in {e["id"] for e in res.reservation_log
                                                                    if e["queue"] == q}]
        if q in queues and kids:
            queues[q]["timeAverage"] = {
                m: {d: _r(sum(series[k][m][d] or 0.0 for k in kids)) for d in rec.dims}
                for m in ("allocated", "deserved", "pending")
            }
    util = {}
    for d in rec.dims:
        ratio = [u / t if t else 0.0 for u, t in zip(rec.used[d], rec.total[d])]
        util[d] = _r(time_weighted(rec.times, ratio, end))
    reasons: dict[str, int] = defaultdict(int)
    for _, _, _, why in rec.evictions:
        reasons[why] += 1
    node_failures = sum(1 for e in rec.events if e[2] == "NodeFailed")
    waits_all = [j.first_start - j.spec.arrival for j in jobs if j.first_start is not None]
    summary: dict[str, Any] = {
        "scenario": res.scenario.name,
        "label": res.label,
        "seed": res.seed,
        "endTime": _r(end, 3),
        "sessions": res.sessions,
        "events": res.events,
        "jobs": {
            "total": len(jobs),
            "completed": sum(1 for j in jobs if j.state == "done"),
            "rejected": sum(1 for j in jobs if j.state == "rejected"),
            "killed": sum(1 for j in jobs if j.state == "killed"),
            "unfinished": sum(1 for j in jobs if j.state in ("active", "waiting")),
            "meanWait": _r(float(np.mean(waits_all)) if waits_all else float("nan")),
        },
        "utilisation": util,
        "fairness": {
            "jainMean": _r(time_weighted(rec.times, rec.fairness, end)),
            "jainMin": _r(float(np.nanmin(rec.fairness)) if any(not math.isnan(f) for f in rec.fairness) else float("nan")),
        },
        "evictions": {
            "reclaim": reasons.get("reclaim", 0),
            "preempt": reasons.get("preempt", 0),
            "nodeFailure": node_failures,
            "lostGpuHours": _r(sum(j.lost_gpu_seconds for j in jobs) / 3600.0),
            "lostCpuHours": _r(sum(j.lost_cpu_seconds for j in jobs) / 3600.0),
            # the waste of reclaim and preempt alone (node failures and expiry kills lose work too)
            "lostGpuHoursByReason": {r: _r(rec.lost_gpu_seconds.get(r, 0.0) / 3600.0) for r in ("reclaim", "preempt")},
            "jobsReclaimed": sum(1 for c in rec.evicted_jobs.values() if c.get("reclaim")),
            "jobsReclaimedTwiceOrMore": sum(1 for c in rec.evicted_jobs.values() if c.get("reclaim", 0) >= 2),
        },
        "queues": queues,
        "reservations": reservation_outcomes(res),
    }
    if not res.label:
        del summary["label"]
    return summary


def reservation_outcomes(res: SimulationResult) -> list[dict[str, Any]]:
    """Per reservation: accepted or why not, its window, the allocation its plan's agent placed
    (`[start, end, resources]` pieces), and whether its jobs ran inside the window."""
    out = []
    for e in res.reservation_log:
        entry: dict[str, Any] = {k: e[k] for k in ("name", "id", "queue", "user", "submitted", "accepted", "agent")
                                 if k in e}
        if e.get("message"):
            entry["message"] = e["message"]
        if e["accepted"]:
            entry["start"], entry["end"] = e["start"], e["end"]
            entry["allocation"] = e["pieces"]
            if "deletedByReplanner" in e:
                entry["deletedByReplanner"] = e["deletedByReplanner"]
            jobs = []
            for j in res.jobs:
                if j.spec.reservation != e["name"]:
                    continue
                inside = (j.state == "done" and j.first_start is not None and j.finish is not None
                          and j.first_start >= e["start"] - 1e-9 and j.finish <= e["end"] + 1e-9)
                jobs.append({"job": j.uid, "state": j.state, "start": _r(j.first_start) if j.first_start is not None else None,
                             "finish": _r(j.finish) if j.finish is not None else None, "insideWindow": inside})
            entry["jobs"] = jobs
            entry["honoured"] = bool(jobs) and all(x["insideWindow"] for x in jobs)
        else:
            rejected_jobs = [j.uid for j in res.jobs if j.spec.reservation == e["name"]]
            entry["jobs"] = [{"job": u, "state": "rejected"} for u in rejected_jobs]
        out.append(entry)
    return out


def job_rows(res: SimulationResult) -> list[dict[str, Any]]:
    """One row a job for jobs.csv."""
    rows = []
    for j in res.jobs:
        rows.append({
            "job": j.uid, "queue": j.spec.queue, "ranIn": j.queue, "tasks": j.spec.tasks,
            "minMember": j.spec.min_member, "gpusPerTask": j.gpus_per_task, "arrival": j.spec.arrival,
            "start": "" if j.first_start is None else j.first_start,
            "finish": "" if j.finish is None else j.finish,
            "wait": "" if j.first_start is None else round(j.first_start - j.spec.arrival, 6),
            "jct": "" if j.finish is None or j.state != "done" else round(j.finish - j.spec.arrival, 6),
            "run": "" if j.finish is None or j.last_start is None or j.state != "done" else round(j.finish - j.last_start, 6),
            "evictions": j.evictions, "lostGpuHours": round(j.lost_gpu_seconds / 3600.0, 6), "state": j.state,
            "reservation": j.spec.reservation, "message": j.message if j.state != "done" else "",
        })
    return rows
