"""Reservations joined to the capacity tree: the plan of a reservable queue and its plan follower.

A queue annotated `apportion.io/reservable: "true"` owns a plan. A reservation is a promise, so the
plan's capacity is what the tree promises that queue: its guarantee, or its deserved when it has no
guarantee (capped by what the cluster has, so a node failure is a capacity drop).

Every simulation step the follower (YARN's CapacitySchedulerPlanFollower, §11 of the reservation
spec, in Volcano terms) rewrites the reservable queue's children:

* each active reservation is a leaf child named by its id, deserved = guarantee = its resources at
  that instant; capability = the reservable queue's capability when the plan allows over-use (YARN:
  maximum capacity 1.0), else (or for a gang reservation) equal to its resources;
* `<queue>-default` gets what is left of the plan (deserved and guarantee), capability as the parent;
* a reservation queue that is no longer active has expired: the simulator moves its jobs to the
  default child (moveOnExpiry) or kills them;
* a capacity drop below what is reserved now runs the replanner (SimpleCapacityReplanner).

The plan itself (placement, sharing policies, replanner) is `LocalPlan` below, a self-contained
implementation used by the simulator: see docs/scenario.md for what it does and does not cover
compared with `apportion.reservation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from apportion.cluster.model import QueueInfo
from apportion.resources import CPU, MEMORY, PODS, Resource
from apportion.simulation.scenario import PlanSpec, ReservationSpec

EPS = 1e-9


def _names(*rs: Resource) -> list[str]:
    out: set[str] = set()
    for r in rs:
        out.update(n for n in r.names() if n != PODS)
    out.update((CPU, MEMORY))
    return sorted(out)


def fits(req: Resource, avail: Resource) -> bool:
    """Component-wise req <= avail (a missing dimension is 0), the admission test of YARN's policies."""
    return all(req.get(n) <= avail.get(n) + 1e-6 for n in _names(req, avail))


def exceeds(a: Resource, b: Resource) -> bool:
    """a > b in some component."""
    return not fits(a, b)


@dataclass
class Reservation:
    """An accepted reservation: non-overlapping pieces [start, end) with constant resources."""

    id: str
    name: str
    queue: str
    user: str
    pieces: list[tuple[float, float, Resource]]
    gang: bool
    accepted_at: float
    seq: int
    #: the requested window (arrival, deadline), for the report
    window: tuple[float, float] = (0.0, 0.0)

    @property
    def start(self) -> float:
        """When the first piece starts (the window's start if there is none)."""
        return self.pieces[0][0] if self.pieces else self.window[0]

    @property
    def end(self) -> float:
        """When the last piece ends (the window's start if there is none)."""
        return self.pieces[-1][1] if self.pieces else self.window[0]

    def at(self, t: float) -> Resource:
        """The resources reserved at time t (none outside the pieces)."""
        for s, e, r in self.pieces:
            if s <= t < e:
                return r
        return Resource()

    def active(self, t: float) -> bool:
        """Active at t: YARN's `[t, t]` interval query over the reservation's [start, end)."""
        return self.start <= t < self.end

    def change_points(self) -> list[float]:
        """Every piece boundary, sorted."""
        pts = set()
        for s, e, _ in self.pieces:
            pts.add(s)
            pts.add(e)
        return sorted(pts)


@dataclass
class SubmitResult:
    """The answer to one submission: accepted with its reservation, or refused with the reason."""

    accepted: bool
    reservation: Reservation | None
    message: str
    id: str


def _merge_pieces(pieces: list[tuple[float, float, Resource]]) -> list[tuple[float, float, Resource]]:
    """Overlapping pieces summed into maximal constant non-zero pieces."""
    pts = sorted({p for s, e, _ in pieces for p in (s, e)})
    out: list[tuple[float, float, Resource]] = []
    for a, b in zip(pts, pts[1:]):
        r = Resource()
        for s, e, x in pieces:
            if s <= a and b <= e:
                r.add(x)
        if r.is_empty():
            continue
        if out and out[-1][1] == a and out[-1][2].equal(r):
            out[-1] = (out[-1][0], b, r)
        else:
            out.append((a, b, r))
    return out


