"""Hadoop trunk's TestAlignedPlanner, case by case, against apportion's aligned agents.

Trunk's test builds a 100 GB / 100 vCore plan with a one-minute step, CapacityOverTime at 100 % /
100 % over a 1,000 s window, and runs AlignedPlannerWithGreedy (`aligned-right` unless the case
says left) on it, each case once per recurrence (none, 3 h, 1 day). Each case here asserts the
whole allocation: in every case but testFromCluster trunk's own checks account for every
container-step of the request, so they pin the allocation exactly. testFromCluster only asserts
acceptance in trunk; here it is also compared with the trunk model in `trunk_aligned_ref.py`.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import rid
from trunk_aligned_ref import ref_plan_job

from apportion.reservation.agents import aligned, make_agent
from apportion.reservation.agents.iterative import order_no_gap_ok
from apportion.reservation.definition import (
    R_ALL,
    R_ANY,
    R_ORDER,
    R_ORDER_NO_GAP,
    ReservationDefinition,
    Stage,
)
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.policies import CapacityOverTimePolicy, NoPolicy
from apportion.reservation.resmath import Calculator
from apportion.reservation.stepfn import StepFunction, segments

STEP = 60_000
CAPACITY = (100 * 1024, 100)
RECURRENCES = ["0", "10800000", "86400000"]
C1 = (1024, 1)


class Ids:
    """Fresh reservation ids, in order, as ReservationSystemTestUtil hands them out."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self):
        self.n += 1
        return rid(self.n)


def trunk_plan() -> InMemoryPlan:
    """TestAlignedPlanner.setup's plan."""
    return InMemoryPlan("dedicated", CAPACITY, step=STEP, calculator=Calculator("default"),
                        minimum_allocation=(1024, 1), maximum_allocation=(8 * 1024, 8),
                        policy=CapacityOverTimePolicy(1.0, 1.0, 1_000_000))


def fixed(plan: InMemoryPlan, ids: Ids, start: int, counts: list[int]) -> None:
    """addFixedAllocation: counts[i] containers of 1 GB / 1 vCore over step i from start."""
    pieces = [(start + i * STEP, start + (i + 1) * STEP, (1024 * k, k)) for i, k in enumerate(counts)]
    r = ReservationAllocation(ids(), "user_fixed", None, start, start + len(counts) * STEP, pieces)
    assert plan.add_reservation(r)


def definition(arrival: int, deadline: int, stages: list[tuple[Any, int, int, int]], interp: int,
               recurrence: str) -> ReservationDefinition:
    return ReservationDefinition(arrival, deadline, tuple(Stage(c, k, g, d) for c, k, g, d in stages), interp,
                                 "t", 0, recurrence)


def create(plan: InMemoryPlan, agent: str, rid_, user: str, d: ReservationDefinition) -> bool:
    return make_agent(agent).create(plan, rid_, user, d)


