"""CapacityOverTime's integral bound against the full average walk (same answer, every time).

`_average_ok` answers True without the walk when the user's consumption plus the reservation (and
the old version, on an update) integrate to at most window x limit. The plan keeps each user's
integrals as reservations come and go; random plans (periodic reservations, removals, updates,
negative values from a recovered plan) must give the walk's answer either way, and the bound must
really bound the integral of what the user consumes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import make_plan, rid

from apportion.reservation.average_window import integral_bound_within as _integral_bound_within
from apportion.reservation.periodic import piece_integral
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.policies import CapacityOverTimePolicy

T = 20_000

piece = st.tuples(st.integers(0, 39), st.integers(1, 12), st.integers(-1, 4), st.integers(0, 3))
reservation = st.tuples(
    st.lists(piece, min_size=1, max_size=3), st.sampled_from(["alice", "bob"]),
    st.sampled_from([0, 0, 0, 5_000, 10_000, 20_000]), st.booleans(),
)


def _allocation(n: int, spec: Any, negative_ok: bool) -> ReservationAllocation:
    ps, user, period, _remove = spec
    ivs = []
    for a, ln, m, v in ps:
        if m < 0 and not negative_ok:
            m = 1
        a, b = a * 500, (a + ln) * 500
        if period:
            a, b = a % period, min(a % period + (b - a), period)
        ivs.append((a, b, (m * 1024, v)))
    s = min(a for a, _b, _r in ivs)
    e = max(b for _a, b, _r in ivs)
    return ReservationAllocation(rid(n), user, None, s, e, ivs, period=period)


def _build(specs: list[Any], negative_ok: bool, avg: float, window: int) -> tuple[InMemoryPlan, CapacityOverTimePolicy]:
    policy = CapacityOverTimePolicy(1.0, avg, window)
    plan = make_plan((8 * 1024, 8), policy, max_periodicity=T)
    for n, spec in enumerate(specs, start=1):
        plan.add_reservation(_allocation(n, spec, negative_ok), is_recovering=True)
    for n, spec in enumerate(specs, start=1):
        if spec[3]:
            plan.delete_reservation(rid(n))
    return plan, policy


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(reservation, max_size=8),
    new=reservation,
    negative_ok=st.booleans(),
    avg=st.sampled_from([0.01, 0.05, 0.2, 1.0]),
    window=st.sampled_from([2_000, 5_000, 20_000]),
    update=st.integers(0, 8),
)
def test_the_bound_never_changes_the_answer(specs, new, negative_ok, avg, window, update):
    plan, policy = _build(specs, negative_ok, avg, window)
    if 1 <= update <= len(specs) and plan.get(rid(update)) is not None:
        cand = _allocation(update, new, negative_ok)  # an update: the old version is in the plan
        cand.user = plan.get(rid(update)).user
    else:
        cand = _allocation(99, new, negative_ok)
    assert policy._average_ok(plan, cand) == policy._average_walk(plan, cand)


@settings(max_examples=200, deadline=None)
@given(specs=st.lists(reservation, max_size=8), s=st.integers(-40_000, 40_000), span=st.integers(0, 60_000))
def test_the_user_bound_bounds_the_consumption(specs, s, span):
    plan, _policy = _build(specs, False, 1.0, 5_000)
    e = s + span
    for user in ("alice", "bob", "carol"):
        bound = plan.user_integral_bound(user, s, e)
        assert bound is not None
        got = piece_integral(plan.user_over(user, s - 2 * T, e + 1).nonzero_pieces())
        assert got[0] <= bound[0] and got[1] <= bound[1]


def test_removing_everything_brings_the_integrals_back_to_zero():
    plan, _policy = _build([([(0, 4, 2, 1)], "alice", 0, True), ([(3, 9, 1, 2)], "alice", 10_000, True)],
                           False, 1.0, 5_000)
    assert plan.reservations == {}
    assert plan.user_integral_bound("alice", 0, 10_000) == (0, 0)


def test_a_negative_reservation_turns_the_bound_off():
    plan, policy = _build([([(0, 4, -1, 1)], "alice", 0, False)], True, 1.0, 5_000)
    assert plan.user_integral_bound("alice", 0, 10_000) is None
    cand = _allocation(99, ([(1, 2, 1, 1)], "alice", 0, False), False)
    assert not _integral_bound_within(plan, cand, None, cand.start - 5_000, cand.end + 5_000, 5_000, (8192, 8))


def test_the_bound_answers_the_common_case():
    plan, policy = _build([([(0, 4, 2, 1)], "alice", 0, False)], False, 1.0, 20_000)
    cand = _allocation(99, ([(1, 2, 1, 1)], "alice", 10_000, False), False)
    assert _integral_bound_within(plan, cand, None, cand.start - 20_000, cand.end + 20_000, 20_000, (8192, 8))
    assert policy._average_ok(plan, cand) and policy._average_walk(plan, cand)
