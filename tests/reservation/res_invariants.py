"""Invariants every accepted reservation and the plan must satisfy."""

from __future__ import annotations

from apportion.reservation.definition import R_ALL, R_ANY, R_ORDER, R_ORDER_NO_GAP
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.resmath import ZERO, round_up
from apportion.reservation.stepfn import StepFunction


def _checked_spans(r: ReservationAllocation, T: int) -> list[tuple[int, int]]:
    """The absolute times the admission check of r looked at (closed ranges, contract §8.3, §9.2).

    A reservation with period p is checked at `[start + k·p, end + k·p]` for k = 0 … T/p − 1 only;
    a non-periodic one at `[start, end]`.
    """
    if r.period <= 0:
        return [(r.start, r.end)]
    return [(r.start + k * r.period, r.end + k * r.period) for k in range(T // r.period)]


def check_plan_within_capacity(plan: InMemoryPlan) -> None:
    """The committed load fits the capacity wherever the contract's admission checks guarantee it.

    The periodic load alone always fits (each periodic check covers every offset it occupies). The
    total fits at every time t where each periodic reservation holding something at t had t inside
    its checked spans. Outside them YARN (and the contract, §8.3) never compares a periodic
    reservation with non-periodic load, and a periodic load kept modulo maxPeriodicity also counts
    before its start, so the total there may exceed the capacity (see test_res_periodic.py).
    """
    cap = plan.capacity
    T = plan.max_periodicity
    for t, v in plan.periodic_load.base.breakpoints():
        assert 0 <= t <= T
        assert all(x <= c for x, c in zip(v, cap)), ("periodic load alone", t, v)
    periodic = [r for r in plan.reservations.values() if r.period > 0]
    spans = {r.id: _checked_spans(r, T) for r in periodic}
    times = {t for t, _ in plan.load.breakpoints()}
    horizon = max([t for t in times] + [e for sp in spans.values() for _s, e in sp] + [0]) + T
    for t, _ in plan.periodic_load.base.breakpoints():
        times.update(range(t, horizon + 1, T))
    for r in periodic:
        for t, _ in r.rle.breakpoints():
            times.update(range(t, horizon + 1, r.period))
        for a, b in spans[r.id]:
            times.update((a, b))
    for t in sorted(times):
        if t < 0:
            continue
        if any(r.rle.at(t % r.period) != ZERO and not any(a <= t <= b for a, b in spans[r.id]) for r in periodic):
            continue
        tot = plan.total_at(t)
        assert all(x <= c for x, c in zip(tot, cap)), (t, tot)


def check_load_is_sum(plan: InMemoryPlan) -> None:
    """The plan's totals equal the sum of its reservations (nothing lost, nothing extra)."""
    f = StepFunction(zero=plan.zero)
    for r in plan.reservations.values():
        if r.period <= 0:
            f.add_function(r.rle)
    assert f == plan.load


def check_agent_reservation(r: ReservationAllocation, step: int, contiguous_no_gap: bool = True) -> None:
    """Allocation inside [arrival, deadline) and respecting its interpreter.

    `contiguous_no_gap`: an R_ORDER_NO_GAP allocation is one block. Not so for the seed's `greedy`, which
    places a stage's gangs in batches wherever they fit (the seed's own example leaves a hole) and only
    bounds the gap between stages (contract §7.6)."""
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
    if d.interpreter == R_ORDER_NO_GAP and contiguous_no_gap:
        # one contiguous block without a zero gap
        assert all(p[1] == q[0] for p, q in zip(pieces, pieces[1:]))
    assert all(v != ZERO for _, _, v in pieces)
