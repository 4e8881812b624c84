"""Sharing policies (contract §9): None, NoOverCommit and CapacityOverTime.

A policy does two things: it lowers the availability an agent sees (`available_resources`, only
CapacityOverTime does, with its instantaneous per-user cap) and it validates a reservation the
plan is about to add (`validate`). All of it is computed on step functions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from apportion.reservation.definition import ReservationId
from apportion.reservation.exceptions import (
    MismatchedUserException,
    PlanningException,
    PlanningQuotaException,
    ResourceOverCommitException,
    wrap_quota,
)
from apportion.reservation.periodic import PeriodicStepFunction, periods_meeting, piece_integral
from apportion.reservation.resmath import LONG_MAX, Res, f32, f32_str, is_zero, radd, rsub
from apportion.reservation.steparrays import arrays_of, fits_under
from apportion.reservation.stepfn import StepFunction, merge, merge_pieces

if TYPE_CHECKING:
    from apportion.reservation.plan import ReservationAllocation
    from apportion.reservation.view import PlanView



def yarn_fraction(fraction: float) -> float:
    """A fraction as YARN holds it: a float percentage divided by 100 in single precision (§9)."""
    return f32(f32(100.0 * fraction) / f32(100.0))


def scaled_limit(cap: Res, phi: float) -> Res:
    """`floor(capacity_component * phi)` with the product in double precision (Resources.multiply)."""
    if len(cap) == 2:
        return (int(cap[0] * phi), int(cap[1] * phi))
    return tuple(int(c * phi) for c in cap)


class SharingPolicy(ABC):
    """YARN's SharingPolicy."""

    name = "None"

    @abstractmethod
    def validate(self, plan: PlanView, res: ReservationAllocation) -> None:
        """Raise a PlanningException when the plan must not accept res."""

    def available_resources(
        self, net: StepFunction, plan: PlanView, user: str | None, old_id: ReservationId | None, s: int, e: int
    ) -> StepFunction:
        """Lower the plan availability for user over the closed range `[s, e]` (default: unchanged)."""
        return net

    def instantaneous_limit(self, plan: PlanView) -> Res | None:
        """What `available_resources` caps a user at, when it is exactly `min(net, limit − used)`
        pointwise (the plan then fuses it into its own pass); None when it leaves net unchanged."""
        return None

    def availability_is_pointwise(self) -> bool:
        """Whether `available_resources` is the identity or CapacityOverTime's pointwise min, so
        that the plan may fuse it into its own pass and keep its answers (a subclass with an
        availability of its own is asked every time)."""
        f = type(self).available_resources
        return f is SharingPolicy.available_resources or f is CapacityOverTimePolicy.available_resources

    @abstractmethod
    def valid_window(self) -> int:
        """How long after their end reservations are kept (archiving, §8.4)."""


class NoPolicy(SharingPolicy):
    """Accept everything; window 0 (§9.1)."""

    name = "None"

    def validate(self, plan: PlanView, res: ReservationAllocation) -> None:
        """Accept everything."""
        return None

    def valid_window(self) -> int:
        """0: nothing is kept after its end."""
        return 0


def _check_user(plan: PlanView, res: ReservationAllocation) -> None:
    old = plan.get(res.id)
    if old is not None and old.user != res.user:
        raise MismatchedUserException(
            f"Updating an existing reservation with mismatched user:{old.user} != {res.user}"
        )


def ask_check_range(res: ReservationAllocation) -> int:
    """Where trunk's admission test of res against the availability begins.

    The ask is `getResourcesOverTime(start, end)`: its breakpoints from the last one at or before
    start (clamped to start), else from its first one. Zero pieces are never stored, so a
    reservation placed late in its window is tested only from its first allocated time; before
    that the availability is not compared with anything (it can be negative there, when a user's
    consumption already exceeds the instantaneous quota, without a refusal).
    """
    if res.period <= 0:
        first = res.rle.first_change()
        if first is None:
            return res.end
        return max(first, res.start)
    base = res.rle
    if base.is_empty():
        return res.end
    p = res.period
    rel = res.start % p if res.start >= 0 else 0
    if base.last_change_at_or_before(rel) is not None:
        return res.start
    first = base.first_change()
    assert first is not None
    return res.start - rel + first


