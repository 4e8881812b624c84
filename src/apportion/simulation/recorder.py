"""The simulator's Recorder: per-queue time series and counters, sampled while the simulation runs.

Time series are step functions (a value holds until the next sample), stored at their change points:

* allocated, pending demand: sums of task requests of running / pending tasks per leaf queue;
* deserved: what the queue plugin reported for the queue in the last session (its `QueueStatus`,
  taken every session), else the queue's `spec.deserved` (the plan follower's value for reservation
  children);
* share: max over the deserved's dimensions of allocated / deserved (Volcano's share);
* fairness: Jain's index (Σx)² / (n·Σx²) of x = share over the busy leaf queues (allocated or
  pending > 0, with a non-empty deserved);
* utilisation: used / cluster allocatable per resource.

The Recorder reads the simulation through `Observed`, which the simulator implements; the summaries
over a finished run are in simulation/metrics.py.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any, Protocol

from apportion.cluster.model import NodeInfo, QueueInfo, TaskStatus
from apportion.framework.queue_status import QueueStatus, QueueStatuses
from apportion.lean_dataclass import dataclass
from apportion.resources import CPU, GPU, MEMORY, PODS, Resource, to_natural_value
from apportion.simulation.jobs import SimJob, SimTask
from apportion.state import check


class Observed(Protocol):
    """What the Recorder reads of the simulation it records (the simulator implements it)."""

    @property
    def queues(self) -> Mapping[str, QueueInfo]:
        """The scenario's queues (a fixed tree; the plan follower's children are apart)."""
        ...

    @property
    def plans(self) -> Mapping[str, Any]:
        """The reservable queues, by name (their plans)."""
        ...

    @property
    def children(self) -> Mapping[str, list[QueueInfo]]:
        """Per reservable queue, the plan follower's child queues now (a list replaced when it changes)."""
        ...

    @property
    def active(self) -> Mapping[str, SimJob]:
        """The jobs admitted and not over, in the simulator's order."""
        ...

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        """The nodes up now."""
        ...


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

    def __init__(self, sim: Observed, every_node: Iterable[NodeInfo]) -> None:
        """Record `sim`; `every_node` is every node the run may have (the series' dimensions are the
        resources some node has)."""
        self.sim = sim
        total = Resource()
        for n in every_node:
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
        #: the token of the last session report taken (QueueStatuses), if it had one
        self._last_report: object | None = None
        self._des_cache: dict[str, tuple[Resource, tuple[float, ...], list[str]]] = {}
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
        #: the cluster's use: the queues' allocated summed (kept as integers while that is exact)
        self._use = _Use(len(self.dims))
        #: per queue with work whose deserved names a dimension: its share (Jain's index is over these)
        self._busy: dict[str, float] = {}
        #: (busy queues, Jain's index) of the last sample, until a busy queue's share changes
        self._fair: tuple[int, float] | None = None
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

    def session_report(self, t: float, queues: Mapping[str, QueueStatus]) -> None:
        """Take each queue's `deserved` from the queue plugin's status of a session (every session). A
        report that names what changed since the one taken last time (QueueStatuses) is read for those
        queues only: the others hold the status objects taken then."""
        reported = self.reported
        names: Iterable[str] = queues
        if isinstance(queues, QueueStatuses):
            if queues.since is not None and queues.since is self._last_report:
                names = sorted(n for n in queues.changed if n in queues)
            self._last_report = queues.token
        else:
            self._last_report = None
        for name in names:
            status = queues[name]
            des = status.deserved
            if math.isinf(des.cpu) or math.isinf(des.memory) or any(map(math.isinf, des.scalars.values())):
                des = _finite_part(des)
            last = reported.get(name)
            # an unchanged value keeps its object: sample() recognises unchanged queues by identity
            if last is des or (last is not None and last.equal(des)):
                continue
            if not (des.cpu or des.memory or des.scalars):
                continue  # the plugin names no dimension: the queue's spec.deserved stands
            reported[name] = des
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
                    if task.status is TaskStatus.RUNNING:
                        running += 1
                    elif task.status is TaskStatus.PENDING:
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
        t0 = self.times[0]
        # Only a queue whose work or deserved changed (or seen for the first time, or gone) records new
        # values; the rest would record the same again (Series.put drops them): with 1,000 mostly idle
        # queues, they are not visited.
        known = self.queues.keys()
        recount = dirty | changed | (leaves.keys() - known) | (known - leaves.keys())
        shares = self._shares
        puts = recount | ((work.keys() | self._had_work) - shares.keys())
        self._had_work = set(work)
        busy_moved = False
        for q in sorted(puts):
            a, p = work.get(q, (zero, zero))
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
            self._use.change(q, work[q][0] if q in work else None)
            in_busy = q in work and bool(keys)
            if in_busy != (q in self._busy) or (in_busy and self._busy[q] != sh):
                busy_moved = True
                if in_busy:
                    self._busy[q] = sh
                else:
                    del self._busy[q]
        used = self._use.total(work)
        total = self._cluster_total
        if total is None:
            total = self._cluster_total = Resource()
            for n in sim.nodes.values():
                total.add(n.allocatable)
        for i, d in enumerate(dims):
            self.used[d].append(_nat(d, used[i]))
            self.total[d].append(_nat(d, total.get(d)))
        if busy_moved or self._fair is None:
            busy = [self._busy[q] for q in sorted(self._busy)]  # by name: Jain's sums in the same order
            self._fair = (len(busy), jain(busy) if busy else float("nan"))
        self.busy.append(self._fair[0])
        self.fairness.append(self._fair[1])
        if check.enabled():
            self._check_sample(work, used)

    def _check_sample(self, work: dict[str, tuple[list[float], list[float]]], used: list[float]) -> None:
        """The self-check: the cluster's use and fairness as a pass over every queue with work gives them."""
        want = [0.0] * len(self.dims)
        xs = []
        for q in sorted(work):
            a = work[q][0]
            for i in range(len(want)):
                want[i] += a[i]
            sh, named = self._shares[q]
            if named:
                xs.append((q, sh))
        busy = [x for _, x in sorted(xs)]
        fair = jain(busy) if busy else float("nan")
        got = self.fairness[-1]
        if want != used or len(busy) != self.busy[-1] or not (fair == got or (fair != fair and got != got)):
            raise check.StateCheckError(f"{check.ENV}: the recorder's kept sums ({used}, {self.busy[-1]} busy, "
                                        f"fairness {got}) differ from a pass over every queue ({want}, "
                                        f"{len(busy)}, {fair})")

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


