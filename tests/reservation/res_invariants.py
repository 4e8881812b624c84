"""Invariants every accepted reservation and the plan must satisfy."""

from __future__ import annotations

from apportion.reservation.definition import R_ALL, R_ANY, R_ORDER, R_ORDER_NO_GAP
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.stepfn import ZERO, StepFunction, round_up


def check_plan_within_capacity(plan: InMemoryPlan) -> None:
    """Committed load never exceeds capacity (component-wise), checked at every breakpoint."""
    times = {t for t, _ in plan.load.breakpoints()}
    T = plan.max_periodicity
    for t, _ in plan.periodic_load.base.breakpoints():
        times.add(t)
    for t in times:
        tot = plan.total_at(t)
        assert tot[0] <= plan.capacity[0] and tot[1] <= plan.capacity[1], (t, tot)
    for t, _ in plan.periodic_load.base.breakpoints():
        assert 0 <= t <= T


def check_load_is_sum(plan: InMemoryPlan) -> None:
    """The plan's totals equal the sum of its reservations (nothing lost, nothing extra)."""
    f = StepFunction()
    for r in plan.reservations.values():
        if r.period <= 0:
            f.add_function(r.rle)
    assert f == plan.load


def check_agent_reservation(r: ReservationAllocation, step: int) -> None:
    """Allocation inside [arrival, deadline) and respecting its interpreter."""
    d = r.definition
    assert d is not None
    pieces = r.rle.nonzero_pieces()
    assert pieces
    if r.period > 0:
        assert all(0 <= a < b <= r.period for a, b, _ in pieces)
        return
    lo = d.arrival
    hi = d.deadline
    assert pieces[0][0] >= lo and pieces[-1][1] <= hi, (pieces, lo, hi)
    total = sum((b - a) * v[0] for a, b, v in pieces)
    need = [(s.capability[0] * s.num_containers * round_up(s.duration, step)) for s in d.stages if s.duration > 0]
    if d.interpreter == R_ANY:
        assert total in need
    elif d.interpreter in (R_ALL, R_ORDER, R_ORDER_NO_GAP):
        assert total == sum(need)
    if d.interpreter == R_ORDER_NO_GAP:
        # one contiguous block without a zero gap
        assert all(p[1] == q[0] for p, q in zip(pieces, pieces[1:]))
    assert all(v != ZERO for _, _, v in pieces)
