"""The plan's fast availability paths against the merge-by-merge one (exact equality).

`InMemoryPlan.available` evaluates capacity − committed and the policy's per-user cap in one pass
when there is no old version (on numpy slices of the plan's load mirrors, or on its step functions
when the mirrors are off), and serves a query inside the last answered range by clipping that
answer. All must give exactly what the step-by-step merges give, and raise exactly when they raise;
`available_arrays` must give the same breakpoints as arrays.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import alloc

from apportion.reservation import availability as availability_module
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import CapacityOverTimePolicy, NoOverCommitPolicy, NoPolicy
from apportion.reservation.resmath import Calculator
from apportion.reservation.stepfn import StepFunction

T = 20_000

pieces = st.lists(
    st.tuples(st.integers(0, 39), st.integers(1, 8), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=3
)
reservations = st.lists(
    st.tuples(pieces, st.sampled_from(["alice", "bob"]), st.sampled_from([0, 0, 10_000, 20_000])), max_size=6
)
window = st.tuples(st.integers(-5, 50), st.integers(0, 25))


def _plan(policy: str, calc: str) -> InMemoryPlan:
    pol = {"cot": CapacityOverTimePolicy(0.5, 1.0, T), "cot-full": CapacityOverTimePolicy(1.0, 1.0, T),
           "cot-over": CapacityOverTimePolicy(1.5, 1.0, T), "noc": NoOverCommitPolicy(), "none": NoPolicy()}[policy]
    return InMemoryPlan("dedicated", (8 * 1024, 8), step=1000, calculator=Calculator(calc), policy=pol,
                        max_periodicity=T)


def _answer(plan: InMemoryPlan, user: str, old, s: int, e: int, period: int):
    try:
        return plan.available(user, old, s, e, period).breakpoints()
    except PlanningException as x:
        return str(x)


def _answer_arrays(plan: InMemoryPlan, user: str, old, s: int, e: int, period: int):
    try:
        arrays = plan.available_arrays(user, old, s, e, period)
    except PlanningException as x:
        return str(x)
    assert arrays is not None
    t, v = arrays
    # shared: it may reach past [s, e + 1), the caller reads inside only
    f = StepFunction(zip(t.tolist(), map(tuple, v.tolist())))
    return f.clip(s, e + 1).breakpoints()


def _reference(plan: InMemoryPlan, user: str, old, s: int, e: int, period: int):
    plan._avail_cache = None
    fused = InMemoryPlan._available_fused
    mirrored, off = plan._mirrored, plan._mirrors_off
    # the merged path is the reference: route every query through it (not through the mirrors)
    InMemoryPlan._available_fused = lambda self, u, a, b: self._available_merged(u, None, a, b)  # type: ignore[method-assign]
    plan._mirrored, plan._mirrors_off = False, True
    try:
        return _answer(plan, user, old, s, e, period)
    finally:
        InMemoryPlan._available_fused = fused  # type: ignore[method-assign]
        plan._mirrored, plan._mirrors_off = mirrored, off
        plan._avail_cache = None


# cot-full and cot-over: a per-user cap at or above the capacity, which the mirrored pass does not
# read (it can never be below the free capacity while every load is non-negative)
@pytest.mark.parametrize("policy", ["cot", "cot-full", "cot-over", "noc", "none"])
@pytest.mark.parametrize("calc", ["default", "dominant"])
@pytest.mark.parametrize("vector_min", [0, availability_module._VECTOR_MIN])
@pytest.mark.parametrize("mirrors", [True, False])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(res=reservations, outer=window, inner=window, period=st.sampled_from([0, 0, 10_000, 20_000]))
def test_fast_availability_equals_the_merges(policy, calc, vector_min, mirrors, res, outer, inner, period):
    saved = availability_module._VECTOR_MIN
    availability_module._VECTOR_MIN = vector_min  # 0: the numpy pass for every query
    try:
        _check(policy, calc, res, outer, inner, period, mirrors)
    finally:
        availability_module._VECTOR_MIN = saved


def _check(policy, calc, res, outer, inner, period, mirrors=True) -> None:
    plan = _plan(policy, calc)
    # on from the start (however small the plan), or off: the step-function fast paths answer
    plan._mirrored, plan._mirrors_off = mirrors, not mirrors
    for n, (ps, user, p) in enumerate(res, start=1):
        ivs = [(a * 1000, (a + ln) * 1000, (m * 1024, v)) for a, ln, m, v in ps]
        if p:
            ivs = [(a % p, min(a % p + (b - a), p), r) for a, b, r in ivs]
        try:
            plan.add_reservation(alloc(n, ivs, user=user, period=p), is_recovering=True)
        except Exception:
            continue
    s, e = outer[0] * 1000, (outer[0] + outer[1]) * 1000
    si, ei = s + min(inner[0], outer[1]) * 1000 // 2, e - min(inner[1], outer[1]) * 1000 // 2
    for user in ("alice", "carol"):
        for old in (None, next(iter(plan.reservations), None)):
            want_outer = _reference(plan, user, old, s, e, period)
            want_inner = _reference(plan, user, old, si, ei, period) if si <= ei else None
            plan._avail_cache = None
            assert _answer(plan, user, old, s, e, period) == want_outer
            if si <= ei:
                # served from the cache when the outer query did not raise
                assert _answer(plan, user, old, si, ei, period) == want_inner
            plan._avail_cache = None
            assert _answer_arrays(plan, user, old, s, e, period) == want_outer
            if si <= ei:
                assert _answer_arrays(plan, user, old, si, ei, period) == want_inner


@pytest.mark.parametrize("policy", ["cot-full", "cot-over"])
def test_a_cap_at_the_capacity_is_read_once_a_load_was_negative(policy):
    """A user's load above the plan's total (another user's negative load) makes the cap bind
    even at the capacity: the mirrored pass must read the user's load then."""
    plan = _plan(policy, "default")
    plan._mirrored, plan._mirrors_off = True, False
    plan.add_reservation(alloc(1, [(0, 10_000, (6 * 1024, 2))], user="alice"), is_recovering=True)
    plan.add_reservation(alloc(2, [(2_000, 8_000, (-4 * 1024, -1))], user="bob"), is_recovering=True)
    assert not plan._nonnegative
    want = _reference(plan, "alice", None, 0, 12_000, 0)
    assert _answer(plan, "alice", None, 0, 12_000, 0) == want
    plan._avail_cache = None
    assert _answer_arrays(plan, "alice", None, 0, 12_000, 0) == want
    if policy == "cot-full":
        # where bob's load is negative alice's cap (8 GiB - 6 GiB) is below the free memory (6 GiB)
        assert want == [(0, (2048, 6)), (10_000, (8192, 8)), (12_001, (0, 0))]


@pytest.mark.parametrize("vector_min", [0, availability_module._VECTOR_MIN])
def test_a_fully_committed_start_leaves_no_breakpoint_there(vector_min):
    saved = availability_module._VECTOR_MIN
    availability_module._VECTOR_MIN = vector_min
    try:
        plan = InMemoryPlan("dedicated", (2048, 2), step=1000, policy=NoPolicy())
        plan.add_reservation(alloc(1, [(0, 5000, (2048, 2))]), is_recovering=True)
        assert plan.available("bob", None, 0, 9999).breakpoints() == [(5000, (2048, 2)), (10000, (0, 0))]
    finally:
        availability_module._VECTOR_MIN = saved
