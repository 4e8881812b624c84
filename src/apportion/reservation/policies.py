"""Sharing policies (contract §9): None, NoOverCommit and CapacityOverTime.

A policy does two things: it lowers the availability an agent sees (`available_resources`, only
CapacityOverTime does, with its instantaneous per-user cap) and it validates a reservation the
plan is about to add (`validate`). All of it is computed on step functions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from apportion.reservation.average_window import (
    average_within,
    clamped,
    close_open_end,
    integral_bound_within,
    merge_maps,
    overlapping,
    periodic_overlapping,
)
from apportion.reservation.definition import ReservationId
from apportion.reservation.exceptions import (
    MismatchedUserException,
    PlanningException,
    PlanningQuotaException,
    ResourceOverCommitException,
    wrap_quota,
)
from apportion.reservation.periodic import PeriodicStepFunction
from apportion.reservation.resmath import Res, f32, f32_str, radd, rsub
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
        if integral_bound_within(plan, res, old, cs, ce, W, scaled_limit(plan.capacity, self.max_avg)):
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
                    f = merge(f, old.over_time(cs, ce), cs, ce, radd)
                consumption = clamped(f, cs, ce)
            else:
                fn = plan.user_load[user] if has_np else None
                if fn is not None:
                    consumption = overlapping(fn, fn.last_change_at_or_before(cs), cs, ce)
                else:
                    consumption = periodic_overlapping(plan.user_periodic[user], cs, ce)
        else:
            consumption = []

        if res.period > 0:
            pf = PeriodicStepFunction(res.period, res.rle.zero)
            pf.base = res.rle
            mine = periodic_overlapping(pf, cs, ce)
        else:
            mine = overlapping(res.rle, res.rle.last_change_at_or_before(cs), cs, ce)

        f_map = close_open_end(merge_maps(consumption, mine), ce)
        if not f_map:
            return True
        limit = scaled_limit(plan.capacity, self.max_avg)
        return average_within(f_map, W, cs, ce, limit)


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
