"""Reservations joined to the capacity tree: each reservable queue's plan is a plan of YARN's
ReservationSystem (`apportion.reservation`), the planner `plan replay` and the service use.

A queue annotated `apportion.io/reservable: "true"` owns a plan. A reservation is a promise, so the
plan's capacity is what the tree promises that queue: its guarantee, or its deserved when it has no
guarantee (capped by what the cluster has, so a node failure is a capacity drop).

The simulator's plans hold Volcano's internal units as exact integers: the plan's dimensions are
memory (bytes), cpu (millicores) and every extended resource the queue or its reservations name
(`nvidia.com/gpu` in milli-GPUs), times are milliseconds. A submission goes through the system's
`submit_definition` (YARN's validation, the plan's agent, its sharing policy); ids are YARN's
`reservation_0_NNNN` (cluster timestamp 0), one sequence for the whole simulation.

Every simulation step the follower (YARN's CapacitySchedulerPlanFollower, `reservation.follower`)
runs on each plan, and its state becomes the reservable queue's children:

* each active reservation is a leaf child named by its id, deserved = guarantee = its resources at
  that instant; capability = the reservable queue's capability when the plan allows over-use (YARN:
  maximum capacity 1.0), else (or for a gang reservation) equal to its resources;
* `<queue>-default` gets what is left of the plan (deserved and guarantee), capability as the parent;
* a reservation queue that is no longer active has expired: the simulator moves its jobs to the
  default child (moveOnExpiry) or kills them (simulation/follower.py);
* what is reserved now above the plan's capacity runs the plan's replanner (SimpleCapacityReplanner).
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from apportion.cluster.model import QueueInfo
from apportion.lean_dataclass import dataclass
from apportion.reservation.definition import (
    R_ALL,
    R_ANY,
    R_ORDER,
    R_ORDER_NO_GAP,
    ReservationDefinition,
    Stage,
)
from apportion.reservation.resmath import Calculator, Res
from apportion.resources import CPU, MEMORY, PODS, Resource
from apportion.simulation.specs import PlanSpec, ReservationSpec

if TYPE_CHECKING:
    from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
    from apportion.reservation.system import ReservationSystem

#: the simulator's reservation ids are YARN's with cluster timestamp 0: reservation_0_0001, ...
CLUSTER_TIMESTAMP = 0

INTERPRETERS = {"R_ANY": R_ANY, "R_ALL": R_ALL, "R_ORDER": R_ORDER, "R_ORDER_NO_GAP": R_ORDER_NO_GAP}


def to_ms(t: float) -> int:
    """Simulation seconds as the plan's milliseconds."""
    return int(round(t * 1000))


def plan_dims(*resources: Resource) -> tuple[str, ...]:
    """The dimensions of a plan holding these resources: memory, cpu, then the other names sorted
    (pods are not planned)."""
    names: set[str] = set()
    for r in resources:
        names.update(n for n in r.names() if n not in (PODS, CPU, MEMORY))
    return (MEMORY, CPU, *sorted(names))


def to_vector(r: Resource, dims: tuple[str, ...]) -> tuple[Res, list[str]]:
    """r as the plan's integer vector, and the names r asks for (non-zero) that the plan lacks."""
    missing = [n for n in r.names() if n not in dims and n != PODS and r.get(n) != 0]
    return tuple(int(round(r.get(n))) for n in dims), missing


def to_resource(v: Res, dims: tuple[str, ...]) -> Resource:
    """A plan vector as a Volcano resource (an extended resource only where it is non-zero)."""
    named = dict(zip(dims, v))
    return Resource(cpu=named.get(CPU, 0), memory=named.get(MEMORY, 0),
                    scalars={n: float(x) for n, x in named.items() if n not in (CPU, MEMORY) and x})


@dataclass
class Reservation:
    """An accepted reservation as the simulator reports it: the real allocation, in seconds and
    Volcano resources. `start`/`end` are the plan's (YARN's `[start, end)`, during which the
    reservation's queue exists, possibly with nothing in it); `pieces` are the non-zero pieces the
    agent placed."""

    id: str
    name: str
    queue: str
    user: str
    pieces: list[tuple[float, float, Resource]]
    gang: bool
    accepted_at: float
    seq: int
    start: float
    end: float
    #: the requested window (arrival, deadline), for the report
    window: tuple[float, float] = (0.0, 0.0)

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
        """Every instant its queue or the queue's size changes: start, end and piece boundaries."""
        pts = {self.start, self.end}
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


@dataclass
class FollowerResult:
    """The reservable queue's children at one instant."""

    children: list[QueueInfo]
    active: list[str]
    removed_by_replanner: list[str] = field(default_factory=list)


