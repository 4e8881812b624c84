"""The plan: YARN's InMemoryPlan (contract §8).

The reservation records are in `allocation.py`, the availability queries in `availability.py`.

A plan has a list of dimensions (`dims`, YARN 3's resource types: memory-mb and vcores first,
then any extended resource such as nvidia.com/gpu), and every resource it holds or is asked for
is an integer vector in that order. The first dimension is memory (the default calculator orders
by it) and the second CPU; a plan embedded in another system may name them in its own units (the
simulator's plans hold Volcano's memory bytes, millicores and milli-GPUs).

It holds the accepted reservations, the committed load (non-periodic, and periodic kept modulo
maxPeriodicity), the per-user consumption, the capacity and the configuration. Every query and
every update works on step functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from apportion.reservation.allocation import (
    Interval,
    ReservationAllocation,
    fold_intervals,
    java_rem,
    matches_interval,
)
from apportion.reservation.availability import (
    _NO_TIMES,
    _NO_VALUES,
    PlanAvailability,
    _Availability,
    _in_int64,
)
from apportion.reservation.definition import ReservationId
from apportion.reservation.exceptions import PlanIllegalArgument, PlanningException
from apportion.reservation.periodic import PeriodicStepFunction, periods_meeting, piece_integral
from apportion.reservation.resmath import LONG_MAX, YARN_DIMS, Calculator, Res, radd, rneg
from apportion.reservation.steparrays import (
    PeriodicStepArrays,
    StepArrays,
    compact,
    one_function,
    running,
    window,
    window_compact,
)
from apportion.reservation.stepfn import StepFunction, merge
from apportion.reservation.store import StoredReservation

if TYPE_CHECKING:
    from apportion.reservation.store import PlanStore
    from apportion.reservation.view import Policy

class InMemoryPlan(PlanAvailability):
    """YARN's InMemoryPlan for one reservable queue."""

    def __init__(
        self,
        queue: str,
        capacity: Res,
        *,
        step: int = 1000,
        calculator: Calculator | None = None,
        minimum_allocation: Res | None = None,
        maximum_allocation: Res | None = None,
        policy: Policy,
        max_periodicity: int = 86_400_000,
        now: int = 0,
        move_on_expiry: bool = True,
        dims: tuple[str, ...] = YARN_DIMS,
    ) -> None:
        if step <= 0:
            raise ValueError("plan step must be positive")
        if len(dims) < 2 or len(set(dims)) != len(dims):
            raise ValueError(f"plan dimensions must be memory, CPU, then distinct others, not {dims!r}")
        k = len(dims)
        if len(capacity) != k:
            raise ValueError(f"plan capacity {capacity!r} does not have the plan's {k} dimensions")
        extra = k - 2
        yarn_units = tuple(dims[:2]) == YARN_DIMS
        if minimum_allocation is None:
            # YARN's defaults: 1024 MB and 1 vCore; 0 of any other resource type
            minimum_allocation = ((1024, 1) if yarn_units else (0, 0)) + (0,) * extra
        if maximum_allocation is None:
            # 8192 MB, 4 vCores, and no maximum (Long.MAX) for the other resource types
            maximum_allocation = ((8192, 4) if yarn_units else (LONG_MAX, LONG_MAX)) + (LONG_MAX,) * extra
        #: the plan's resource types, in the order of every vector it holds
        self.dims: tuple[str, ...] = tuple(dims)
        #: the zero vector of the plan's dimensions
        self.zero: Res = (0,) * k
        if max_periodicity <= 0:
            raise ValueError("maxPeriodicity must be positive")
        self.queue = queue
        self.capacity: Res = capacity
        self.step = step
        self.calc = calculator or Calculator("default")
        self.minimum_allocation = minimum_allocation
        self.maximum_allocation = maximum_allocation
        self.policy: Policy = policy
        self.max_periodicity = max_periodicity
        self.now = now
        self.move_on_expiry = move_on_expiry
        self.reservations: dict[ReservationId, ReservationAllocation] = {}
        #: every reservation added or removed since its reader last emptied it, or None when nothing
        #: reads it (an incremental plan follower does, to step over what changed only)
        self.touched: list[ReservationAllocation] | None = None
        self.load = StepFunction(zero=self.zero)
        self.periodic_load = PeriodicStepFunction(max_periodicity, self.zero)
        self.user_load: dict[str, StepFunction] = {}
        self.user_periodic: dict[str, PeriodicStepFunction] = {}
        # bumped by every load change; the availability cache is keyed on it
        self._version = 0
        # per user, the exact integral of its non-periodic load and of one period of its periodic
        # load, and whether every reservation ever added was non-negative: together they bound
        # what the user can consume over any range (see user_integral_bound)
        self._user_integral: dict[str, Res] = {}
        self._user_periodic_integral: dict[str, Res] = {}
        self._nonnegative = True
        # the same loads as numpy change-point arrays (steparrays), for window queries. A small plan
        # answers from its step functions (cheaper there); the mirrors are built once it holds
        # MIRROR_MIN breakpoints, kept up to date from then on, and off for good once an edit does
        # not fit int64 or fails half-way. A user's mirrors are read only where a per-user cap can
        # bind: each is built the first time it is read and kept up to date from then on (a plan
        # under the default cap of the whole capacity never builds one)
        self._mirrored = False
        # the mirrors' array paths are written for the two YARN dimensions only
        self._mirrors_off = k != 2
        self._load_arrays = StepArrays()
        self._periodic_arrays = PeriodicStepArrays(max_periodicity)
        self._user_arrays: dict[str, StepArrays] = {}
        self._user_periodic_arrays: dict[str, PeriodicStepArrays] = {}
        # (version, s, e, times, committed sums) of the last mirrored availability
        self._committed_seen: tuple[int, int, int, np.ndarray, np.ndarray, bool] | None = None
        self._avail_cache: _Availability | None = None
        #: where accepted reservations are written (YARN's RMStateStore); set by the ReservationSystem
        self.store: PlanStore | None = None

    # -- load bookkeeping ---------------------------------------------------------------------
    def _apply(self, res: ReservationAllocation, sign: int) -> None:
        self._version += 1
        user = res.user or ""
        pieces = res.rle.nonzero_pieces()
        try:
            self._apply_loads(res, user, pieces, sign)
        except BaseException:
            # a partial update (an interval longer than the period) leaves the loads unaccounted for
            self._nonnegative = False
            self._mirrored = False
            self._mirrors_off = True
            raise
        if self._mirrored and not self._apply_mirrors(res.period, user, pieces, sign):
            self._mirrored = False
            self._mirrors_off = True
        if sign > 0 and any(x < 0 for _a, _b, r in pieces for x in r):
            self._nonnegative = False
        integral = piece_integral(pieces, len(self.zero))
        # each of the max_periodicity // period copies of a periodic one added one folded period's integral
        k = sign * (self.max_periodicity // res.period if res.period > 0 else 1)
        totals = self._user_periodic_integral if res.period > 0 else self._user_integral
        total = totals.get(user, self.zero)
        totals[user] = tuple(t + k * i for t, i in zip(total, integral))

    def _apply_loads(self, res: ReservationAllocation, user: str, pieces: list[Interval], sign: int) -> None:
        signed = pieces if sign > 0 else [(a, b, rneg(r)) for a, b, r in pieces]
        if res.period > 0:
            p = res.period
            every = [(a + k * p, b + k * p, r) for k in range(self.max_periodicity // p) for a, b, r in signed]
            wrapped = self.periodic_load.wrapped(every)
            if wrapped is None:
                # a piece the periodic load refuses: add one by one, to fail where it always did
                self._apply_loads_one_by_one(res, user, pieces, sign)
                return
            per_user = self.user_periodic.get(user)
            if per_user is None:
                # not setdefault: its default would build an empty function on every edit
                per_user = self.user_periodic[user] = PeriodicStepFunction(self.max_periodicity, self.zero)
            self.periodic_load.base.add_pieces(wrapped)
            per_user.base.add_pieces(wrapped)
            if per_user.is_empty():
                del self.user_periodic[user]
        else:
            ul = self.user_load.get(user)
            if ul is None:
                ul = self.user_load[user] = StepFunction(zero=self.zero)
            self.load.add_pieces(signed)
            ul.add_pieces(signed)
            if ul.is_empty():
                del self.user_load[user]

    def _apply_loads_one_by_one(
        self, res: ReservationAllocation, user: str, pieces: list[Interval], sign: int
    ) -> None:
        """What `_apply_loads` does, piece by piece (the reference; test_res_steparrays compares)."""
        if res.period > 0:
            per_user = self.user_periodic.setdefault(user, PeriodicStepFunction(self.max_periodicity, self.zero))
            p = res.period
            for k in range(self.max_periodicity // p):
                for a, b, r in pieces:
                    rr = r if sign > 0 else rneg(r)
                    self.periodic_load.add(a + k * p, b + k * p, rr)
                    per_user.add(a + k * p, b + k * p, rr)
            if per_user.is_empty():
                del self.user_periodic[user]
        else:
            ul = self.user_load.setdefault(user, StepFunction(zero=self.zero))
            for a, b, r in pieces:
                rr = r if sign > 0 else rneg(r)
                self.load.add(a, b, rr)
                ul.add(a, b, rr)
            if ul.is_empty():
                del self.user_load[user]

    def _mirrors(self) -> bool:
        """Whether the mirrors answer: kept, or built now from the step functions because the plan
        has grown to MIRROR_MIN breakpoints (and int64 holds them)."""
        if self._mirrored:
            return True
        if self._mirrors_off or len(self.load) + len(self.periodic_load.base) < MIRROR_MIN:
            return False
        load = StepArrays.of(self.load)
        periodic = PeriodicStepArrays.of(self.periodic_load)
        if load is None or periodic is None:
            self._mirrors_off = True
            return False
        self._load_arrays = load
        self._periodic_arrays = periodic
        self._user_arrays = {}
        self._user_periodic_arrays = {}
        self._mirrored = True
        return True

    def _user_mirrors(self, user: str) -> tuple[StepArrays | None, PeriodicStepArrays | None] | None:
        """The user's non-periodic and periodic mirrors (None for a load the user does not have),
        built now from the step functions if not kept yet, and kept from then on; None when int64
        cannot hold one of them (the caller answers from the step functions)."""
        ua = self._user_arrays.get(user)
        if ua is None and user in self.user_load:
            ua = StepArrays.of(self.user_load[user])
            if ua is None:
                return None
            self._user_arrays[user] = ua
        up = self._user_periodic_arrays.get(user)
        if up is None and user in self.user_periodic:
            up = PeriodicStepArrays.of(self.user_periodic[user])
            if up is None:
                return None
            self._user_periodic_arrays[user] = up
        return ua, up

    def _apply_mirrors(self, period: int, user: str, pieces: list[Interval], sign: int) -> bool:
        """The edit `_apply_loads` made, on the arrays; False when they cannot follow it."""
        if period > 0:
            every = [(a + k * period, b + k * period, r) for k in range(self.max_periodicity // period)
                     for a, b, r in pieces]
            if not self._periodic_arrays.add_pieces(every, sign):
                return False
            mine = self._user_periodic_arrays.get(user)
            if mine is not None and (user not in self.user_periodic or not mine.add_pieces(every, sign)):
                # gone, or int64 might not hold it: built again from the step function if read
                del self._user_periodic_arrays[user]
            return True
        if not self._load_arrays.add_pieces(pieces, sign):
            return False
        ua = self._user_arrays.get(user)
        if ua is not None and (user not in self.user_load or not ua.add_pieces(pieces, sign)):
            del self._user_arrays[user]
        return True

    # -- queries ------------------------------------------------------------------------------
    def total_at(self, t: int) -> Res:
        """getTotalCommittedResources: non-periodic load at t plus periodic load at t mod T."""
        return radd(self.load.at(t), self.periodic_load.at(t))

    def user_at(self, user: str, t: int) -> Res:
        """getConsumptionForUser at t (non-periodic plus periodic)."""
        a = self.user_load.get(user)
        b = self.user_periodic.get(user)
        r = a.at(t) if a is not None else self.zero
        if b is not None:
            r = radd(r, b.at(t))
        return r

    def committed_over(self, s: int, e: int) -> StepFunction:
        """Total committed load over `[s, e)` as a step function."""
        if self.periodic_load.is_empty():
            return self.load.clip(s, e)
        return merge(self.load, self.periodic_load, s, e, radd)

    def committed_arrays(self, s: int, e: int) -> tuple[np.ndarray, np.ndarray] | None:
        """`committed_over(s, e)`'s breakpoints as arrays (times, (n, 2) values), from the mirrors;
        None when the plan does not keep them."""
        if not _in_int64(s, e) or not self._mirrors():
            return None
        if e <= s:
            return _NO_TIMES, _NO_VALUES
        seen = self._committed_seen
        if seen is not None and seen[0] == self._version and seen[1] <= s and e <= seen[2]:
            # the last availability summed the committed load over a range holding this one
            if seen[5]:
                return window_compact(seen[3], seen[4], s, e)
            return compact(*window(seen[3], seen[4], s, e), e)
        sources = [(self._load_arrays.read(s, e), 0)]
        if not self._periodic_arrays.is_empty():
            sources.append((self._periodic_arrays.read(s, e), 0))
        t, run = running(s, sources, 2)
        return compact(t, run, e, one_function(sources, 2))

    def user_over(self, user: str, s: int, e: int) -> StepFunction:
        """The user's consumption over `[s, e)`."""
        a = self.user_load.get(user)
        b = self.user_periodic.get(user)
        if a is None and b is None:
            return StepFunction(zero=self.zero)
        if b is None:
            assert a is not None
            return a.clip(s, e)
        if a is None:
            return b.unrolled(s, e)
        return merge(a, b, s, e, radd)

    def user_integral_bound(self, user: str, s: int, e: int) -> Res | None:
        """An upper bound of the integral of the user's consumption over any part of `[s - 2T, e]`
        (T = maxPeriodicity), per component; None when the plan cannot vouch that the consumption
        is non-negative (some reservation ever added had a negative value), so no bound holds.

        The non-periodic load counts whole; the periodic load counts one period's integral for
        every copy of the period that can meet the range.
        """
        if not self._nonnegative:
            return None
        own = self._user_integral.get(user, self.zero)
        periodic = self._user_periodic_integral.get(user, self.zero)
        copies = periods_meeting(s, e, self.max_periodicity)
        return tuple(m + p * copies for m, p in zip(own, periodic))

    def last_end_time(self) -> int:
        """End of the last non-zero piece of the non-periodic load, or -1 (contract §3.4, §12 row 9)."""
        return self.load.last_nonzero_end()

    def get(self, rid: ReservationId | None) -> ReservationAllocation | None:
        """getReservationById: the reservation with that id, None if the plan does not hold it."""
        return self.reservations.get(rid) if rid is not None else None

    def reservations_at(self, t: int) -> list[ReservationAllocation]:
        """The reservations active at t (§8.5 with the interval [t, t])."""
        return self.get_reservations(None, (t, t), None)

    def get_reservations(
        self, rid: ReservationId | None, interval: tuple[int, int] | None, user: str | None
    ) -> list[ReservationAllocation]:
        """getReservations(id, interval, user) of contract §8.5, sorted by id."""
        if rid is not None:
            r = self.reservations.get(rid)
            return [r] if r is not None else []
        s, e = interval if interval is not None else (0, LONG_MAX)
        out = []
        for r in self.reservations.values():
            if user and r.user != user:
                continue
            if matches_interval(r, s, e):
                out.append(r)
        out.sort(key=lambda r: r.id)
        return out

    # -- edits (§8.2) -------------------------------------------------------------------------
    def add_reservation(self, res: ReservationAllocation, is_recovering: bool = False) -> bool:
        """addReservation: user set, id new, policy validates, acceptance time = clock."""
        if res.user is None:
            raise PlanIllegalArgument(f"The specified Reservation with ID {res.id} is not mapped to any user")
        if res.id in self.reservations:
            raise PlanIllegalArgument(f"The specified Reservation with ID {res.id} already exists", "AlreadyExists")
        if not is_recovering:
            self.policy.validate(self, res)
            res.acceptance_time = self.now
        elif res.acceptance_time < 0:
            res.acceptance_time = self.now
        self.reservations[res.id] = res
        if self.touched is not None:
            self.touched.append(res)
        self._apply(res, +1)
        if not is_recovering:
            self._persist(res)
        return True

    def update_reservation(self, res: ReservationAllocation) -> bool:
        """updateReservation: validate with the old version in place, swap, roll back on failure."""
        cur = self.reservations.get(res.id)
        if cur is None:
            raise PlanIllegalArgument(
                f"The specified Reservation with ID {res.id} does not exist in the plan", "DoesNotExist"
            )
        self.policy.validate(self, res)
        self._remove(cur)
        try:
            self.add_reservation(res)
        except (PlanningException, PlanIllegalArgument):
            # rollback: the old version goes back (YARN re-adds it, so it gets a new acceptance time)
            cur.acceptance_time = self.now
            self.add_reservation(cur, is_recovering=True)
            self._persist(cur)
            return False
        return True

    def delete_reservation(self, rid: ReservationId) -> bool:
        """deleteReservation: remove the reservation and its load; DoesNotExist for an unknown id."""
        cur = self.reservations.get(rid)
        if cur is None:
            raise PlanIllegalArgument(
                f"The specified Reservation with ID {rid} does not exist in the plan", "DoesNotExist"
            )
        self._remove(cur)
        return True

    def _remove(self, res: ReservationAllocation) -> None:
        del self.reservations[res.id]
        if self.touched is not None:
            self.touched.append(res)
        self._apply(res, -1)
        if self.store is not None:
            self.store.delete_reservation(self.queue, res.id)

    def _persist(self, res: ReservationAllocation) -> None:
        if self.store is not None:
            self.store.put_reservation(self.queue, res.stored())

    def recover(self, stored: Iterable[StoredReservation]) -> None:
        """Rebuild the plan's reservations from a store, as YARN's RM recovery does: each is added
        with `is_recovering` (no policy check, its stored acceptance time, nothing written back)."""
        for r in stored:
            self.add_reservation(ReservationAllocation.from_stored(r), is_recovering=True)

    def archive_completed(self, tick: int, valid_window: int | None = None) -> list[ReservationId]:
        """archiveCompletedReservations: drop non-periodic reservations with end <= tick - window (§8.4)."""
        w = self.policy.valid_window() if valid_window is None else valid_window
        limit = tick - w
        gone = sorted(r.id for r in self.reservations.values() if r.period <= 0 and r.end <= limit)
        self.archive(gone)
        return gone

    def archive(self, gone: list[ReservationId]) -> None:
        """Drop these reservations, in this order, as archiving does (the caller chose them)."""
        for rid in gone:
            self._remove(self.reservations[rid])

    def set_capacity(self, capacity: Res) -> None:
        """setTotalCapacity: no check and no repair of over-commitment (the replanner's job)."""
        if len(capacity) != len(self.dims):
            raise ValueError(f"plan capacity {capacity!r} does not have the plan's {len(self.dims)} dimensions")
        self.capacity = capacity


#: from this many breakpoints in the plan's load the mirrors pay for their upkeep and their fixed costs:
#: below it an aligned agent converts the step functions to arrays on every request, which at a few
#: hundred breakpoints cost several times the mirrors' upkeep (benchmarks/README.md, issue 18)
MIRROR_MIN = 128

__all__ = [
    "InMemoryPlan",
    "ReservationAllocation",
    "fold_intervals",
    "java_rem",
    "matches_interval",
]