class _Use:
    """The cluster's use per dimension: the sum, over the queues with work in name order, of each
    queue's allocated. Kept between samples as Python integers per queue and in total while every
    queue's amount is a non-negative integer below 2**53 (millicores, bytes, milli-units), the total
    too: then every partial float sum of the ordered pass is exact, the order cannot matter, and a
    changed queue costs its own change only (docs/semantics.md K12). Any other amount: the ordered pass
    over every queue."""

    def __init__(self, dims: int) -> None:
        self.by_queue: dict[str, tuple[int, ...]] = {}
        self.sums = [0] * dims
        self.inexact: set[str] = set()

    def change(self, q: str, a: list[float] | None) -> None:
        """Queue q's allocated is now `a` (None: no work)."""
        old = self.by_queue.pop(q, None)
        if old is not None:
            self.sums = [s - x for s, x in zip(self.sums, old)]
        self.inexact.discard(q)
        if a is None:
            return
        if all(v.is_integer() and 0 <= v < _EXACT for v in a):
            exact = tuple(int(v) for v in a)
            self.by_queue[q] = exact
            self.sums = [s + x for s, x in zip(self.sums, exact)]
        else:
            self.inexact.add(q)

    def total(self, work: dict[str, tuple[list[float], list[float]]]) -> list[float]:
        """The use, as the ordered pass over `work` (the queues with work and their amounts) gives it."""
        if not self.inexact and all(s < _EXACT for s in self.sums):
            return [float(s) for s in self.sums]
        used = [0.0] * len(self.sums)
        for q in sorted(work):
            a = work[q][0]
            for i in range(len(used)):
                used[i] += a[i]
        return used


_EXACT = float(2**53)


def jain(xs: list[float]) -> float:
    """Jain's fairness index of non-negative values: 1 when equal, 1/n when one takes all."""
    s = sum(xs)
    sq = sum(x * x for x in xs)
    if sq == 0:
        return 1.0
    return s * s / (len(xs) * sq)


def _finite_part(r: Resource) -> Resource:
    """The dimensions of `r` that are not unlimited: an unlimited deserved bounds no share."""
    out = Resource.zero()
    for name in r.names():
        v = r.get(name)
        if not math.isinf(v):
            out.set(name, v)
    return out
