"""Periodic reservations against non-periodic ones: what the admission check covers (contract §8.3).

The plan keeps periodic load modulo maxPeriodicity T, so a recurring reservation counts at every
time, even before its start (§3.4). Its admission check, however, compares it with the plan only
at `[start + k·p, end + k·p]` for k = 0 … T/p − 1 (§8.3, YARN's getAvailableResourceOverTime).
Non-periodic load outside those spans is never compared with it, and the plan total there can
exceed the capacity. That is YARN's behaviour and the contract's; the property tests check the
capacity only where the checks guarantee it (res_invariants.check_plan_within_capacity).
"""

from __future__ import annotations

import pytest
from res_helpers import alloc, body, make_plan, rid, system
from res_invariants import check_plan_within_capacity

from apportion.reservation.policies import CapacityOverTimePolicy, NoPolicy

AGENT_PARAMS = ["greedy", "greedy-left", "greedy-right", "aligned-left", "aligned-right"]


def _found_by_hypothesis():
    """The failing example of test_random_operations_keep_invariants[greedy]."""
    s = system("greedy", capacity=(8192, 6), max_periodicity=60_000,
               policy=CapacityOverTimePolicy(1.0, 1.0, 86_400_000))
    assert s.submit("bob", body(2, 0, 3600, [((1024, 1), 1, 1, 2500)], interpreter=0))[0] == 202
    assert s.submit("bob", body(1, 11_900, 31_700, [((1024, 2), 3, 1, 500)], interpreter=0,
                                recurrence="30000"))[0] == 202
    return s


def test_periodic_admission_checks_only_its_own_recurrences():
    s = _found_by_hypothesis()
    plan = s.plan
    nonperiodic, periodic = plan.get(rid(2)), plan.get(rid(1))
    assert nonperiodic.rle.nonzero_pieces() == [(0, 3000, (1024, 1))]
    # the seed's agent ignores periodicity and places at the deadline, [30000, 31000) -> offset 0
    assert periodic.rle.nonzero_pieces() == [(0, 1000, (3072, 6))]
    assert (periodic.start, periodic.end, periodic.period) == (12_000, 31_000, 30_000)
    # the check looked at [12000, 31000] and [42000, 61000]: everything fits there
    for t in (12_000, 30_000, 30_999, 60_000, 60_999):
        tot = plan.total_at(t)
        assert tot[0] <= 8192 and tot[1] <= 6, (t, tot)
    assert plan.available("bob", rid(1), 12_000, 31_000, 30_000).at(30_000) == (8192, 6)
    # ... but the periodic load also counts at offset 0 of every maxPeriodicity, before the
    # reservation's start, where the non-periodic one sits: the plan total there over-commits vCores
    assert plan.total_at(0) == (4096, 7)
    # the capacity invariant the contract guarantees still holds
    check_plan_within_capacity(plan)


@pytest.mark.parametrize("agent", AGENT_PARAMS)
def test_non_periodic_reservations_see_every_recurrence(agent):
    """The other order is checked everywhere: a non-periodic reservation sees periodic load at t mod T."""
    s = system(agent, capacity=(8192, 6), max_periodicity=60_000,
               policy=CapacityOverTimePolicy(1.0, 1.0, 86_400_000))
    plan = s.plan
    assert plan.add_reservation(alloc(1, [(0, 1000, (3072, 6))], start=12_000, end=31_000, period=30_000))
    status, _ = s.submit("bob", body(2, 0, 3600, [((1024, 1), 1, 1, 2500)], interpreter=0))
    if status == 202:
        for t in range(0, 3600, 100):
            tot = plan.total_at(t)
            assert tot[0] <= 8192 and tot[1] <= 6, (agent, t, tot)
    check_plan_within_capacity(plan)


def test_capacity_invariant_is_not_vacuous():
    """Over-commitment inside a checked span is reported (a plan under the None policy)."""
    plan = make_plan((4096, 4), NoPolicy(), max_periodicity=60_000)
    plan.add_reservation(alloc(1, [(0, 3000, (2048, 2))]))
    plan.add_reservation(alloc(2, [(0, 1000, (3072, 3))], start=0, end=1000, period=30_000))
    with pytest.raises(AssertionError):
        check_plan_within_capacity(plan)
    plan = make_plan((4096, 4), NoPolicy(), max_periodicity=60_000)
    plan.add_reservation(alloc(1, [(0, 1000, (3072, 3))], period=30_000))
    plan.add_reservation(alloc(2, [(0, 1000, (3072, 3))], period=60_000))
    with pytest.raises(AssertionError, match="periodic load alone"):
        check_plan_within_capacity(plan)