class SimPlan:
    """A reservable queue's plan in the simulation's reservation system, with its agent, sharing
    policy, replanner and follower (all `apportion.reservation`'s)."""

    #: what becomes of a job of an expired reservation that has not started: False, it moves to the
    #: default child or is killed as YARN's follower does (`moveOnExpiry`); True, it leaves the
    #: sessions, as the service routes it (service/live.py; its plans' mirror sets this)
    hold_unstarted = False

    def __init__(self, system: ReservationSystem, queue: str, spec: PlanSpec, step: float,
                 dims: tuple[str, ...]) -> None:
        # imported here: the planner's agents and policies are a tenth of a command's start, and only a
        # scenario with a reservable queue plans anything (a forecast of a dump never does)
        from apportion.reservation.agents import make_agent
        from apportion.reservation.plan import InMemoryPlan
        from apportion.reservation.policies import make_policy
        from apportion.reservation.replanner import SimpleCapacityReplanner

        self.system = system
        self.queue = queue
        self.spec = spec
        self.step = step
        self.dims = dims
        policy: dict[str, object] = {"type": spec.policy}
        if spec.policy == "CapacityOverTime":
            policy.update(instantaneousMaxCapacity=spec.instantaneous, averageCapacity=spec.average,
                          window=to_ms(spec.window))
        plan = InMemoryPlan(queue, (0,) * len(dims), step=to_ms(step), calculator=Calculator(spec.calculator),
                            policy=make_policy(policy), move_on_expiry=spec.move_on_expiry, dims=dims)
        replanner = SimpleCapacityReplanner(to_ms(spec.enforcement_window)) if spec.replanner else None
        self.entry = system.add_plan(plan, make_agent(spec.agent), replanner)
        #: the plan's capacity as the tree promises it (Volcano resources)
        self.capacity = Resource()
        #: accepted reservations by id, as long as the replanner has not deleted them
        self.reservations: dict[str, Reservation] = {}

    @property
    def plan(self) -> InMemoryPlan:
        """The real plan."""
        return self.entry.plan

    def wake_points(self) -> list[tuple[str, float]]:
        """(reservation id, instant) for every instant its follower's children may change: a
        simulation started from a state runs a session then even when nothing else happens."""
        return [(r.id, p) for r in self.reservations.values() for p in r.change_points()]

    def set_capacity(self, capacity: Resource) -> None:
        """The plan's capacity from now on (a type the plan does not hold is not planned)."""
        self.capacity = capacity.clone()
        self.plan.set_capacity(to_vector(capacity, self.dims)[0])

    def definition(self, spec: ReservationSpec, now: float) -> ReservationDefinition | str:
        """The submission as YARN's definition in the plan's units (arrival no earlier than now: the
        simulator never books the past), or why it cannot be one."""
        stages = []
        for i, st in enumerate(spec.stages):
            cap, missing = to_vector(st.resources, self.dims)
            if missing:
                return (f"requests[{i}] asks for {', '.join(missing)}, which the plan of queue {self.queue} "
                        "does not hold")
            stages.append(Stage(cap, st.num_containers, st.concurrency or st.num_containers, to_ms(st.duration)))
        return ReservationDefinition(arrival=to_ms(max(spec.arrival, now)), deadline=to_ms(spec.deadline),
                                     stages=tuple(stages), interpreter=INTERPRETERS[spec.interpreter],
                                     name=spec.name)

    def submit(self, spec: ReservationSpec, now: float) -> SubmitResult:
        """Submit through the reservation system: a new id, YARN's checks, the agent, the policy."""
        plan = self.plan
        plan.now = to_ms(now)
        rid = self.system.new_reservation_id()
        definition = self.definition(spec, now)
        if isinstance(definition, str):
            return SubmitResult(False, None, definition, str(rid))
        status, body = self.system.submit_definition(spec.user, self.queue, rid, definition)
        if status != 202:
            return SubmitResult(False, None, body["RemoteException"]["message"], str(rid))
        alloc = plan.get(rid)
        assert alloc is not None
        res = self._view(alloc, spec, now)
        self.reservations[res.id] = res
        return SubmitResult(True, res, "", res.id)

    def _view(self, alloc: ReservationAllocation, spec: ReservationSpec, now: float) -> Reservation:
        pieces = [(a / 1000, b / 1000, to_resource(v, self.dims)) for a, b, v in alloc.rle.nonzero_pieces()]
        return Reservation(id=str(alloc.id), name=spec.name, queue=self.queue, user=spec.user, pieces=pieces,
                           gang=spec.gang, accepted_at=now, seq=alloc.id.seq, start=alloc.start / 1000,
                           end=alloc.end / 1000, window=(spec.arrival, spec.deadline))

    def follow(self, queue: QueueInfo, now: float, cluster_total: Resource) -> FollowerResult:
        """One plan-follower run at `now` (the follower rounds it up to the plan step): the plan
        gets the tree's capacity, the replanner runs if what is reserved now exceeds it, and the
        active reservations become the children of `queue`."""
        self.set_capacity(plan_capacity(queue, cluster_total))
        self.plan.now = to_ms(now)
        state = self.entry.follower.step(to_ms(now))
        removed = [str(r) for r in state.replanned]
        for rid in removed:
            self.reservations.pop(rid, None)
        # Unlike YARN (which keeps its active set for this run), the simulator never publishes a
        # queue for a reservation the replanner has just deleted: its jobs would run against a
        # promise that no longer exists.
        shares = sorted((s for s in state.active if str(s.id) not in removed), key=lambda s: s.id)
        overuse = self.spec.overuse
        children = []
        total = Resource()
        for share in shares:
            r = self.reservations[str(share.id)]
            amount = to_resource(share.resources, self.dims)
            total.add(amount)
            own = r.gang or not overuse
            children.append(QueueInfo(
                name=r.id, weight=1, capability=amount.clone() if own else queue.capability.clone(),
                deserved=amount.clone(), guarantee=amount.clone(),
                capability_set=own or queue.capability_set, deserved_set=True, parent=queue.name,
                reclaimable=queue.reclaimable, priority=queue.priority, creation=queue.creation,
                annotations={"apportion.io/reservation": r.name},
                capability_names=frozenset({CPU, MEMORY}) if own else queue.capability_names,
            ))
        rest = self.capacity.exceeded_part(total)
        g_rest = queue.guarantee.exceeded_part(total) if not queue.guarantee.is_empty() else Resource()
        # Without over-use the default child may not borrow what is reserved: otherwise best-effort
        # jobs there fill the parent's capability and the reservation's job cannot even be enqueued
        # (enqueue checks the ancestors; reclaim only looks at admitted jobs), so the promise is broken.
        d_cap = queue.capability.clone() if overuse else rest.clone()
        children.append(QueueInfo(
            name=default_child(queue.name), weight=1, capability=d_cap, deserved=rest,
            guarantee=g_rest, capability_set=queue.capability_set or not overuse, deserved_set=True,
            parent=queue.name, reclaimable=queue.reclaimable, priority=queue.priority, creation=queue.creation,
            capability_names=queue.capability_names if overuse else frozenset({CPU, MEMORY}),
        ))
        return FollowerResult(children=children, active=[str(s.id) for s in shares], removed_by_replanner=removed)