class NoOverCommitPolicy(SharingPolicy):
    """The reservation must fit, component-wise and at every time, in the availability (§9.2)."""

    name = "NoOverCommit"

    def validate(self, plan: PlanView, res: ReservationAllocation) -> None:
        """The same user as the old version, and the reservation within the availability on its tested range."""
        _check_user(plan, res)
        avail_arrays = plan.available_arrays(res.user, res.id, res.start, res.end, res.period, convert=False)
        # trunk's merge of the availability with the ask tests only where both are defined: from
        # the ask's first breakpoint and before the availability's undefined end marker
        lo, hi = ask_check_range(res), res.end
        ask_arrays = None
        if avail_arrays is not None:
            # a plain reservation is read inside [start, end + 1) only: its own function will do
            ask_arrays = arrays_of(res.rle if res.period <= 0 else res.over_time(res.start, res.end + 1))
        if avail_arrays is not None and ask_arrays is not None:
            # the same pointwise check on arrays (the walk below is the reference)
            if not fits_under(ask_arrays, avail_arrays, lo, hi):
                raise self._overcommit(res)
            return
        ask = res.over_time(res.start, res.end + 1)
        avail = plan.available(res.user, res.id, res.start, res.end, res.period, shared=True)
        if len(avail.zero) == 2:
            for _a, _b, r in merge_pieces(avail, ask, lo, hi, rsub):
                if r[0] < 0 or r[1] < 0:
                    raise self._overcommit(res)
        else:
            for _a, _b, r in merge_pieces(avail, ask, lo, hi, rsub):
                if min(r) < 0:
                    raise self._overcommit(res)

    @staticmethod
    def _overcommit(res: ReservationAllocation) -> ResourceOverCommitException:
        return ResourceOverCommitException(
            f"Resources at time {res.start} would be overcommitted by accepting reservation: {res.id}"
        )

    def valid_window(self) -> int:
        """0: nothing is kept after its end."""
        return 0


