"""The reservation system: one plan per reservable queue (YARN's AbstractReservationSystem).

It keeps, per reservable queue (by short name), the plan with its planning agent, replanner and
plan follower; the reservation id sequence, with ids formed as YARN forms them
(`reservation_<clusterTimestamp>_<seq>`); and the id -> queue record of accepted submissions
(`queue_of`, never removed, contract §5.6). The YARN REST handlers (`RestHandlers`, api.py) work
on that state.

With a `PlanStore` every change goes to the store (the plans write their reservations, the system
its sequence and id records), and `recover()` rebuilds the system from it as YARN's RM recovery
does: the sequence and records read back, each plan's reservations added with `is_recovering`
(no policy check, same allocations, same acceptance times).
"""

from __future__ import annotations

from apportion.lean_dataclass import dataclass
from apportion.reservation.agents import ReservationAgent
from apportion.reservation.api import RestHandlers
from apportion.reservation.definition import ReservationId
from apportion.reservation.follower import PlanFollower
from apportion.reservation.follower_inc import IncrementalFollower
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.replanner import SimpleCapacityReplanner
from apportion.reservation.resmath import Res
from apportion.reservation.store import PlanStore

#: the cluster timestamp of ids when the caller gives none (a replay has no cluster start time)
DEFAULT_CLUSTER_TIMESTAMP = 1_700_000_000_000


@dataclass
class PlanEntry:
    """A reservable queue's plan and what works on it."""

    plan: InMemoryPlan
    agent: ReservationAgent | None
    replanner: SimpleCapacityReplanner | None
    follower: PlanFollower
    #: (cluster resource, the plan queue's absolute capacity): the follower resizes the plan from it
    cluster: tuple[Res, float] | None = None


class ReservationSystem(RestHandlers):
    """Every reservable queue's plan, the id sequence and the id -> queue record."""

    def __init__(self, cluster_timestamp: int = DEFAULT_CLUSTER_TIMESTAMP, store: PlanStore | None = None) -> None:
        self.cluster_timestamp = cluster_timestamp
        self.store = store
        self.plans: dict[str, PlanEntry] = {}
        self.sequence = 0
        #: id -> queue of every accepted submit; never removed (contract §5.6)
        self.queue_of: dict[ReservationId, str] = {}

    @classmethod
    def single(
        cls,
        plan: InMemoryPlan,
        agent: ReservationAgent | None,
        replanner: SimpleCapacityReplanner | None = None,
        cluster: tuple[Res, float] | None = None,
        cluster_timestamp: int = DEFAULT_CLUSTER_TIMESTAMP,
        store: PlanStore | None = None,
    ) -> ReservationSystem:
        """A system with one reservable queue (the replay's)."""
        system = cls(cluster_timestamp, store)
        system.add_plan(plan, agent, replanner, cluster)
        return system

    def add_plan(
        self,
        plan: InMemoryPlan,
        agent: ReservationAgent | None,
        replanner: SimpleCapacityReplanner | None = None,
        cluster: tuple[Res, float] | None = None,
    ) -> PlanEntry:
        """Manage `plan` (keyed by its queue's short name); its changes go to the system's store."""
        if plan.queue in self.plans:
            raise ValueError(f"queue {plan.queue} already has a plan")
        plan.store = self.store
        entry = PlanEntry(plan, agent, replanner, IncrementalFollower(plan, replanner, cluster), cluster)
        self.plans[plan.queue] = entry
        return entry

    def entry(self, queue: str) -> PlanEntry | None:
        """The plan entry of a reservable queue, named `<name>` or `root.<name>`."""
        e = self.plans.get(queue)
        if e is None and queue.startswith("root."):
            e = self.plans.get(queue[len("root."):])
        return e

    @property
    def plan(self) -> InMemoryPlan:
        """The plan of a one-queue system (the replay's, the tests')."""
        if len(self.plans) != 1:
            raise ValueError(f"the system has {len(self.plans)} plans; ask entry(queue)")
        return next(iter(self.plans.values())).plan

    def new_reservation_id(self) -> ReservationId:
        """The next id, `reservation_<clusterTimestamp>_<seq>`, skipping any id already known."""
        while True:
            self.sequence += 1
            rid = ReservationId(self.cluster_timestamp, self.sequence)
            if rid not in self.queue_of and not any(rid in e.plan.reservations for e in self.plans.values()):
                break
        if self.store is not None:
            self.store.put_sequence(self.sequence)
        return rid

    def remember(self, rid: ReservationId, queue: str) -> None:
        """Record the queue of an accepted submission."""
        self.queue_of[rid] = queue
        if self.store is not None:
            self.store.put_queue_of(rid, queue)

    def recover(self) -> None:
        """Rebuild the sequence, the id records and every plan's reservations from the store."""
        if self.store is None:
            raise ValueError("the reservation system has no store to recover from")
        self.sequence = self.store.sequence()
        self.queue_of = self.store.queue_of()
        for queue, e in self.plans.items():
            e.plan.recover(self.store.reservations(queue))