class LocalPlan:
    """The plan of one reservable queue: placement, sharing policy, replanner.

    Placement is greedy and early (YARN's greedy-left): stages in list order, each at the earliest
    step-aligned start in its window where `numContainers × resources` fits for its whole duration
    within the plan's availability (capacity − committed, and under CapacityOverTime the user's
    instantaneous cap). R_ALL/R_ORDER: every stage must be placed, R_ORDER stage k starts after stage
    k−1 ends; R_ANY: the first stage that fits. The sharing policy then judges the whole allocation.
    """

    def __init__(self, queue: str, spec: PlanSpec, capacity: Resource, step: float) -> None:
        self.queue = queue
        self.spec = spec
        self.capacity = capacity.clone()
        self.step = step
        self.reservations: dict[str, Reservation] = {}
        self.seq = 0

    # ----------------------------------------------------------------- load
    def committed(self, t: float, *, user: str | None = None, exclude: str = "") -> Resource:
        """What the plan has reserved at time t (of one user, leaving one reservation out, if asked)."""
        r = Resource()
        for res in self.reservations.values():
            if res.id != exclude and (user is None or res.user == user):
                r.add(res.at(t))
        return r

    def _points(self, extra: list[tuple[float, float, Resource]] | None = None, user: str | None = None) -> list[float]:
        pts: set[float] = set()
        for res in self.reservations.values():
            if user is None or res.user == user:
                pts.update(res.change_points())
        for s, e, _ in extra or []:
            pts.add(s)
            pts.add(e)
        return sorted(pts)

    def _ceil_step(self, t: float) -> float:
        return math.ceil(t / self.step - EPS) * self.step

    def available(self, t: float, user: str) -> Resource:
        """What a new reservation of `user` may take at t (never negative)."""
        avail = self.capacity.clone()
        avail.sub_without_assert(self.committed(t))
        if self.spec.policy == "CapacityOverTime":
            cap = self.capacity.clone().multi(self.spec.instantaneous)
            cap.sub_without_assert(self.committed(t, user=user))
            avail = Resource.min_of(avail, cap)
        for n in avail.names():
            if avail.get(n) < 0:
                avail.set(n, 0.0)
        return avail

    def _fits_over(self, need: Resource, s: float, e: float, user: str,
                   extra: list[tuple[float, float, Resource]]) -> bool:
        """need fits at every instant of [s, e) given the already placed stages `extra`."""
        pts = [p for p in self._points(extra) if s < p < e]
        for t in [s, *pts]:
            avail = self.available(t, user)
            for ps, pe, pr in extra:
                if ps <= t < pe:
                    avail.sub_without_assert(pr)
            if not fits(need, avail):
                return False
        return True

    # ----------------------------------------------------------------- agent
    def place(self, spec: ReservationSpec) -> list[tuple[float, float, Resource]] | None:
        """The agent: each stage in order at the earliest step-aligned start that fits before the
        deadline; the pieces, or None when a stage does not fit."""
        placed: list[tuple[float, float, Resource]] = []
        cursor = self._ceil_step(spec.arrival)
        for st in spec.stages:
            need = st.resources.clone().multi(st.num_containers)
            dur = math.ceil(st.duration / self.step - EPS) * self.step
            candidates = sorted({cursor, *(self._ceil_step(p) for p in self._points(placed) if p > cursor)})
            where = None
            for c in candidates:
                if c + dur > spec.deadline + EPS:
                    break
                if self._fits_over(need, c, c + dur, spec.user, placed):
                    where = c
                    break
            if where is None:
                if spec.interpreter == "R_ANY":
                    continue
                return None
            placed.append((where, where + dur, need))
            if spec.interpreter == "R_ANY":
                break
            if spec.interpreter == "R_ORDER":
                cursor = where + dur
        return _merge_pieces(placed) if placed else None

    # ----------------------------------------------------------------- policy
    def _check_policy(self, res: Reservation) -> str:
        """'' when the sharing policy accepts, else YARN's message."""
        pol = self.spec.policy
        if pol == "None":
            return ""
        for s, _e, _ in res.pieces:
            for t in [s, *[p for p in self._points() if res.start <= p < res.end]]:
                total = self.committed(t)
                total.add(res.at(t))
                if exceeds(total, self.capacity):
                    kind = "ResourceOverCommitException" if pol == "NoOverCommit" else "PlanningQuotaException"
                    return (f"{kind}: Resources at time {int(res.start * 1000)} would be overcommitted by "
                            f"accepting reservation: {res.id}")
        if pol != "CapacityOverTime":
            return ""
        inst_cap = self.capacity.clone().multi(self.spec.instantaneous)
        pts = sorted({*self._points(user=res.user), *res.change_points()})
        for t in pts:
            u = self.committed(t, user=res.user)
            u.add(res.at(t))
            if exceeds(u, inst_cap):
                return (f"PlanningQuotaException: Resources at time {int(t * 1000)} would be overcommitted by "
                        f"accepting reservation: {res.id}")
        # average over any window of length W: the integral is piecewise linear in the window's end,
        # so its maximum is at an end equal to a change point c or c + W
        w = self.spec.window
        avg_cap = self.capacity.clone().multi(self.spec.average)
        mine = [r for r in self.reservations.values() if r.user == res.user] + [res]
        ends = sorted({p + d for p in pts for d in (0.0, w)})
        for t_end in ends:
            integral = Resource()
            for r in mine:
                for s, e, x in r.pieces:
                    overlap = min(e, t_end) - max(s, t_end - w)
                    if overlap > 0:
                        integral.add(x.clone().multi(overlap))
            if exceeds(integral.multi(1.0 / w), avg_cap):
                return (f"PlanningQuotaException: Integral (avg over time) quota capacity {self.spec.average} over a "
                        f"window of {int(w)} seconds,  would be exceeded by accepting reservation: {res.id}")
        return ""

    # ----------------------------------------------------------------- operations
    def new_id(self) -> tuple[str, int]:
        """The next reservation id, YARN-style, and its sequence number."""
        self.seq += 1
        return f"reservation_0_{self.seq:04d}", self.seq

    def submit(self, spec: ReservationSpec, now: float) -> SubmitResult:
        """Place and admit a reservation; the id is assigned at submission, as YARN's new-reservation."""
        rid, seq = self.new_id()
        if spec.deadline <= now:
            return SubmitResult(False, None, f"The specified deadline: {int(spec.deadline * 1000)} is the past. "
                                "Please try again with deadline in the future.", rid)
        clipped = ReservationSpec(**{**spec.__dict__, "arrival": max(spec.arrival, now)})
        pieces = self.place(clipped)
        if pieces is None:
            return SubmitResult(False, None, "The request cannot be satisfied", rid)
        res = Reservation(id=rid, name=spec.name, queue=self.queue, user=spec.user, pieces=pieces, gang=spec.gang,
                          accepted_at=now, seq=seq, window=(spec.arrival, spec.deadline))
        msg = self._check_policy(res)
        if msg:
            return SubmitResult(False, None, msg, rid)
        self.reservations[rid] = res
        return SubmitResult(True, res, "", rid)

    def active(self, t: float) -> list[Reservation]:
        """The reservations active at time t, by id."""
        return sorted((r for r in self.reservations.values() if r.active(t)), key=lambda r: r.id)

    def replan(self, now: float) -> list[str]:
        """SimpleCapacityReplanner: over [now, now + E), delete the latest-accepted active
        reservations while committed exceeds capacity."""
        removed: list[str] = []
        horizon = now + self.spec.enforcement_window
        pts = sorted({now, *(p for p in self._points() if now < p < horizon)})
        for t in pts:
            while exceeds(self.committed(t), self.capacity):
                act = [r for r in self.reservations.values() if r.active(t)]
                if not act:
                    break
                victim = max(act, key=lambda r: (r.accepted_at, r.seq))
                del self.reservations[victim.id]
                removed.append(victim.id)
        return removed


