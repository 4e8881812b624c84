"""The plan: YARN's InMemoryPlan (contract §8).

It holds the accepted reservations, the committed load (non-periodic, and periodic kept modulo
maxPeriodicity), the per-user consumption, the capacity and the configuration. Every query and
every update works on step functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from apportion.reservation.definition import ReservationDefinition, ReservationId
from apportion.reservation.exceptions import PlanIllegalArgument, PlanningException
from apportion.reservation.steparrays import (
    LONG_MIN,
    MAX_VALUE,
    PeriodicStepArrays,
    StepArrays,
    arrays_of,
    compact,
    running,
    window,
)
from apportion.reservation.stepfn import (
    LONG_MAX,
    ZERO,
    Calculator,
    PeriodicStepFunction,
    Res,
    StepFunction,
    merge,
    merge_pieces,
    periods_meeting,
    piece_integral,
    radd,
    segments,
)
from apportion.reservation.store import StoredReservation

if TYPE_CHECKING:
    from apportion.reservation.store import PlanStore
    from apportion.reservation.view import Policy

Interval = tuple[int, int, Res]


def fold_intervals(intervals: Iterable[Interval], period: int) -> StepFunction:
    """Sum of intervals taken modulo period, on offsets `[0, period)` (a piece past the end wraps)."""
    pieces: list[Interval] = []
    for a, b, r in intervals:
        if b <= a or r == ZERO:
            continue
        length = b - a
        if length >= period:
            pieces.append((0, period, r))
            continue
        o = a % period
        if o + length <= period:
            pieces.append((o, o + length, r))
        else:
            # contract §7.1 item 6 / §12 row 1: keep the wrapped part instead of losing it
            pieces.append((o, period, r))
            pieces.append((0, o + length - period, r))
    return StepFunction.from_intervals(pieces)


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
            if self.period > 0:
                self.rle = fold_intervals(self.intervals, self.period)
            else:
                self.rle = StepFunction.from_intervals(self.intervals)

    def resources_at(self, t: int) -> Res:
        """Zero outside `[start, end)`; inside it, the allocation at t (t mod period if periodic)."""
        if t < self.start or t >= self.end:
            return ZERO
        if self.period > 0:
            return self.rle.at(t % self.period)
        return self.rle.at(t)

    def over_time(self, s: int, e: int) -> StepFunction:
        """The allocation over `[s, e)`; periodic reservations count every recurrence in the range."""
        if self.period > 0:
            p = PeriodicStepFunction(self.period)
            p.base = self.rle
            return p.unrolled(s, e)
        return self.rle.clip(s, e)

    def first_change_unrolled_at_or_before(self, t: int) -> int | None:
        if self.period <= 0:
            return self.rle.last_change_at_or_before(t)
        p = PeriodicStepFunction(self.period)
        p.base = self.rle
        return p.last_change_at_or_before(t)

    def contains_gangs(self) -> bool:
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


class InMemoryPlan:
    """YARN's InMemoryPlan for one reservable queue."""

    def __init__(
        self,
        queue: str,
        capacity: Res,
        *,
        step: int = 1000,
        calculator: Calculator | None = None,
        minimum_allocation: Res = (1024, 1),
        maximum_allocation: Res = (8192, 4),
        policy: Policy,
        max_periodicity: int = 86_400_000,
        now: int = 0,
        move_on_expiry: bool = True,
    ) -> None:
        if step <= 0:
            raise ValueError("plan step must be positive")
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
        self.load = StepFunction()
        self.periodic_load = PeriodicStepFunction(max_periodicity)
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
        # not fit int64 or fails half-way
        self._mirrored = False
        self._mirrors_off = False
        self._load_arrays = StepArrays()
        self._periodic_arrays = PeriodicStepArrays(max_periodicity)
        self._user_arrays: dict[str, StepArrays] = {}
        self._user_periodic_arrays: dict[str, PeriodicStepArrays] = {}
        # (version, s, e, times, committed sums) of the last mirrored availability
        self._committed_seen: tuple[int, int, int, np.ndarray, np.ndarray] | None = None
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
        if sign > 0 and any(r[0] < 0 or r[1] < 0 for _a, _b, r in pieces):
            self._nonnegative = False
        im, iv = piece_integral(pieces)
        if res.period > 0:
            # each of the max_periodicity // period copies added one folded period's integral
            k = self.max_periodicity // res.period
            im, iv = im * k, iv * k
        totals = self._user_periodic_integral if res.period > 0 else self._user_integral
        tm, tv = totals.get(user, ZERO)
        totals[user] = (tm + sign * im, tv + sign * iv)

    def _apply_loads(self, res: ReservationAllocation, user: str, pieces: list[Interval], sign: int) -> None:
        signed = pieces if sign > 0 else [(a, b, (-r[0], -r[1])) for a, b, r in pieces]
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
                per_user = self.user_periodic[user] = PeriodicStepFunction(self.max_periodicity)
            self.periodic_load.base.add_pieces(wrapped)
            per_user.base.add_pieces(wrapped)
            if per_user.is_empty():
                del self.user_periodic[user]
        else:
            ul = self.user_load.get(user)
            if ul is None:
                ul = self.user_load[user] = StepFunction()
            self.load.add_pieces(signed)
            ul.add_pieces(signed)
            if ul.is_empty():
                del self.user_load[user]

    def _apply_loads_one_by_one(
        self, res: ReservationAllocation, user: str, pieces: list[Interval], sign: int
    ) -> None:
        """What `_apply_loads` does, piece by piece (the reference; test_res_steparrays compares)."""
        if res.period > 0:
            per_user = self.user_periodic.setdefault(user, PeriodicStepFunction(self.max_periodicity))
            p = res.period
            for k in range(self.max_periodicity // p):
                for a, b, r in pieces:
                    rr = r if sign > 0 else (-r[0], -r[1])
                    self.periodic_load.add(a + k * p, b + k * p, rr)
                    per_user.add(a + k * p, b + k * p, rr)
            if per_user.is_empty():
                del self.user_periodic[user]
        else:
            ul = self.user_load.setdefault(user, StepFunction())
            for a, b, r in pieces:
                rr = r if sign > 0 else (-r[0], -r[1])
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
        users = {u: StepArrays.of(f) for u, f in self.user_load.items()}
        users_periodic = {u: PeriodicStepArrays.of(f) for u, f in self.user_periodic.items()}
        if load is None or periodic is None or None in users.values() or None in users_periodic.values():
            self._mirrors_off = True
            return False
        self._load_arrays = load
        self._periodic_arrays = periodic
        self._user_arrays = {u: a for u, a in users.items() if a is not None}
        self._user_periodic_arrays = {u: a for u, a in users_periodic.items() if a is not None}
        self._mirrored = True
        return True

    def _apply_mirrors(self, period: int, user: str, pieces: list[Interval], sign: int) -> bool:
        """The edit `_apply_loads` made, on the arrays; False when they cannot follow it."""
        if period > 0:
            every = [(a + k * period, b + k * period, r) for k in range(self.max_periodicity // period)
                     for a, b, r in pieces]
            mine = self._user_periodic_arrays.get(user)
            if mine is None:
                mine = self._user_periodic_arrays[user] = PeriodicStepArrays(self.max_periodicity)
            ok = self._periodic_arrays.add_pieces(every, sign) and mine.add_pieces(every, sign)
            if user not in self.user_periodic:
                del self._user_periodic_arrays[user]
            return ok
        ua = self._user_arrays.get(user)
        if ua is None:
            ua = self._user_arrays[user] = StepArrays()
        ok = self._load_arrays.add_pieces(pieces, sign) and ua.add_pieces(pieces, sign)
        if user not in self.user_load:
            del self._user_arrays[user]
        return ok

    # -- queries ------------------------------------------------------------------------------
    def total_at(self, t: int) -> Res:
        """getTotalCommittedResources: non-periodic load at t plus periodic load at t mod T."""
        return radd(self.load.at(t), self.periodic_load.at(t))

    def user_at(self, user: str, t: int) -> Res:
        """getConsumptionForUser at t (non-periodic plus periodic)."""
        a = self.user_load.get(user)
        b = self.user_periodic.get(user)
        r = a.at(t) if a is not None else ZERO
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
            return compact(*window(seen[3], seen[4], s, e), e)
        sources = [(self._load_arrays.read(s, e), 0)]
        if not self._periodic_arrays.is_empty():
            sources.append((self._periodic_arrays.read(s, e), 0))
        t, run = running(s, sources, 2)
        return compact(t, run, e)

    def user_over(self, user: str, s: int, e: int) -> StepFunction:
        """The user's consumption over `[s, e)`."""
        a = self.user_load.get(user)
        b = self.user_periodic.get(user)
        if a is None and b is None:
            return StepFunction()
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
        m, v = self._user_integral.get(user, ZERO)
        pm, pv = self._user_periodic_integral.get(user, ZERO)
        copies = periods_meeting(s, e, self.max_periodicity)
        return (m + pm * copies, v + pv * copies)

    def last_end_time(self) -> int:
        """End of the last non-zero piece of the non-periodic load, or -1 (contract §3.4, §12 row 9)."""
        return self.load.last_nonzero_end()

    def get(self, rid: ReservationId | None) -> ReservationAllocation | None:
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

    # -- availability (§8.3) ------------------------------------------------------------------
    def available(
        self, user: str | None, old_id: ReservationId | None, s: int, e: int, period: int = 0, *, shared: bool = False
    ) -> StepFunction:
        """Availability for user over the closed range `[s, e]` (returned on `[s, e + 1)`).

        Raises PlanningException when the plan is already over-committed in the range, or when the
        period does not divide maxPeriodicity or is shorter than the range. With `shared` the answer
        may be the object the plan keeps (below), which can extend past `[s, e]`: the caller must
        only read it, and only inside `[s, e + 1)`.

        The answer is a pointwise function of the plan's state on `[s, e]` (as long as the policy's
        `available_resources` is one of the built-in ones), so the last answer is kept and a query
        inside its range, with the same state, is served by clipping it: an agent asks once per
        stage and the policy once more for the whole window. A range that raises is never kept,
        and no sub-range of a range that did not raise can raise.
        """
        c = self._availability(user, old_id, s, e, period)
        if c is None:
            return self._available_uncached(user, old_id, s, e, period)
        f = c.function()
        if shared:
            # the caller only reads it, inside [s, e + 1): the kept answer itself will do
            return f
        if c.s == s and c.e == e:
            return f.copy()
        return f.clip(s, e + 1)

    def available_arrays(
        self, user: str | None, old_id: ReservationId | None, s: int, e: int, period: int = 0, *,
        convert: bool = True,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """`available(..., shared=True)`'s canonical breakpoints as arrays (times, (n, 2) values),
        raising as it raises; the caller only reads them, and only inside `[s, e + 1)`. None when
        int64 cannot hold them, or, without `convert`, when the plan has the answer as a step
        function only (a small plan: the caller's step-function path is the cheaper one there)."""
        c = self._availability(user, old_id, s, e, period)
        if c is None:
            return arrays_of(self._available_uncached(user, old_id, s, e, period)) if convert else None
        if c.arr is None and not convert:
            return None
        return c.arrays()

    def warm_availability(self, user: str | None, old_id: ReservationId | None, s: int, e: int, period: int) -> None:
        """Compute and keep the availability over `[s, e]`, in whichever form is cheaper to get
        (raising as `available` raises), so that later queries inside the range are served."""
        if self._availability(user, old_id, s, e, period) is None:
            self._available_uncached(user, old_id, s, e, period)

    def _availability(
        self, user: str | None, old_id: ReservationId | None, s: int, e: int, period: int
    ) -> _Availability | None:
        """The kept answer for a range covering `[s, e]` with the plan as it is, computed (and kept)
        on a miss; None when no answer is kept for the query (a policy of its own, an empty range)."""
        if s > e or not self.policy.availability_is_pointwise():
            return None
        old = self.reservations.get(old_id) if old_id is not None else None
        key: tuple[object, ...] = (
            self._version, user, old, period, self.capacity, self.max_periodicity, self.policy, self.calc,
        )
        c = self._avail_cache
        if c is not None and c.s <= s <= e <= c.e and _same_key(c.key, key):
            return c
        arrays = self._available_mirrored(user, old, s, e, period)
        if arrays is not None:
            c = _Availability(key, s, e, None, arrays)
        else:
            c = _Availability(key, s, e, self._available_uncached(user, old_id, s, e, period), None)
        self._avail_cache = c
        return c

    def _available_mirrored(
        self, user: str | None, old: ReservationAllocation | None, s: int, e: int, period: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """`_available_uncached` on the mirrors: `_fused_vectorised` on slices of the plan's arrays.
        None where only the step functions apply: an old version, the dominant calculator, a
        period with several copies in maxPeriodicity, values int64 might not hold."""
        if old is not None or self.calc.kind != "default" or not _in_int64(s, e + 1) or not self._mirrors():
            return None
        if period > 0:
            T = self.max_periodicity
            if T % period == 0 and T // period > 1:
                return None
            self._check_period(s, e, period)
        cap = self.capacity
        limit = self.policy.instantaneous_limit(self)
        if max(map(abs, cap + (limit or ZERO))) > MAX_VALUE:
            return None
        end = e + 1
        sources = [(self._load_arrays.read(s, end), 0)]
        if not self._periodic_arrays.is_empty():
            sources.append((self._periodic_arrays.read(s, end), 0))
        if limit is not None:
            name = user or ""
            ua = self._user_arrays.get(name)
            up = self._user_periodic_arrays.get(name)
            if ua is not None:
                sources.append((ua.read(s, end), 2))
            if up is not None:
                sources.append((up.read(s, end), 2))
        t, run = running(s, sources, 4 if limit is not None else 2)
        free = np.subtract((cap[0], cap[1]), run[:, 0:2])
        if int(free.min()) < 0:
            self._over_committed(int(t[(free < 0).any(axis=1)][0]), e)
        # the committed load at every time it changes on [s, e + 1): committed_arrays reads it
        self._committed_seen = (self._version, s, end, t, run[:, 0:2])
        if limit is not None:
            # the quota where its memory is below the free memory (a tie keeps the free value);
            # usually nowhere, and then there is nothing to copy
            quota = np.subtract((limit[0], limit[1]), run[:, 2:4])
            lower = quota[:, 0] < free[:, 0]
            if lower.any():
                free[lower] = quota[lower]
        return compact(t, free, end)

    def _over_committed(self, t: int, e: int) -> None:
        """The committed load exceeds the capacity from t on, inside an availability query over
        `[s, e]`: raise, as trunk's subtractTestNonNegative merges do, unless t is the query's end
        and the non-periodic load alone fits there. Trunk subtracts the periodic load in a second
        merge whose left operand is already undefined at the end, so that merge never tests the
        end instant; the first merge, capacity minus the non-periodic load, does."""
        if t == e:
            m, v = self.load.at(e)
            if m <= self.capacity[0] and v <= self.capacity[1]:
                return
        raise PlanningException(
            "RLESparseResourceAllocation: merge failed as the resulting "
            "RLESparseResourceAllocation would be negative"
        )

    def _check_period(self, s: int, e: int, period: int) -> None:
        T = self.max_periodicity
        if T % period != 0:
            raise PlanningException(
                f"The reservation periodicity ({period}) must be an exact divider of the system maxPeriod ({T})"
            )
        if period < e - s:
            raise PlanningException(
                f"Invalid input: (end - start) = ({e} - {s}) = {e - s} > period = {period}"
            )

    def _available_uncached(
        self, user: str | None, old_id: ReservationId | None, s: int, e: int, period: int
    ) -> StepFunction:
        if period <= 0:
            return self._available_once(user, old_id, s, e)
        T = self.max_periodicity
        self._check_period(s, e, period)
        acc = self._available_once(user, old_id, s, e)
        cap = self.capacity
        calc = self.calc

        def cmin(a: Res, b: Res) -> Res:
            return calc.rmin(a, b, cap)

        for k in range(1, T // period):
            shifted = self._available_once(user, old_id, s + k * period, e + k * period)
            back = StepFunction.from_intervals(
                (a - k * period, b - k * period, r) for a, b, r in shifted.pieces(s + k * period, e + 1 + k * period)
                if r != ZERO
            )
            acc = merge(acc, back, s, e + 1, cmin)
        return acc

    def _available_once(self, user: str | None, old_id: ReservationId | None, s: int, e: int) -> StepFunction:
        old = self.reservations.get(old_id) if old_id is not None else None
        if old is None and self.policy.availability_is_pointwise():
            return self._available_fused(user, s, e)
        return self._available_merged(user, old_id, s, e)

    def _available_fused(self, user: str | None, s: int, e: int) -> StepFunction:
        """`_available_merged` without an old version, in one pass over `[s, e + 1)`.

        Every step of the merged path is pointwise (capacity − committed, the over-commit check,
        the policy's min with limit − used), so evaluating it on the union of the operands'
        breakpoints and keeping the canonical form gives the same function, without building the
        intermediate step functions.
        """
        end = e + 1
        policy = self.policy
        cap = self.capacity
        cm, cv = cap
        limit = policy.instantaneous_limit(self)
        # value changes of the committed total (c) and of the user's consumption (u), by time
        deltas: dict[int, list[int]] = {}
        sources: list[tuple[StepFunction | PeriodicStepFunction, int]] = [(self.load, 0)]
        if not self.periodic_load.is_empty():
            sources.append((self.periodic_load, 0))
        if limit is not None:
            name = user or ""
            ul = self.user_load.get(name)
            up = self.user_periodic.get(name)
            if ul is not None:
                sources.append((ul, 2))
            if up is not None:
                sources.append((up, 2))
        segs = [(segments(f, s, end), col) for f, col in sources]
        if self.calc.kind == "default" and sum(len(k) for (k, _v), _c in segs) >= _VECTOR_MIN:
            fast = _fused_vectorised(segs, cap, limit, end, self._over_committed)
            if fast is not None:
                return fast
        for (keys, values), col in segs:
            pm = pv = 0
            for t, (m, v) in zip(keys, values):
                d = deltas.get(t)
                if d is None:
                    d = deltas[t] = [0, 0, 0, 0]
                d[col] += m - pm
                d[col + 1] += v - pv
                pm, pv = m, v
        keys_out: list[int] = []
        values_out: list[Res] = []
        prev: Res = ZERO
        c0 = c1 = u0 = u1 = 0
        dominant = self.calc.kind != "default"
        calc = self.calc
        for t in sorted(deltas):
            d = deltas[t]
            c0 += d[0]
            c1 += d[1]
            u0 += d[2]
            u1 += d[3]
            a = (cm - c0, cv - c1)
            if a[0] < 0 or a[1] < 0:
                self._over_committed(t, e)
            if limit is not None:
                q = (limit[0] - u0, limit[1] - u1)
                if dominant:
                    a = calc.rmin(a, q, cap)
                elif a[0] > q[0]:
                    a = q
            if a != prev:
                keys_out.append(t)
                values_out.append(a)
                prev = a
        if prev != ZERO:
            keys_out.append(end)
            values_out.append(ZERO)
        return StepFunction._bulk(keys_out, values_out)

    def _available_merged(self, user: str | None, old_id: ReservationId | None, s: int, e: int) -> StepFunction:
        cm, cv = self.capacity
        committed: Iterable[Interval]
        if self.periodic_load.is_empty():
            committed = self.load.pieces(s, e + 1)
        else:
            committed = merge_pieces(self.load, self.periodic_load, s, e + 1, radd)
        net_pieces = []
        for a, b, r in committed:
            vm = cm - r[0]
            vv = cv - r[1]
            if vm < 0 or vv < 0:
                self._over_committed(a, e)
            net_pieces.append((a, b, (vm, vv)))
        net = StepFunction.from_pieces(net_pieces)
        old = self.reservations.get(old_id) if old_id is not None else None
        if old is not None:
            net.add_function(old.over_time(s, e + 1))
        return self.policy.available_resources(net, self, user, old_id, s, e)

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
        cur = self.reservations.get(rid)
        if cur is None:
            raise PlanIllegalArgument(
                f"The specified Reservation with ID {rid} does not exist in the plan", "DoesNotExist"
            )
        self._remove(cur)
        return True

    def _remove(self, res: ReservationAllocation) -> None:
        del self.reservations[res.id]
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
        for rid in gone:
            self._remove(self.reservations[rid])
        return gone

    def set_capacity(self, capacity: Res) -> None:
        self.capacity = capacity


#: below this many breakpoints the scalar pass is cheaper than numpy's fixed costs
_VECTOR_MIN = 64
#: from this many breakpoints in the plan's load the mirrors pay for their upkeep and their fixed costs
MIRROR_MIN = 1024
#: values up to this size cannot overflow int64 when a few thousand of them are summed
_VECTOR_MAX_VALUE = 1 << 48


def _fused_vectorised(
    segs: list[tuple[tuple[list[int], list[Res]], int]], cap: Res, limit: Res | None, end: int,
    over_committed: Callable[[int, int], None],
) -> StepFunction | None:
    """`_available_fused` for the default calculator on numpy arrays: the same deltas summed in
    time order, the same over-commit check and memory-ordered min, the same canonical form.
    None (use the scalar pass) when a value is too large for exact int64 sums."""
    times = []
    deltas = []
    for (keys, values), col in segs:
        v = np.array(values, dtype=np.int64).reshape(-1, 2)
        if v.size and int(np.abs(v).max()) > _VECTOR_MAX_VALUE:
            return None
        d = np.zeros((len(keys), 4), dtype=np.int64)
        d[:, col:col + 2] = np.diff(v, axis=0, prepend=np.zeros((1, 2), dtype=np.int64))
        times.append(np.array(keys, dtype=np.int64))
        deltas.append(d)
    t = np.concatenate(times)
    order = np.argsort(t, kind="stable")
    t = t[order]
    run = np.cumsum(np.concatenate(deltas)[order], axis=0)
    # the running sums after the last delta at each time
    last = np.ones(len(t), dtype=bool)
    last[:-1] = t[1:] != t[:-1]
    t = t[last]
    run = run[last]
    a = np.array(cap, dtype=np.int64) - run[:, 0:2]
    if bool((a < 0).any()):
        over_committed(int(t[(a < 0).any(axis=1)][0]), end - 1)
    if limit is not None:
        q = np.array(limit, dtype=np.int64) - run[:, 2:4]
        a = np.where((a[:, 0] > q[:, 0])[:, None], q, a)
    change = np.ones(len(t), dtype=bool)
    change[1:] = (a[1:] != a[:-1]).any(axis=1)
    change[0] = bool((a[0] != 0).any())
    keys_out: list[int] = t[change].tolist()
    kept = a[change]
    values_out: list[Res] = list(zip(kept[:, 0].tolist(), kept[:, 1].tolist()))
    if values_out and values_out[-1] != ZERO:
        keys_out.append(end)
        values_out.append(ZERO)
    return StepFunction._bulk(keys_out, values_out)


_NO_TIMES = np.empty(0, dtype=np.int64)
_NO_VALUES = np.empty((0, 2), dtype=np.int64)


def _in_int64(s: int, e: int) -> bool:
    return s >= LONG_MIN and e <= LONG_MAX


class _Availability:
    """The plan's kept availability answer: its key and range, as a step function, as arrays or
    both (each form made from the other on first use)."""

    __slots__ = ("key", "s", "e", "fn", "arr")

    def __init__(
        self, key: tuple[object, ...], s: int, e: int, fn: StepFunction | None,
        arr: tuple[np.ndarray, np.ndarray] | None,
    ) -> None:
        self.key = key
        self.s = s
        self.e = e
        self.fn = fn
        self.arr = arr

    def function(self) -> StepFunction:
        if self.fn is None:
            assert self.arr is not None
            t, v = self.arr
            self.fn = StepFunction._bulk(t.tolist(), list(zip(v[:, 0].tolist(), v[:, 1].tolist())))
        return self.fn

    def arrays(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.arr is None:
            assert self.fn is not None
            self.arr = arrays_of(self.fn)
        return self.arr


def _same_key(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Equal keys, objects (old version, policy, calculator) compared by identity."""
    return len(a) == len(b) and all(x is y or (type(x) in (int, str, tuple) and x == y) for x, y in zip(a, b))


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


__all__ = [
    "InMemoryPlan",
    "ReservationAllocation",
    "fold_intervals",
    "matches_interval",
    "merge_pieces",
]