def simulation_plans(
    specs: dict[str, PlanSpec], queues: dict[str, QueueInfo], reservations: list[ReservationSpec], period: float,
) -> dict[str, SimPlan]:
    """One reservation system with a plan per reservable queue: dimensions from what the queue
    promises and what its reservations ask for, step the plan's (else the simulation period)."""
    plans: dict[str, SimPlan] = {}
    if not specs:  # no reservable queue: no system to build (nor its modules to import)
        return plans
    from apportion.reservation.system import ReservationSystem

    system = ReservationSystem(CLUSTER_TIMESTAMP)
    for qname, pspec in sorted(specs.items()):
        q = queues[qname]
        asked = [st.resources for r in reservations if r.queue == qname for st in r.stages]
        dims = plan_dims(q.guarantee, q.deserved, *asked)
        plans[qname] = SimPlan(system, qname, pspec, pspec.step or period, dims)
    return plans


def promised(queue: QueueInfo) -> Resource | None:
    """What the tree promises a reservable queue, which its plan's capacity is (the service's plans
    too): its guarantee if set, else its deserved; for a queue promised neither, its capability if
    set; None: nothing, the plan gets the cluster."""
    if not queue.guarantee.is_empty():
        return queue.guarantee
    if not queue.deserved.is_empty():
        return queue.deserved
    return queue.capability if queue.capability_set else None


def plan_capacity(queue: QueueInfo, cluster_total: Resource) -> Resource:
    """`promised(queue)`, else the cluster; capped by the cluster (so a node failure is a capacity
    drop)."""
    base = promised(queue)
    if base is None:
        base = cluster_total
    out = Resource()
    for n in sorted({*base.names(), CPU, MEMORY} - {PODS}):
        if n in (CPU, MEMORY) and base.get(n) == 0 and not base.has(n):
            continue
        if n not in (CPU, MEMORY) and not base.has(n):
            continue
        out.set(n, min(base.get(n), cluster_total.get(n)))
    return out


def default_child(queue: str) -> str:
    """The name of the reservable queue's default child (`<queue>-default`)."""
    return f"{queue}-default"
