"""The plan follower (contract §11): publishes the plan into a capacity queue tree, one step at a time.

`PlanFollower.step(t)` is one synchronisation of YARN's CapacitySchedulerPlanFollower at clock t:
each active reservation gets a child queue of the plan queue (named by its id) whose capacity is
its share of the plan at t, the default child `<queue>-default` gets what is left, expired
reservation queues are drained (applications moved to the default queue, or killed), and
completed reservations are archived. The returned `FollowerState` carries every child queue and,
per active reservation, its resources and share, so a simulator can mirror them into its own tree.

Capacities are fractions of the plan queue, computed in single precision as YARN does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field

import numpy as np

from apportion.lean_dataclass import dataclass
from apportion.reservation.definition import ReservationId
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.replanner import SimpleCapacityReplanner
from apportion.reservation.resmath import LONG_MAX, Res, f32, radd, round_up, rsub

#: CSQueueUtils.EPSILON: tolerance of "the children's capacities sum to at most 1"
EPSILON = f32(0.0001)


@dataclass
class ChildQueue:
    """A child queue of the plan queue: a reservation queue, or the default queue."""

    name: str
    capacity: float = 0.0
    max_capacity: float = 0.0
    apps: list[str] = field(default_factory=list)
    expired: bool = False


@dataclass(frozen=True)
class ReservationShare:
    """One active reservation at the synchronisation time."""

    id: ReservationId
    user: str | None
    resources: Res  # its resources at the (rounded) time
    capacity: float  # its queue's capacity, a fraction of the plan queue
    max_capacity: float
    gang: bool


@dataclass(frozen=True)
class QueueView:
    """A child queue as one synchronisation left it."""

    name: str
    capacity: float
    max_capacity: float
    apps: tuple[str, ...]


@dataclass(frozen=True)
class FollowerState:
    """What one synchronisation published."""

    now: int  # the clock rounded up to the plan step
    plan_capacity: Res
    default_queue: str
    default_share: float
    #: in the full step's order; a tuple, or a view that reads as one (published.py)
    active: Sequence[ReservationShare]
    #: by name; a dict, or a view that reads as one
    queues: Mapping[str, QueueView]
    replanned: tuple[ReservationId, ...]
    archived: tuple[ReservationId, ...]
    moved_apps: tuple[str, ...]
    #: the follower's number for this step (0: a follower that does not number its steps)
    serial: int = field(default=0, compare=False)
    #: (the serial of an earlier step, each reservation whose share differs from that step's or
    #: that was active there and is not now -> its share now, None when not active): what a reader
    #: that kept that step's `active` must change to hold this one's; None when not known (a full
    #: step: read `active` whole)
    changes: tuple[int, dict[str, ReservationShare | None]] | None = field(default=None, compare=False)


class _ChildSums:
    """The children's capacities in the queue dict's order (YARN's child order), as float32, for their
    sum as YARN's `sumOfChildCapacities` makes it: a Java float accumulated child by child. numpy's
    cumulative sum of a float32 array is that same sequential single-precision sum (an accumulation,
    never reordered or paired), so a step with thousands of reservation queues, which checks the sum
    once per entitlement it changes, does not walk every child in Python each time. Built for one
    step; if a capacity is not a single-precision number (none of the follower's are) it sums as
    the reference loop does."""

    def __init__(self, queues: dict[str, ChildQueue]) -> None:
        self.queues = queues
        n = len(queues)
        self.index = {name: i for i, name in enumerate(queues)}
        self.caps = np.zeros(max(16, 2 * n), dtype=np.float32)
        self.caps[:n] = np.fromiter((q.capacity for q in queues.values()), dtype=np.float32, count=n)
        self.n = n
        self.exact = all(float(c) == q.capacity for c, q in zip(self.caps[:n], queues.values()))
        #: the sum while no capacity changed since it was taken (most entitlements a step sets change
        #: only a maximum, or append a child of capacity 0)
        self._total: float | None = None

    def add(self, name: str, capacity: float) -> None:
        """A child appended to the dict (after the others, as a dict appends)."""
        if self.n == len(self.caps):
            self.caps = np.concatenate([self.caps, np.zeros(len(self.caps), dtype=np.float32)])
        self.index[name] = self.n
        self.n += 1
        if capacity == 0.0:
            # every slot past the last child holds 0.0 (made so, and only a child's slot is written),
            # and adding 0.0 to the sequential sum leaves it as it is: the new reservation queue's case
            return
        self.caps[self.n - 1] = 0.0
        total = self._total
        self.set(name, capacity)
        if total is not None and self.exact:
            # the last child: the sequential sum goes on from the one before
            self._total = f32(total + capacity)

    def set(self, name: str, capacity: float) -> None:
        """A child's new capacity."""
        i = self.index[name]
        if self.caps[i] == capacity:
            return
        self.caps[i] = capacity
        self._total = None
        if float(np.float32(capacity)) != capacity:
            self.exact = False

    def total(self) -> float:
        """The children's capacities summed in order in single precision."""
        if not self.exact:
            total = 0.0
            for q in self.queues.values():
                total = f32(total + q.capacity)
            return total
        if self._total is None:
            self._total = float(np.cumsum(self.caps[:self.n])[-1]) if self.n else 0.0
        return self._total


class PlanFollower:
    """YARN's CapacitySchedulerPlanFollower for one plan."""

    def __init__(
        self,
        plan: InMemoryPlan,
        replanner: SimpleCapacityReplanner | None = None,
        cluster: tuple[Res, float] | None = None,
    ) -> None:
        self.plan = plan
        self.replanner = replanner
        self.cluster = cluster
        self.default_queue = f"{plan.queue}-default"
        # the default child exists from the start with capacity 1.0 and maximum 1.0
        self.queues: dict[str, ChildQueue] = {self.default_queue: ChildQueue(self.default_queue, 1.0, 1.0)}
        #: per active reservation (by its allocation object, which never changes): the piece of time
        #: [lo, hi) over which its resources stay what they were at the last step, its queue's name
        #: and those resources (see `_rows`)
        self._pieces: dict[int, tuple[ReservationAllocation, int, int, str, Res]] = {}

    # -- applications --------------------------------------------------------------------------
    def submit_app(self, app_id: str, queue: str) -> bool:
        """Place an application directly into an existing child queue."""
        q = self.queues.get(queue)
        if q is None:
            return False
        q.apps.append(app_id)
        return True

    def app_finished(self, app_id: str) -> bool:
        """Remove a finished application from its child queue; False if no queue holds it."""
        return self._remove_app(app_id) is not None

    def _remove_app(self, app_id: str) -> str | None:
        """Take the application out of the child queue holding it; that queue's name, or None."""
        for q in self.queues.values():
            if app_id in q.apps:
                q.apps.remove(app_id)
                return q.name
        return None

    # -- synchronisation ----------------------------------------------------------------------
    def _sum_children(self) -> float:
        total = 0.0
        for q in self.queues.values():
            total = f32(total + q.capacity)
        return total

    def _set_entitlement(self, q: ChildQueue, capacity: float, max_capacity: float,
                         sums: _ChildSums | None = None) -> bool:
        """CapacityScheduler.setEntitlement: refused when the children would sum above 1. `sums`: the
        step's float32 mirror of the children's capacities (kept in step with the change)."""
        if capacity < 0 or capacity > 1.0:
            return False
        total = sums.total() if sums is not None else self._sum_children()
        new_sum = f32(f32(total - q.capacity) + capacity)
        if not (new_sum >= 0 and new_sum < 1.0 + EPSILON):
            return False
        q.capacity = capacity
        q.max_capacity = max_capacity
        if sums is not None:
            sums.set(q.name, capacity)
        return True

    @staticmethod
    def _piece(r: ReservationAllocation, t: int) -> tuple[int, int, Res]:
        """[lo, hi) around t over which `r.resources_at` is constant, and its value there."""
        if r.period > 0:
            return t, t + 1, r.resources_at(t)  # a periodic one is read again at every step
        if t < r.start:
            return -LONG_MAX, r.start, r.rle.zero
        if t >= r.end:
            return r.end, LONG_MAX, r.rle.zero
        rle = r.rle
        lo, hi = rle.last_change_at_or_before(t), rle.next_change_after(t)
        return (r.start if lo is None or lo < r.start else lo), (r.end if hi is None or hi > r.end else hi), rle.at(t)

    def _rows(self, active: list[ReservationAllocation], now: int) -> list[tuple[ReservationAllocation, str, Res]]:
        """Each active reservation with its queue's name and its resources at `now`. Most reservations
        hold the same resources for minutes (nothing from their arrival to their first allocation):
        what an earlier step read stays good while `now` is in the same piece of the allocation."""
        old = self._pieces
        pieces: dict[int, tuple[ReservationAllocation, int, int, str, Res]] = {}
        rows = []
        for r in active:
            p = old.get(id(r))
            if p is None or p[0] is not r or not p[1] <= now < p[2]:
                lo, hi, v = self._piece(r, now)
                p = (r, lo, hi, p[3] if p is not None and p[0] is r else str(r.id), v)
            pieces[id(r)] = p
            rows.append((r, p[3], p[4]))
        self._pieces = pieces
        return rows

    def _start_step(self, clock: int) -> int:
        """The step's instant (the clock rounded up to the plan's step), with the plan's capacity first
        set from the cluster when the follower follows one."""
        if self.cluster is not None:
            res, frac = self.cluster
            f = f32(frac)
            self.plan.set_capacity(tuple(int(x * f) for x in res))
        return round_up(clock, self.plan.step)

    def step(self, clock: int) -> FollowerState:
        """One synchronisation at `clock` (contract §11)."""
        plan = self.plan
        now = self._start_step(clock)
        cap = plan.capacity
        calc = plan.calc
        zero = plan.zero
        # each active reservation with its queue's name and its resources now, read once (wanted
        # several times below; at thousands of reservations, most holding nothing at this instant, the
        # step is these loops: no dict keyed by ReservationId, whose hash is Python code)
        rows = self._rows(plan.reservations_at(now), now)
        reserved = zero
        for _, _, v in rows:
            if v != zero:
                reserved = radd(reserved, v)
        replanned: list[ReservationId] = []
        if self.replanner is not None and calc.greater(reserved, cap, cap):
            replanned = self.replanner.plan(plan, clock)
        active_names = {name for _, name, _ in rows}

        # expired reservation queues: capacity 0, applications moved (or being killed)
        moved: list[str] = []
        for name in list(self.queues):
            if name == self.default_queue or name in active_names:
                continue
            q = self.queues[name]
            q.capacity = 0.0
            q.max_capacity = 0.0
            q.expired = True
            if plan.move_on_expiry and q.apps:
                moved.extend(q.apps)
                self.queues[self.default_queue].apps.extend(q.apps)
                q.apps.clear()
            if not q.apps:
                del self.queues[name]

        queues = self.queues
        default = queues[self.default_queue]
        sums = _ChildSums(queues)
        self._set_entitlement(default, 0.0, 1.0, sums)

        def delta(row: tuple[ReservationAllocation, str, Res]) -> tuple[int, ...]:
            # the change of each resource type (now, less what its queue holds), in the plan's order,
            # then the id (as its two numbers: the order of ReservationId); a queue of capacity 0 (or
            # none yet) holds nothing
            r, name, v = row
            q = queues.get(name)
            if q is not None and q.capacity != 0.0:
                v = rsub(v, tuple(int(c * q.capacity) for c in cap))
            return (*v, r.id.cluster_timestamp, r.id.seq)

        # memory and vCores as YARN's guard; another type's zero capacity is the ratio's to answer. The
        # ratio of nothing is 0 whatever the capacity, and adding 0 leaves a float sum as it is
        with_ratio = cap[0] > 0 and cap[1] > 0
        shares: list[ReservationShare] = []
        total = 0.0
        for r, name, now_res in sorted(rows, key=delta):
            child = queues.get(name)
            if child is None:
                child = queues[name] = ChildQueue(name)
                sums.add(name, 0.0)
            child.expired = False
            target = calc.ratio(now_res, cap) if with_ratio and now_res != zero else 0.0
            max_cap = target if r.contains_gangs() else 1.0
            if child.capacity != target or child.max_capacity != max_cap:
                self._set_entitlement(child, target, max_cap, sums)
            if target:
                total = f32(total + target)
            shares.append(ReservationShare(r.id, r.user, now_res, child.capacity, child.max_capacity, r.gang))
        self._set_entitlement(default, f32(1.0 - total), 1.0, sums)
        archived = plan.archive_completed(now)
        return FollowerState(
            now=now,
            plan_capacity=cap,
            default_queue=self.default_queue,
            default_share=default.capacity,
            active=tuple(shares),
            queues={n: QueueView(n, q.capacity, q.max_capacity, tuple(q.apps)) for n, q in sorted(self.queues.items())},
            replanned=tuple(replanned),
            archived=tuple(archived),
            moved_apps=tuple(moved),
        )
