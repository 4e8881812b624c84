"""A reservation as the plan holds it: YARN's InMemoryReservationAllocation, and the list filter.

`ReservationAllocation` keeps the stored allocation entries (as the list endpoint reports them) and
their sum as a step function (absolute times, or offsets in `[0, period)` when periodic).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field

from apportion.lean_dataclass import dataclass
from apportion.reservation.definition import ReservationDefinition, ReservationId
from apportion.reservation.periodic import PeriodicStepFunction, wrap_pieces
from apportion.reservation.resmath import ZERO, Res
from apportion.reservation.stepfn import StepFunction
from apportion.reservation.store import StoredReservation

Interval = tuple[int, int, Res]


def fold_intervals(intervals: Iterable[Interval], period: int, zero: Res = ZERO) -> StepFunction:
    """Sum of intervals taken modulo period, on offsets `[0, period)`: a piece past the end wraps,
    a piece as long as the period or longer covers all of it (`zero`: the vectors' zero)."""
    pieces = wrap_pieces(intervals, period, clamp=True)
    assert pieces is not None  # clamp never refuses
    return StepFunction.from_intervals(pieces, zero)


@dataclass
class ReservationAllocation:
    """An accepted (or candidate) reservation: YARN's InMemoryReservationAllocation.

    `intervals` are the stored allocation entries, as the list endpoint reports them; `rle` is
    their sum (absolute times, or offsets in `[0, period)` when periodic).
    """

    id: ReservationId
    user: str | None
    definition: ReservationDefinition | None
    start: int
    end: int
    intervals: list[Interval]
    period: int = 0
    gang: bool = False
    acceptance_time: int = -1
    rle: StepFunction = field(default_factory=StepFunction)

    def __post_init__(self) -> None:
        if self.rle.is_empty() and self.intervals:
            z = (0,) * len(self.intervals[0][2])
            if self.period > 0:
                self.rle = fold_intervals(self.intervals, self.period, z)
            else:
                self.rle = StepFunction.from_intervals(self.intervals, z)

    def resources_at(self, t: int) -> Res:
        """Zero outside `[start, end)`; inside it, the allocation at t (t mod period if periodic)."""
        if t < self.start or t >= self.end:
            return self.rle.zero
        if self.period > 0:
            return self.rle.at(t % self.period)
        return self.rle.at(t)

    def over_time(self, s: int, e: int) -> StepFunction:
        """The allocation over `[s, e)`; periodic reservations count every recurrence in the range."""
        if self.period > 0:
            p = PeriodicStepFunction(self.period, self.rle.zero)
            p.base = self.rle
            return p.unrolled(s, e)
        return self.rle.clip(s, e)

    def first_change_unrolled_at_or_before(self, t: int) -> int | None:
        """The latest breakpoint at or before t of the allocation as the plan reads it (unrolled if periodic)."""
        if self.period <= 0:
            return self.rle.last_change_at_or_before(t)
        p = PeriodicStepFunction(self.period, self.rle.zero)
        p.base = self.rle
        return p.last_change_at_or_before(t)

    def contains_gangs(self) -> bool:
        """ReservationAllocation.containsGangs: the gang flag the plan follower reads (§11)."""
        return self.gang

    def stored(self) -> StoredReservation:
        """The reservation as a PlanStore keeps it."""
        return StoredReservation(self.id, self.user or "", self.definition, self.start, self.end,
                                 tuple(self.intervals), self.period, self.gang, self.acceptance_time)

    @classmethod
    def from_stored(cls, r: StoredReservation) -> ReservationAllocation:
        """A reservation read back from a PlanStore, its allocation rebuilt from the stored entries."""
        return cls(r.id, r.user, r.definition, r.start, r.end, list(r.intervals), period=r.period, gang=r.gang,
                   acceptance_time=r.acceptance_time)


def java_rem(a: int, b: int) -> int:
    """Java's % (the sign of the dividend)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def matches_interval(r: ReservationAllocation, s: int, e: int) -> bool:
    """The list filter of contract §5.4 (shared with getReservations)."""
    if r.period <= 0:
        return r.start <= e and r.end > s
    if r.start > e:
        return False
    p = r.period
    if e - s > p:
        return True
    shift = java_rem(r.start, p)
    pe = java_rem(r.end - shift, p)
    qs = java_rem(s - shift, p)
    qe = java_rem(e - shift, p)
    return qe < pe or qs < pe or qs > qe