def pieces(plan: InMemoryPlan, rid_) -> list[tuple[int, int, tuple[int, int]]]:
    """The reservation's allocation in steps (offsets in the period when periodic: every case lies
    inside the first 3 hours, so they are the absolute times)."""
    r = plan.get(rid_)
    assert r is not None
    return [(a // STEP, b // STEP, v) for a, b, v in r.rle.nonzero_pieces()]


def check(plan: InMemoryPlan, rid_, start: int, end: int, containers: int, mem: int, cores: int) -> bool:
    """Trunk's check(): the allocation is containers x (mem, cores) all over [start, end) steps."""
    r = plan.get(rid_)
    assert r is not None
    want = (mem * containers, cores * containers)
    return all(r.resources_at(t) == want for t in range(start * STEP, end * STEP, STEP // 4))


def refused(plan: InMemoryPlan, agent: str, d: ReservationDefinition, ids: Ids) -> bool:
    before = len(plan.reservations)
    try:
        create(plan, agent, ids(), "u1", d)
    except PlanningException:
        return len(plan.reservations) == before
    return False


def scenario(counts_at: tuple[int, list[int]] | None) -> tuple[InMemoryPlan, Ids]:
    plan, ids = trunk_plan(), Ids()
    if counts_at is not None:
        fixed(plan, ids, counts_at[0] * STEP, counts_at[1])
    return plan, ids


SCENARIO1 = (0, [10, 10, 20, 20, 20, 10, 10])
SCENARIO2 = (11, [90, 90, 90])
SCENARIO3 = (10, [70, 80, 60])


@pytest.mark.parametrize("rec", RECURRENCES)
def test_single_reservation_accept(rec):
    plan, ids = scenario(SCENARIO1)
    r = ids()
    assert create(plan, "aligned-right", r, "u1",
                  definition(5 * STEP, 20 * STEP, [((2048, 2), 10, 5, 10 * STEP)], R_ORDER, rec))
    assert len(plan.reservations) == 2
    assert check(plan, r, 10, 20, 10, 2048, 2)
    assert pieces(plan, r) == [(10, 20, (20480, 20))]


@pytest.mark.parametrize("rec", RECURRENCES)
@pytest.mark.parametrize(("name", "deadline", "stages", "interp"), [
    ("testOrderNoGapImpossible", 15, [(C1, 20, 20, STEP), (C1, 20, 20, STEP)], R_ORDER_NO_GAP),
    ("testOrderNoGapImpossible2", 13, [(C1, 20, 20, STEP), (C1, 10, 10, STEP)], R_ORDER_NO_GAP),
    ("testOrderImpossible", 15, [(C1, 20, 20, 2 * STEP), (C1, 20, 20, STEP)], R_ORDER),
    ("testAnyImpossible", 15, [(C1, 20, 20, 3 * STEP), (C1, 20, 20, 2 * STEP)], R_ANY),
    ("testAllImpossible", 15, [(C1, 20, 20, STEP), (C1, 20, 20, 2 * STEP)], R_ALL),
])
def test_impossible_on_scenario2(rec, name, deadline, stages, interp):
    plan, ids = scenario(SCENARIO2)
    assert refused(plan, "aligned-right", definition(10 * STEP, deadline * STEP, stages, interp, rec), ids), name


@pytest.mark.parametrize("rec", RECURRENCES)
def test_any_accept(rec):
    plan, ids = scenario(SCENARIO2)
    r = ids()
    assert create(plan, "aligned-right", r, "u1", definition(
        10 * STEP, 15 * STEP, [(C1, 20, 20, STEP), (C1, 20, 20, 2 * STEP)], R_ANY, rec))
    assert check(plan, r, 14, 15, 20, 1024, 1)
    assert pieces(plan, r) == [(14, 15, (20480, 20))]


@pytest.mark.parametrize("rec", RECURRENCES)
def test_all_accept(rec):
    plan, ids = scenario(SCENARIO2)
    r = ids()
    assert create(plan, "aligned-right", r, "u1", definition(
        10 * STEP, 15 * STEP, [(C1, 20, 20, STEP), (C1, 20, 20, STEP)], R_ALL, rec))
    assert check(plan, r, 10, 11, 20, 1024, 1)
    assert check(plan, r, 14, 15, 20, 1024, 1)
    assert pieces(plan, r) == [(10, 11, (20480, 20)), (14, 15, (20480, 20))]


@pytest.mark.parametrize("rec", RECURRENCES)
def test_update(rec):
    plan, ids = scenario(None)
    flex = definition(10 * STEP, 14 * STEP, [(C1, 100, 1, 2 * STEP)], R_ALL, rec)
    block = definition(10 * STEP, 11 * STEP, [(C1, 100, 100, STEP)], R_ALL, rec)
    block_id, flex_id = ids(), ids()
    agent = make_agent("aligned-right")
    assert agent.create(plan, block_id, "uBlock", block)
    assert agent.create(plan, flex_id, "uFlex", flex)
    assert plan.delete_reservation(block_id)
    assert agent.update(plan, flex_id, "uFlex", flex)
    assert len(plan.reservations) == 1
    assert check(plan, flex_id, 10, 14, 50, 1024, 1)
    assert pieces(plan, flex_id) == [(10, 14, (51200, 50))]


@pytest.mark.parametrize("rec", RECURRENCES)
def test_impossible_duration(rec):
    plan, ids = scenario(None)
    assert refused(plan, "aligned-right", definition(10 * STEP, 15 * STEP, [(C1, 20, 20, 10 * STEP)], R_ALL, rec),
                   ids)
    assert not plan.reservations


@pytest.mark.parametrize("rec", RECURRENCES)
def test_loaded_duration_intervals(rec):
    plan, ids = scenario(SCENARIO3)
    r = ids()
    assert create(plan, "aligned-right", r, "u1", definition(10 * STEP, 13 * STEP, [(C1, 80, 10, STEP)], R_ALL, rec))
    assert check(plan, r, 10, 11, 20, 1024, 1)
    assert check(plan, r, 11, 12, 20, 1024, 1)
    assert check(plan, r, 12, 13, 40, 1024, 1)
    assert pieces(plan, r) == [(10, 12, (20480, 20)), (12, 13, (40960, 40))]


@pytest.mark.parametrize("rec", RECURRENCES)
def test_cost_function(rec):
    plan, ids = scenario(None)
    r1, r2, r3 = ids(), ids(), ids()
    assert create(plan, "aligned-right", r1, "u1", definition(10 * STEP, 11 * STEP, [((7 * 1024, 1), 1, 1, STEP)],
                                                              R_ALL, rec))
    assert create(plan, "aligned-right", r2, "u2", definition(10 * STEP, 11 * STEP, [((6 * 1024, 6), 1, 1, STEP)],
                                                              R_ALL, rec))
    assert create(plan, "aligned-right", r3, "u3", definition(10 * STEP, 12 * STEP, [(C1, 1, 1, STEP)], R_ALL, rec))
    assert check(plan, r3, 10, 11, 0, 1024, 1)
    assert check(plan, r3, 11, 12, 1, 1024, 1)
    assert pieces(plan, r3) == [(11, 12, (1024, 1))]


FROM_CLUSTER = [
    (1425716392178, 1425722262791, 7, 587000),
    (1425716406178, 1425721255841, 6, 485000),
    (1425716399178, 1425723780138, 6, 738000),
    (1425716437178, 1425722968378, 7, 653000),
    (1425716406178, 1425721926090, 6, 552000),
    (1425716379178, 1425722238553, 6, 586000),
    (1425716407178, 1425722908317, 7, 650000),
    (1425716452178, 1425722841562, 6, 639000),
    (1425716384178, 1425721766129, 7, 538000),
    (1425716437178, 1425722507886, 5, 607000),
]


@pytest.mark.parametrize("rec", RECURRENCES)
def test_from_cluster(rec):
    """Ten jobs from a real cluster, one after another: all accepted (trunk's assertion), each
    placed as the trunk model places it on the same plan (the load of the jobs before it)."""
    plan, ids = scenario(None)
    for i, (arrival, deadline, n, dur) in enumerate(FROM_CLUSTER, start=1):
        d = definition(arrival, deadline, [(C1, n, 1, dur)], R_ALL, rec)
        r = ids()
        want = ref_plan_job(plan, False, f"u{i}", d, None)
        assert create(plan, "aligned-right", r, f"u{i}", d)
        got = plan.get(r)
        assert got is not None
        assert want is not None
        assert got.rle.nonzero_pieces() == want, i
    assert len(plan.reservations) == len(FROM_CLUSTER)


@pytest.mark.parametrize("rec", RECURRENCES)
def test_single_reservation_accept_allocate_left(rec):
    plan, ids = scenario(None)
    r = ids()
    assert create(plan, "aligned-left", r, "u1", definition(
        10 * STEP, 35 * STEP, [(C1, 20, 20, 10 * STEP), (C1, 20, 20, 10 * STEP)], R_ORDER, rec))
    assert len(plan.reservations) == 1
    assert check(plan, r, 10, 30, 20, 1024, 1)
    assert pieces(plan, r) == [(10, 30, (20480, 20))]


@pytest.mark.parametrize("rec", RECURRENCES)
def test_left_succeeds_right_fails(rec):
    plan, ids = scenario(SCENARIO2)
    rr1 = definition(7 * STEP, 16 * STEP, [(C1, 20, 20, 2 * STEP), (C1, 20, 20, 2 * STEP)], R_ORDER, rec)
    rr2 = definition(14 * STEP, 16 * STEP, [(C1, 100, 100, 2 * STEP)], R_ORDER, rec)
    r1, r2 = ids(), ids()
    assert create(plan, "aligned-left", r1, "u1", rr1)
    assert check(plan, r1, 7, 11, 20, 1024, 1)
    assert pieces(plan, r1) == [(7, 11, (20480, 20))]
    assert create(plan, "aligned-left", r2, "u2", rr2)
    assert check(plan, r2, 14, 16, 100, 1024, 1)
    assert pieces(plan, r2) == [(14, 16, (102400, 100))]
    assert plan.delete_reservation(r1)
    assert plan.delete_reservation(r2)
    # the same two jobs with aligned-right: the first goes late and the second no longer fits
    r3 = ids()
    assert create(plan, "aligned-right", r3, "u1", rr1)
    assert len(plan.reservations) == 2
    assert refused(plan, "aligned-right", rr2, ids)


def test_validate_order_no_gap():
    """IterativePlanner.validateOrderNoGap's six cases, on what is placed [10, 13) steps."""
    block = (10 * STEP, 13 * STEP)
    r = C1

    def iv(*spans: tuple[int, int]) -> list[tuple[int, int, tuple[int, int]]]:
        return [(a * STEP, b * STEP, r) for a, b in spans]

    assert order_no_gap_ok(block, iv((9, 10)), left=False)
    assert not order_no_gap_ok(block, iv((9, 10), (7, 8)), left=False)  # a gap inside the stage
    assert not order_no_gap_ok(block, iv((8, 9)), left=False)  # a gap before what is placed
    assert order_no_gap_ok(block, iv((13, 14)), left=True)
    assert not order_no_gap_ok(block, iv((13, 14), (15, 16)), left=True)
    assert not order_no_gap_ok(block, iv((14, 15)), left=True)
    assert order_no_gap_ok(None, iv((14, 15)), left=True)  # nothing placed yet: only contiguity


def _duration_interval(s: int, e: int) -> tuple[int, float]:
    """getDurationInterval's (gangs that fit, cost) through the allocator's walks, on the test's
    functions: free 4 GB on [10, 20) and [30, 40), 8 GB on [20, 30); load 5 GB on [20, 30); the
    job's own placements 1 GB on [25, 35); a gang of 1 GB / 1 vCore."""
    free = StepFunction.from_intervals([(10 * STEP, 40 * STEP, (4096, 4)), (20 * STEP, 30 * STEP, (4096, 4))])
    load = StepFunction.from_intervals([(20 * STEP, 30 * STEP, (5120, 5))])
    placed = StepFunction.from_intervals([(25 * STEP, 35 * STEP, C1)])
    calc = Calculator("default")
    lo, hi = 0, 50 * STEP
    lt, lv = segments(load, lo, hi)
    vt, vv = segments(free, lo, hi)
    pt, pv = segments(placed, lo, hi)
    for t in (lt, vt, pt):
        t.append(aligned._PAST_END)
    cost = aligned.window_cost(lt, lv, pt, pv, s * STEP, e * STEP, STEP, {}, lambda x: calc.ratio(x, CAPACITY))
    fit = aligned.window_fit(vt, vv, pt, pv, s * STEP, e * STEP, 2**31 - 1, lambda x, best: calc.gangs(x, C1, best))
    return fit, cost


@pytest.mark.parametrize(("s", "e", "fit", "cost"), [
    (10, 30, 4, 0.55), (10, 31, 3, 0.56), (15, 30, 4, 0.55), (15, 31, 3, 0.56), (22, 23, 8, 0.05), (39, 41, 0, 0.0),
])
def test_get_duration_interval(s, e, fit, cost):
    """TestAlignedPlanner.testGetDurationInterval's six windows."""
    got_fit, got_cost = _duration_interval(s, e)
    assert got_fit == fit
    assert got_cost == pytest.approx(cost, abs=1e-5)


def test_cost_is_summed_over_the_loads_own_pieces():
    """Trunk sums the cost over the pieces of (load + placements) as its merge leaves them, equal
    neighbours joined: where the load rises exactly as the job's own placement ends, the sum is
    one piece, not two. The two sums differ in the last bit here, which decides cost ties."""
    calc = Calculator("default")
    cap = CAPACITY
    v = (16 * 1024, 16)
    a, b = 1_039_003, 1_039_003 + 1_595_854  # off the step grid, as real arrivals are
    load = StepFunction.from_intervals([(a, 30 * STEP, v)])
    placed = StepFunction.from_intervals([(0, a, v)])
    lt, lv = segments(load, 0, 30 * STEP)
    pt, pv = segments(placed, 0, 30 * STEP)
    for t in (lt, pt):
        t.append(aligned._PAST_END)
    q = calc.ratio(v, cap)
    one_piece = q * b / STEP
    two_pieces = q * a / STEP + q * (b - a) / STEP
    assert one_piece != two_pieces  # the case is only a test if the sums differ
    got = aligned.window_cost(lt, lv, pt, pv, 0, b, STEP, {}, lambda x: calc.ratio(x, cap))
    assert got == one_piece


_T = 60_000
_caps = st.sampled_from([(1024, 1), (2048, 1), (1024, 2), (3072, 3)])
_existing = st.tuples(st.integers(0, 40_000), st.integers(1, 8_000), _caps, st.integers(1, 3),
                      st.sampled_from([0, 0, 0, 30_000, 60_000]))
_stage = st.tuples(_caps, st.integers(1, 12), st.integers(1, 2), st.integers(1, 6_000))
_job = st.tuples(st.integers(0, 30_000), st.integers(2_500, 40_000), st.lists(_stage, min_size=1, max_size=3),
                 st.integers(0, 3), st.booleans())


@pytest.mark.parametrize("left", [True, False])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(step=st.sampled_from([1000, 700]), calc=st.sampled_from(["default", "dominant"]),
       capacity=st.tuples(st.integers(4, 16).map(lambda k: k * 1024), st.integers(4, 16)),
       loads=st.lists(_existing, max_size=12), jobs=st.lists(_job, min_size=1, max_size=3),
       mirrors=st.booleans(), drop=st.booleans(), capped=st.booleans())
def test_low_cost_planner_places_as_the_trunk_model(left, step, calc, capacity, loads, jobs, mirrors, drop, capped):
    """Random plans and jobs: the low-cost aligned planner's reservation (or refusal) is the trunk
    model's, on either of the plan's representations (arrays or step functions)."""
    policy = CapacityOverTimePolicy(0.5, 1.0, _T) if capped else NoPolicy()
    plan = InMemoryPlan("dedicated", capacity, step=step, calculator=Calculator(calc), policy=policy,
                        maximum_allocation=(8192, 8), max_periodicity=_T)
    plan._mirrored, plan._mirrors_off = mirrors, not mirrors
    for n, (a, ln, c, k, period) in enumerate(loads, start=1):
        ln = min(ln, period) if period else ln
        plan.add_reservation(ReservationAllocation(rid(n), "alice", None, a, a + ln,
                                                   [(a, a + ln, (c[0] * k, c[1] * k))], period=period),
                             is_recovering=True)
    if drop:
        plan.set_capacity((capacity[0] // 2, capacity[1] // 2))  # over-committed: negative free
    planner = aligned.aligned_agent(left).agents[0]
    for arrival, window, stages, interp, periodic in jobs:
        sts = tuple(Stage(cap, gangs * size, size, dur) for cap, gangs, size, dur in stages)
        rec = "30000" if periodic and window <= 30_000 else "0"
        d = ReservationDefinition(arrival, arrival + window, sts, interp, "t", 0, rec)
        want = ref_plan_job(plan, left, "bob", d, None)
        try:
            got = planner.plan_job(plan, rid(99), "bob", d, None).rle.nonzero_pieces()
        except PlanningException:
            got = None
        assert got == want


def test_by_demand_weights_are_java_longs():
    """StageExecutionIntervalByDemand computes each weight as a long product, which wraps, and sums
    the weights from the job's last stage back to the stage (allocating left). The first stage's
    weight here wraps to a different value than the exact product: its window follows the wrapped
    weights (the float products gave a window ending at 2,607,579,023,000)."""
    sts = (Stage((3072, 1), 387927, 1, 665458916597), Stage((8191, 1), 656116, 1, 71314217469),
           Stage((1024, 1), 952966, 1, 519092977833))
    a, d = 271952, 5377105622743
    plan = InMemoryPlan("dedicated", CAPACITY, step=1000, policy=NoPolicy())
    defn = ReservationDefinition(a, d, sts, R_ORDER, "t", 0, "0")

    def weight(s: Stage) -> float:
        return float(ctypes.c_int64(ctypes.c_int64(s.duration * s.capability[0]).value * s.num_containers).value)

    total = 0.0
    for s in reversed(sts):
        total += weight(s)
    slack = (d - a) - sum(-(-s.duration // 1000) * 1000 for s in sts)
    end = int(a + 665458917000 + slack * (weight(sts[0]) / total)) // 1000 * 1000
    assert weight(sts[0]) != float(sts[0].duration * 3072 * 387927)
    planner = aligned.aligned_agent(True).agents[0]
    assert planner._by_demand(plan, defn, 0, sts[0], a, d) == (a, end)
    assert end != 2_607_579_023_000


@pytest.mark.parametrize("left", [True, False])
def test_by_demand_memoryless_stages_get_no_slack(left):
    """Deviation 15 (docs/reservation.md): stages asking for memory 0 weigh nothing; trunk's 0/0
    would end the left window at time 0 (and start the right one there, before the arrival). Each
    stage gets its own duration and no slack."""
    sts = (Stage((0, 1), 2, 1, 5000), Stage((0, 1), 2, 1, 5000))
    plan = InMemoryPlan("dedicated", CAPACITY, step=1000, policy=NoPolicy())
    defn = ReservationDefinition(10_000, 70_000, sts, R_ORDER, "t", 0, "0")
    planner = aligned.aligned_agent(left).agents[0]
    if left:
        assert planner._by_demand(plan, defn, 0, sts[0], 10_000, 70_000) == (10_000, 15_000)
    else:
        assert planner._by_demand(plan, defn, 1, sts[1], 10_000, 70_000) == (65_000, 70_000)
    r = planner.plan_job(plan, rid(1), "bob", defn, None)
    assert r.rle.nonzero_pieces() == ([(10_000, 20_000, (0, 2))] if left else [(60_000, 70_000, (0, 2))])


def test_gang_counts_are_exact_past_single_precision():
    """Deviation 16: 25,165,826 MB free holds 2 gangs of 8,388,609 MB; trunk's single-precision
    quotient is 3.0 exactly."""
    free, gang = 25_165_826, 8_388_609
    assert np.float32(np.float32(free) / np.float32(gang)) == 3.0
    assert Calculator("default").gangs((free, 10), (gang, 1), 2**31 - 1) == 2


@pytest.mark.parametrize("mirrors", [True, False])
def test_the_last_placement_is_checked_too(mirrors):
    """Trunk evaluates a candidate again after every placement, the last one included, and the
    merge behind that refuses a negative free value in any component. Under the default
    calculator gangs are counted by memory: the one gang here fits by memory on [1.5 s, 2.5 s) but
    takes a vCore that [1.5 s, 1.501 s) does not have, so the low-cost planner fails (the agent
    then tries its greedy planner). It used to skip that last evaluation and accept."""
    plan = InMemoryPlan("dedicated", (4096, 4), step=1000, calculator=Calculator("default"), policy=NoPolicy(),
                        maximum_allocation=(8192, 8))
    plan._mirrored, plan._mirrors_off = mirrors, not mirrors
    plan.add_reservation(ReservationAllocation(rid(1), "alice", None, 1, 1501, [(1, 1501, (2048, 4))]),
                         is_recovering=True)
    d = ReservationDefinition(0, 2500, (Stage((1024, 1), 1, 1, 1),), R_ANY, "t", 0, "0")
    assert ref_plan_job(plan, False, "bob", d, None) is None
    with pytest.raises(PlanningException, match="would be negative"):
        aligned.aligned_agent(False).agents[0].plan_job(plan, rid(2), "bob", d, None)


@pytest.mark.parametrize("arrays", [True, False])
def test_a_periodic_over_commit_at_the_deadline_is_placed_as_the_trunk_model(arrays, monkeypatch):
    """The example hypothesis found for test_low_cost_planner_places_as_the_trunk_model[False]:
    a periodic reservation over-commits the plan from the stage's deadline on. Trunk's
    availability is undefined (null) at the deadline, the end of its last merge, and its check
    after a placement merges it untested there, so the aligned-right stage is placed on the window
    ending at the deadline. `arrays` False: the step-function walk (`WalkWindows`)."""
    plan = InMemoryPlan("dedicated", (4096, 4), step=1000, calculator=Calculator("default"), policy=NoPolicy(),
                        maximum_allocation=(8192, 8), max_periodicity=_T)
    if not arrays:
        monkeypatch.setattr(plan, "available_arrays", lambda *a, **k: None)
    plan._mirrored, plan._mirrors_off = False, True
    for n, (a, ln, c, period) in enumerate([(0, 1, (1024, 1), 0), (0, 1, (1024, 1), 0),
                                            (5874, 1, (6144, 3), 30000)], start=1):
        plan.add_reservation(ReservationAllocation(rid(n), "alice", None, a, a + ln, [(a, a + ln, c)], period=period),
                             is_recovering=True)
    d = ReservationDefinition(5875, 5875 + 29999, (Stage((1024, 1), 1, 1, 1),), 0, "t", 0, "0")
    want = ref_plan_job(plan, False, "bob", d, None)
    assert want == [(34874, 35874, (1024, 1))]
    got = aligned.aligned_agent(False).agents[0].plan_job(plan, rid(99), "bob", d, None).rle.nonzero_pieces()
    assert got == want