@dataclass
class FollowerResult:
    """The reservable queue's children at one instant."""

    children: list[QueueInfo]
    active: list[str]
    removed_by_replanner: list[str] = field(default_factory=list)


def plan_capacity(queue: QueueInfo, cluster_total: Resource) -> Resource:
    """Guarantee if set, else deserved; capped by the cluster (so a node failure is a capacity drop)."""
    base = queue.guarantee if not queue.guarantee.is_empty() else queue.deserved
    out = Resource()
    for n in _names(base):
        if n in (CPU, MEMORY) and base.get(n) == 0 and not base.has(n):
            continue
        if n not in (CPU, MEMORY) and not base.has(n):
            continue
        out.set(n, min(base.get(n), cluster_total.get(n)))
    return out


def default_child(queue: str) -> str:
    """The name of the reservable queue's default child (`<queue>-default`)."""
    return f"{queue}-default"


def follow(plan: LocalPlan, queue: QueueInfo, now: float, cluster_total: Resource) -> FollowerResult:
    """One plan-follower run at `now` (rounded up to the plan step): the children of `queue`."""
    now = plan._ceil_step(now)
    new_cap = plan_capacity(queue, cluster_total)
    removed: list[str] = []
    dropped = exceeds(plan.capacity, new_cap)
    plan.capacity = new_cap
    active = plan.active(now)
    reserved = Resource()
    for r in active:
        reserved.add(r.at(now))
    if plan.spec.replanner and (exceeds(reserved, plan.capacity) or dropped):
        removed = plan.replan(now)
        # Unlike YARN (which keeps its active set), the simulator never publishes a queue for a
        # reservation that no longer exists: its jobs would otherwise run against a deleted promise.
        active = [r for r in active if r.id not in removed]
    children = []
    total = Resource()
    for r in active:
        amount = r.at(now)
        total.add(amount)
        cap = amount.clone() if (r.gang or not plan.spec.overuse) else queue.capability.clone()
        children.append(QueueInfo(
            name=r.id, weight=1, capability=cap, deserved=amount.clone(), guarantee=amount.clone(),
            capability_set=r.gang or not plan.spec.overuse or queue.capability_set,
            deserved_set=True, parent=queue.name, reclaimable=queue.reclaimable, priority=queue.priority,
            creation=queue.creation, annotations={"apportion.io/reservation": r.name},
            capability_names=frozenset({CPU, MEMORY}) if (r.gang or not plan.spec.overuse) else queue.capability_names,
        ))
    rest = plan.capacity.exceeded_part(total)
    g_rest = queue.guarantee.exceeded_part(total) if not queue.guarantee.is_empty() else Resource()
    # Without over-use the default child may not borrow what is reserved: otherwise best-effort
    # jobs there fill the parent's capability and the reservation's job cannot even be enqueued
    # (enqueue checks the ancestors; reclaim only looks at admitted jobs), so the promise is broken.
    overuse = plan.spec.overuse
    d_cap = queue.capability.clone() if overuse else rest.clone()
    children.append(QueueInfo(
        name=default_child(queue.name), weight=1, capability=d_cap, deserved=rest,
        guarantee=g_rest, capability_set=queue.capability_set or not overuse, deserved_set=True, parent=queue.name,
        reclaimable=queue.reclaimable, priority=queue.priority, creation=queue.creation,
        capability_names=queue.capability_names if overuse else frozenset({CPU, MEMORY}),
    ))
    return FollowerResult(children=children, active=[r.id for r in active], removed_by_replanner=removed)
