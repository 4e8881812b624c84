"""The plan's availability (contract §8.3): YARN's InMemoryPlan.getAvailableResourceOverTime.

`PlanAvailability` is the part of InMemoryPlan that answers "what is free for this user over
`[s, e]`": capacity minus the committed load (non-periodic and periodic), the over-commit test,
the old version added back on update, the policy's instantaneous cap, the minimum over every
recurrence for a periodic request. It is computed by one of four equivalent passes (on the plan's
numpy mirrors, fused over the step functions, the same vectorised, or the reference merge of step
functions), and the last answer is kept for the queries inside its range.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import numpy as np

from apportion.reservation.availability_vector import fused_vectorised
from apportion.reservation.definition import ReservationId
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.periodic import PeriodicStepFunction
from apportion.reservation.resmath import LONG_MAX, ZERO, Calculator, Res, fits_in, nonnegative, radd, rsub
from apportion.reservation.steparrays import (
    LONG_MIN,
    MAX_VALUE,
    PeriodicStepArrays,
    StepArrays,
    arrays_of,
    compact,
    compact_free,
    free_of_one,
    one_function,
    running,
)
from apportion.reservation.stepfn import StepFunction, merge, merge_pieces, segments

if TYPE_CHECKING:
    from apportion.reservation.allocation import Interval, ReservationAllocation
    from apportion.reservation.view import PlanView, Policy


class PlanAvailability:
    """The availability queries of InMemoryPlan (mixed into it; the state is the plan's)."""

    capacity: Res
    zero: Res
    calc: Calculator
    policy: Policy
    max_periodicity: int
    load: StepFunction
    periodic_load: PeriodicStepFunction
    user_load: dict[str, StepFunction]
    user_periodic: dict[str, PeriodicStepFunction]
    reservations: dict[ReservationId, ReservationAllocation]
    _version: int
    _avail_cache: _Availability | None
    _committed_seen: tuple[int, int, int, np.ndarray, np.ndarray, bool] | None
    _nonnegative: bool
    _load_arrays: StepArrays
    _periodic_arrays: PeriodicStepArrays
    _user_arrays: dict[str, StepArrays]
    _user_periodic_arrays: dict[str, PeriodicStepArrays]

    def _mirrors(self) -> bool:  # pragma: no cover - InMemoryPlan's
        """Whether the plan keeps its loads as numpy mirrors (InMemoryPlan decides)."""
        raise NotImplementedError

    def _user_mirrors(  # pragma: no cover - InMemoryPlan's
        self, user: str
    ) -> tuple[StepArrays | None, PeriodicStepArrays | None] | None:
        """A user's mirrors, made when first read (InMemoryPlan's)."""
        raise NotImplementedError

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
        """`_available_uncached` on the mirrors: `fused_vectorised` on slices of the plan's arrays.
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
        limit = self.policy.instantaneous_limit(cast("PlanView", self))
        if max(map(abs, cap + (limit or ZERO))) > MAX_VALUE:
            return None
        if limit is not None and limit[0] >= cap[0] and self._nonnegative:
            # limit - used >= capacity - committed wherever the user's load is part of a total
            # of non-negative loads: the quota never wins the memory comparison below, so the
            # user's load is not read (the service's default, instantaneousMaxCapacity 1.0)
            limit = None
        end = e + 1
        sources = [(self._load_arrays.read(s, end), 0)]
        if not self._periodic_arrays.is_empty():
            sources.append((self._periodic_arrays.read(s, end), 0))
        if limit is not None:
            mine = self._user_mirrors(user or "")
            if mine is None:
                return None
            ua, up = mine
            if ua is not None:
                sources.append((ua.read(s, end), 2))
            if up is not None:
                sources.append((up.read(s, end), 2))
        width = 4 if limit is not None else 2
        distinct = one_function(sources, width)
        if distinct:
            # the service's case (one plain load, no cap that can bind): the sums, the free
            # resources and their compact form in one pass
            t, free, committed = free_of_one(s, sources[0][0], cap, end)
            n = len(committed)
            if int(free[:n].min()) < 0:
                self._over_committed(int(t[:n][(free[:n] < 0).any(axis=1)][0]), e)
            self._committed_seen = (self._version, s, end, t[:n], committed, True)
            return compact_free(t, free)
        t, run = running(s, sources, width)
        free = np.subtract((cap[0], cap[1]), run[:, 0:2])
        if int(free.min()) < 0:
            self._over_committed(int(t[(free < 0).any(axis=1)][0]), e)
        # the committed load at every time it changes on [s, e + 1): committed_arrays reads it
        self._committed_seen = (self._version, s, end, t, run[:, 0:2], distinct)
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
        if t == e and fits_in(self.load.at(e), self.capacity):
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
            z = self.zero
            back = StepFunction.from_intervals(
                ((a - k * period, b - k * period, r) for a, b, r in shifted.pieces(s + k * period, e + 1 + k * period)
                 if r != z),
                z,
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
        if len(cap) != 2:
            return self._available_fused_k(user, s, e)
        cm, cv = cap
        limit = policy.instantaneous_limit(cast("PlanView", self))
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
            fast = fused_vectorised(segs, cap, limit, end, self._over_committed)
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
            a: Res = (cm - c0, cv - c1)
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

    def _available_fused_k(self, user: str | None, s: int, e: int) -> StepFunction:
        """`_available_fused` for a plan of any number of dimensions: the same pointwise pass, on
        vectors (the two-dimensional pass above is this one written out for speed)."""
        end = e + 1
        cap = self.capacity
        k = len(cap)
        z = self.zero
        calc = self.calc
        limit = self.policy.instantaneous_limit(cast("PlanView", self))
        sources: list[tuple[StepFunction | PeriodicStepFunction, int]] = [(self.load, 0)]
        if not self.periodic_load.is_empty():
            sources.append((self.periodic_load, 0))
        if limit is not None:
            name = user or ""
            ul = self.user_load.get(name)
            up = self.user_periodic.get(name)
            if ul is not None:
                sources.append((ul, k))
            if up is not None:
                sources.append((up, k))
        # value changes of the committed total (columns 0..k) and of the user's consumption (k..2k)
        deltas: dict[int, list[int]] = {}
        for f, col in sources:
            keys, values = segments(f, s, end)
            prev_v = z
            for t, v in zip(keys, values):
                d = deltas.get(t)
                if d is None:
                    d = deltas[t] = [0] * (2 * k)
                for i in range(k):
                    d[col + i] += v[i] - prev_v[i]
                prev_v = v
        keys_out: list[int] = []
        values_out: list[Res] = []
        prev: Res = z
        run = [0] * (2 * k)
        dominant = calc.kind != "default"
        for t in sorted(deltas):
            for i, x in enumerate(deltas[t]):
                run[i] += x
            a = tuple(c - u for c, u in zip(cap, run[:k]))
            if not nonnegative(a):
                self._over_committed(t, e)
            if limit is not None:
                q = tuple(lim - u for lim, u in zip(limit, run[k:]))
                if dominant:
                    a = calc.rmin(a, q, cap)
                elif a[0] > q[0]:
                    a = q
            if a != prev:
                keys_out.append(t)
                values_out.append(a)
                prev = a
        if prev != z:
            keys_out.append(end)
            values_out.append(z)
        return StepFunction._bulk(keys_out, values_out, z)

    def _available_merged(self, user: str | None, old_id: ReservationId | None, s: int, e: int) -> StepFunction:
        cm, cv = self.capacity[0], self.capacity[1]
        committed: Iterable[Interval]
        if self.periodic_load.is_empty():
            committed = self.load.pieces(s, e + 1)
        else:
            committed = merge_pieces(self.load, self.periodic_load, s, e + 1, radd)
        net_pieces: list[Interval] = []
        if len(self.capacity) == 2:
            for a, b, r in committed:
                vm = cm - r[0]
                vv = cv - r[1]
                if vm < 0 or vv < 0:
                    self._over_committed(a, e)
                net_pieces.append((a, b, (vm, vv)))
        else:
            for a, b, r in committed:
                v = rsub(self.capacity, r)
                if not nonnegative(v):
                    self._over_committed(a, e)
                net_pieces.append((a, b, v))
        net = StepFunction.from_pieces(net_pieces, self.zero)
        old = self.reservations.get(old_id) if old_id is not None else None
        if old is not None:
            net.add_function(old.over_time(s, e + 1))
        return self.policy.available_resources(net, cast("PlanView", self), user, old_id, s, e)


#: below this many breakpoints the scalar pass is cheaper than numpy's fixed costs
_VECTOR_MIN = 64
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
