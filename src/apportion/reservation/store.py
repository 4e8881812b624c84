"""Where a reservation system keeps what must survive a restart: YARN's RMStateStore, for reservations.

YARN's InMemoryPlan writes every accepted reservation to the RM state store
(`storeNewReservation`) and removes it on delete or archive (`removeReservation`); on restart the
ReservationSystem reads them back and adds each to its plan with `isRecovering` set: no policy
check, no new acceptance time, no write back, so the recovered plan holds the same allocations.

`PlanStore` is that seam, kept small: per plan (the reservable queue's short name) the stored
reservations, plus the system's own state, the id sequence and the id -> queue record of accepted
submissions (contract §5.6, never removed). A store holds plain records (`StoredReservation`), not
the plan's live objects, so a SQL store can map them to rows column by column.

`InMemoryPlanStore` is the implementation used today (the replay, the simulator, the tests); the
service adds a SQL one against the same protocol.
"""

from __future__ import annotations

from typing import Protocol

from apportion.lean_dataclass import dataclass
from apportion.reservation.definition import ReservationDefinition, ReservationId
from apportion.reservation.resmath import Res


@dataclass(frozen=True)
class StoredReservation:
    """One accepted reservation as a store keeps it (YARN's ReservationAllocationStateProto).

    `intervals` are the stored allocation entries `(start, end, resource)` exactly as the plan
    holds them (offsets in `[0, period)` when periodic); `acceptance_time` is the plan clock when it
    was accepted.
    """

    id: ReservationId
    user: str
    definition: ReservationDefinition | None
    start: int
    end: int
    intervals: tuple[tuple[int, int, Res], ...]
    period: int
    gang: bool
    acceptance_time: int


class PlanStore(Protocol):
    """What a reservation system persists. Every method is called with the system's lock held (the
    system is single-threaded), and a write is complete when the method returns."""

    def put_reservation(self, queue: str, res: StoredReservation) -> None:
        """Store (or replace, same id) an accepted reservation of the plan of `queue`."""

    def delete_reservation(self, queue: str, rid: ReservationId) -> None:
        """Forget a reservation of the plan of `queue` (deleted, archived or replanned away)."""

    def reservations(self, queue: str) -> list[StoredReservation]:
        """Every stored reservation of the plan of `queue`, in id order."""

    def put_queue_of(self, rid: ReservationId, queue: str) -> None:
        """Record which plan an accepted submission belongs to (never removed)."""

    def queue_of(self) -> dict[ReservationId, str]:
        """Every id -> queue record."""

    def put_sequence(self, seq: int) -> None:
        """The last reservation id sequence number handed out."""

    def sequence(self) -> int:
        """The last sequence number stored (0 when none was)."""


class InMemoryPlanStore:
    """A `PlanStore` in process memory: it survives the system object, not the process."""

    def __init__(self) -> None:
        self._plans: dict[str, dict[ReservationId, StoredReservation]] = {}
        self._queue_of: dict[ReservationId, str] = {}
        self._seq = 0

    def put_reservation(self, queue: str, res: StoredReservation) -> None:
        """Keep a copy of the record under its plan."""
        self._plans.setdefault(queue, {})[res.id] = res

    def delete_reservation(self, queue: str, rid: ReservationId) -> None:
        """Drop the record, if held."""
        self._plans.get(queue, {}).pop(rid, None)

    def reservations(self, queue: str) -> list[StoredReservation]:
        """The plan's records, in id order."""
        held = self._plans.get(queue, {})
        return [held[k] for k in sorted(held)]

    def put_queue_of(self, rid: ReservationId, queue: str) -> None:
        """Record the id's queue."""
        self._queue_of[rid] = queue

    def queue_of(self) -> dict[ReservationId, str]:
        """A copy of every id -> queue record."""
        return dict(self._queue_of)

    def put_sequence(self, seq: int) -> None:
        """Keep the last sequence number."""
        self._seq = seq

    def sequence(self) -> int:
        """The last sequence number kept (0 at first)."""
        return self._seq