class CapacityOverTimePolicy(NoOverCommitPolicy):
    """YARN's default policy: per-user instantaneous and sliding-window average limits (§9.3).

    `instantaneous` and `average` are fractions of the plan capacity (1.0 = 100 %), `window` is in ms.
    """

    name = "CapacityOverTime"

    def __init__(self, instantaneous: float = 1.0, average: float = 1.0, window: int = 86_400_000) -> None:
        if window <= 0:
            raise ValueError("the CapacityOverTime window must be positive")
        self.max_inst = yarn_fraction(instantaneous)
        self.max_avg = yarn_fraction(average)
        self.window = window

    def valid_window(self) -> int:
        """The averaging window: reservations are kept that long after their end."""
        return self.window

    def instantaneous_limit(self, plan: PlanView) -> Res | None:
        """The per-user instantaneous cap, `floor(capacity × φ_inst)` per component."""
        return scaled_limit(plan.capacity, self.max_inst)

    def available_resources(
        self, net: StepFunction, plan: PlanView, user: str | None, old_id: ReservationId | None, s: int, e: int
    ) -> StepFunction:
        """min(net, instantaneous cap − the user's consumption, old version added back), pointwise."""
        cap = plan.capacity
        limit = scaled_limit(cap, self.max_inst)
        used = plan.user_over(user or "", s, e + 1)
        old = plan.get(old_id) if old_id is not None else None
        if old is not None:
            used = merge(used, old.over_time(s, e + 1), s, e + 1, rsub)
        # the quota is limit − used on [s, e]; it is folded into the merge instead of being built
        lm, lv = limit[0], limit[1]
        calc = plan.calc
        if len(limit) != 2:
            def cmin(a: Res, u: Res) -> Res:
                q = rsub(limit, u)
                if calc.kind == "default":
                    return a if a[0] <= q[0] else q
                return calc.rmin(a, q, cap)
        elif calc.kind == "default":
            def cmin(a: Res, u: Res) -> Res:
                q = (lm - u[0], lv - u[1])
                return a if a[0] <= q[0] else q
        else:
            def cmin(a: Res, u: Res) -> Res:
                return calc.rmin(a, (lm - u[0], lv - u[1]), cap)

        return merge(net, used, s, e + 1, cmin)

    def validate(self, plan: PlanView, res: ReservationAllocation) -> None:
        """NoOverCommit's check with the user cap (any failure as PlanningQuota), then the integral check."""
        try:
            super().validate(plan, res)
        except PlanningQuotaException as p:
            raise wrap_quota(p) from None
        except PlanningException as p:
            raise wrap_quota(p) from None
        if not self._average_ok(plan, res):
            raise PlanningQuotaException(
                f"Integral (avg over time) quota capacity {f32_str(self.max_avg)} over a window of "
                f"{self.window // 1000} seconds,  would be exceeded by accepting reservation: {res.id}"
            )

    # -- the integral check -------------------------------------------------------------------
    def _average_ok(self, plan: PlanView, res: ReservationAllocation) -> bool:
        """Trunk's integral check; `_average_walk` is the check itself, the bound in front only
        answers the cases where no window's average can reach the limit at all."""
        W = self.window
        cs = res.start - W
        ce = res.end + W
        old = plan.get(res.id)
        if _integral_bound_within(plan, res, old, cs, ce, W, scaled_limit(plan.capacity, self.max_avg)):
            return True
        return self._average_walk(plan, res)

    def _average_walk(self, plan: PlanView, res: ReservationAllocation) -> bool:
        W = self.window
        cs = res.start - W
        ce = res.end + W
        user = res.user or ""
        old = plan.get(res.id)

        has_np = user in plan.user_load
        has_p = user in plan.user_periodic
        consumption: list[tuple[int, Res | None]]
        if has_np or has_p:
            if (has_np and has_p) or old is not None:
                # a merge over [cs, ce]: clamped at cs, closed by an undefined value at ce
                f = plan.user_over(user, cs, ce)
                if old is not None:
                    f = merge(f, old.over_time(cs, ce), cs, ce, _add)
                consumption = _clamped(f, cs, ce)
            else:
                fn = plan.user_load[user] if has_np else None
                if fn is not None:
                    consumption = _overlapping(fn, fn.last_change_at_or_before(cs), cs, ce)
                else:
                    consumption = _periodic_overlapping(plan.user_periodic[user], cs, ce)
        else:
            consumption = []

        if res.period > 0:
            pf = PeriodicStepFunction(res.period, res.rle.zero)
            pf.base = res.rle
            mine = _periodic_overlapping(pf, cs, ce)
        else:
            mine = _overlapping(res.rle, res.rle.last_change_at_or_before(cs), cs, ce)

        f_map = _close_open_end(_merge_maps(consumption, mine), ce)
        if not f_map:
            return True
        limit = scaled_limit(plan.capacity, self.max_avg)
        return _average_within(f_map, W, cs, ce, limit)


def _integral_bound_within(
    plan: PlanView, res: ReservationAllocation, old: ReservationAllocation | None, cs: int, ce: int, W: int,
    limit: Res,
) -> bool:
    """Whether `_average_walk` must answer True because everything it sums is too small to matter.

    With non-negative values the walk's running integral A never decreases, so every A(t) - A(t - W)
    it compares is at most A at its last grid point inside [cs, ce], which is Math.round(I / W) for
    I the integral of the merged map up to there. That map is the user's consumption (plus the old
    version, on an update) and the reservation, each exact on its part of [cs - 2T, ce] and
    undefined (zero) elsewhere, so I is at most the bound summed here; and I <= W * limit gives
    round(I / W) <= limit (rounding half up: floor((2I + W) / 2W) <= floor(limit + 1/2)).
    """
    bound = plan.user_integral_bound(res.user or "", cs, ce)
    if bound is None:
        return False
    total = list(bound)
    for r in (res, old):
        if r is None:
            continue
        pieces = r.rle.nonzero_pieces()
        if any(v < 0 for _a, _b, x in pieces for v in x):
            return False
        integral = piece_integral(pieces, len(total))
        k = periods_meeting(cs, ce, r.period) if r.period > 0 else 1
        for i, x in enumerate(integral):
            total[i] += x * k
    return all(m <= W * lim for m, lim in zip(total, limit))


def _average_within(f_map: list[tuple[int, Res | None]], W: int, cs: int, ce: int, limit: Res) -> bool:
    """Trunk's integral check on the merged map: A(t) - A(t - W) <= limit at every time of [cs, ce].

    The grid G holds the change points plus k + i*W inside every segment followed by a defined
    value; A is the running integral on G divided by W and rounded half up (Math.round), stepping
    up at every g and back down at g + W. Both event lists are sorted, so one merge walk visits
    every event of [cs, ce] (and cs itself) once.
    """
    if len(limit) != 2:
        return _average_within_k(f_map, W, cs, ce, limit)
    grid: dict[int, Res | None] = {}
    for (k, v), (k2, v2) in zip(f_map, f_map[1:]):
        if v2 is None or k2 - k < W:
            continue
        for i in range(1, (k2 - k) // W + 1):
            grid[k + i * W] = v
    for k, v in f_map:
        grid[k] = v
    gs = sorted(grid)
    am: list[int] = []
    av: list[int] = []
    prev_t = f_map[0][0]
    pm = pv = 0
    tm = tv = 0
    w2 = 2 * W
    for g in gs:
        tm += pm * (g - prev_t)
        tv += pv * (g - prev_t)
        am.append((2 * tm + W) // w2)
        av.append((2 * tv + W) // w2)
        v = grid[g]
        if v is None:
            pm = pv = 0
        else:
            pm, pv = v
        prev_t = g
    lm, lv = limit
    n = len(gs)
    iu = idn = 0
    cum = cuv = cdm = cdv = 0
    t = cs
    while True:
        while iu < n and gs[iu] <= t:
            cum, cuv = am[iu], av[iu]
            iu += 1
        while idn < n and gs[idn] + W <= t:
            cdm, cdv = am[idn], av[idn]
            idn += 1
        if cum - cdm > lm or cuv - cdv > lv:
            return False
        # the next event after t
        nu = gs[iu] if iu < n else None
        nd = gs[idn] + W if idn < n else None
        if nu is None:
            if nd is None:
                return True
            t = nd
        elif nd is None or nu < nd:
            t = nu
        else:
            t = nd
        if t > ce:
            return True


def _average_within_k(f_map: list[tuple[int, Res | None]], W: int, cs: int, ce: int, limit: Res) -> bool:
    """`_average_within` for vectors of any length (the two-component walk above, per component)."""
    k = len(limit)
    grid: dict[int, Res | None] = {}
    for (t, v), (t2, v2) in zip(f_map, f_map[1:]):
        if v2 is None or t2 - t < W:
            continue
        for i in range(1, (t2 - t) // W + 1):
            grid[t + i * W] = v
    for t, v in f_map:
        grid[t] = v
    gs = sorted(grid)
    avg: list[tuple[int, ...]] = []
    prev_t = f_map[0][0]
    cur: Res = (0,) * k
    total = [0] * k
    w2 = 2 * W
    for g in gs:
        for i in range(k):
            total[i] += cur[i] * (g - prev_t)
        avg.append(tuple((2 * x + W) // w2 for x in total))
        v = grid[g]
        cur = (0,) * k if v is None else v
        prev_t = g
    n = len(gs)
    iu = idn = 0
    up: tuple[int, ...] = (0,) * k
    down: tuple[int, ...] = (0,) * k
    t = cs
    while True:
        while iu < n and gs[iu] <= t:
            up = avg[iu]
            iu += 1
        while idn < n and gs[idn] + W <= t:
            down = avg[idn]
            idn += 1
        if any(u - d > lim for u, d, lim in zip(up, down, limit)):
            return False
        nu = gs[iu] if iu < n else None
        nd = gs[idn] + W if idn < n else None
        if nu is None:
            if nd is None:
                return True
            t = nd
        elif nd is None or nu < nd:
            t = nu
        else:
            t = nd
        if t > ce:
            return True


def _close_open_end(f_map: list[tuple[int, Res | None]], ce: int) -> list[tuple[int, Res | None]]:
    """End a load that is still non-zero at the check's end with a defined zero just after it.

    A periodic unroll (or a reservation ending at Long.MAX) leaves its last value running up to the
    Long.MAX end marker. Trunk then multiplies that value by about 2^63 in 64-bit arithmetic, so its
    answer there is decided by the overflow (docs/semantics.md, YARN rows); with exact integers the
    piece would add nothing inside `[cs, ce]`, and a reservation that holds its whole period (one
    piece after unrolling) would escape the average check entirely. Closing the piece at `ce + 1`
    makes the grid cover it like any other piece; what lies after ce never enters the check.
    """
    if not f_map:
        return f_map
    tail = f_map[-1:] if f_map[-1][1] is None else []
    body = f_map[: len(f_map) - len(tail)]
    if not body:
        return f_map
    k, v = body[-1]
    if v is None or is_zero(v) or k > ce or (tail and tail[0][0] <= ce + 1):
        return f_map
    return [*body, (ce + 1, (0,) * len(v)), *tail]


_add = radd


def _clamped(f: StepFunction, cs: int, ce: int) -> list[tuple[int, Res | None]]:
    """YARN's merge over [cs, ce]: first entry clamped at cs, an undefined entry at ce."""
    out: list[tuple[int, Res | None]] = []
    for a, _b, r in f.pieces(cs, ce):
        if not out or out[-1][1] != r:
            out.append((a, r))
    out.append((ce, None))
    return out


def _overlapping(f: StepFunction, first: int | None, cs: int, ce: int) -> list[tuple[int, Res | None]]:
    """getRangeOverlapping(cs, ce): from the last change at or before cs (or the first change), to ce."""
    if f.is_empty():
        return []
    start = first if first is not None else f.first_change()
    assert start is not None
    out: list[tuple[int, Res | None]] = list(f.items_between(start, ce))
    return out


def _periodic_overlapping(pf: PeriodicStepFunction, cs: int, ce: int) -> list[tuple[int, Res | None]]:
    """The unrolled periodic function from its last change at or before cs up to ce."""
    if pf.is_empty():
        return []
    first = pf.last_change_at_or_before(cs)
    assert first is not None
    return [(a, r) for a, _b, r in pf.pieces(first, ce + 1)]


def _merge_maps(a: list[tuple[int, Res | None]], b: list[tuple[int, Res | None]]) -> list[tuple[int, Res | None]]:
    """RLESparseResourceAllocation.merge(add) over [Long.MIN, Long.MAX] of two breakpoint maps."""
    if not a:
        return b
    if not b:
        return a
    out: list[tuple[int, Res | None]] = []
    i = j = 0
    la: Res | None = None
    lb: Res | None = None
    first = a[0][1] if a[0][1] is not None else b[0][1]
    two = first is None or len(first) == 2
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and a[i][0] < b[j][0]):
            t, la = a[i]
            i += 1
        elif i >= len(a) or b[j][0] < a[i][0]:
            t, lb = b[j]
            j += 1
        else:
            t, la = a[i]
            lb = b[j][1]
            i += 1
            j += 1
        if la is None:
            v = lb
        elif lb is None:
            v = la
        else:
            v = (la[0] + lb[0], la[1] + lb[1]) if two else radd(la, lb)
        if not out or v is None or out[-1][1] != v:
            out.append((t, v))
    out.append((LONG_MAX, None))
    return out


def make_policy(spec: dict | None) -> SharingPolicy:
    """A policy from the replay's `policy` object (contract §2.2); ValueError on a bad one."""
    if spec is None:
        return CapacityOverTimePolicy()
    kind = spec.get("type")
    if kind == "CapacityOverTime":
        inst = spec.get("instantaneousMaxCapacity", 1.0)
        avg = spec.get("averageCapacity", 1.0)
        window = spec.get("window", 86_400_000)
        for k, v in (("instantaneousMaxCapacity", inst), ("averageCapacity", avg)):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"policy.{k} must be a number")
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ValueError("policy.window must be a positive integer (ms)")
        return CapacityOverTimePolicy(float(inst), float(avg), window)
    if kind == "NoOverCommit":
        return NoOverCommitPolicy()
    if kind == "None":
        return NoPolicy()
    raise ValueError(f"policy.type must be CapacityOverTime, NoOverCommit or None, not {kind!r}")
