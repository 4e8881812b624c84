"""The low-cost aligned allocator's candidates read cheapest first from bounds (`BoundedWindows`)
against the walks and against `ArrayWindows`.

`BoundedWindows` sums a candidate's cost only when the exact integral of the load over it says it
can be next. Every entry it hands out, in order, must be the one the walk's full sort of every
candidate gives (the same float cost to the last bit, the same end key, the same fit), its costs
with gangs placed must be the walk's sums, its check after a placement must refuse where the walk
over (availability - placements) does, and whole plans must place every job, or refuse it, as
`ArrayWindows` and the walk do. Loads are non-negative (the bound needs it), availabilities may be
negative, values reach far past 2**24 so that single-precision ratios round.
"""

from __future__ import annotations

import numpy as np
import pytest
from aligned_cases import T, definition, existing, job, outcome, random_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import make_plan, rid

from apportion.reservation.agents import aligned, bounded_windows
from apportion.reservation.agents.aligned_arrays import ArrayWindows, _read
from apportion.reservation.agents.bounded_windows import (
    BoundedWindows,
    CheapestFirst,
    integrals,
    integrals_walk,
)
from apportion.reservation.agents.sorted_runs import NoMoreRuns
from apportion.reservation.definition import ReservationDefinition, Stage
from apportion.reservation.plan import ReservationAllocation
from apportion.reservation.policies import CapacityOverTimePolicy, NoPolicy
from apportion.reservation.resmath import Calculator
from apportion.reservation.steparrays import arrays_of
from apportion.reservation.stepfn import StepFunction, segments

# memory in units that make single-precision ratios round (3 x 2**k, odd multiples), vCores small
units = st.sampled_from([512, 1000, 3 << 20, 7 << 30])
load_pieces = st.lists(st.tuples(st.integers(0, 400), st.integers(1, 80), st.integers(0, 9), st.integers(0, 5)),
                       max_size=14)
avail_pieces = st.lists(st.tuples(st.integers(0, 400), st.integers(1, 80), st.integers(-2, 12), st.integers(-2, 6)),
                        max_size=10)


def _fn(ps: list[tuple[int, int, int, int]], unit: int) -> StepFunction:
    return StepFunction.from_intervals([(a, a + n, (m * unit, v)) for a, n, m, v in ps])


def _windows(load, avail, unit, cap, lo, dur, count, gang, step) -> tuple[BoundedWindows, StepFunction, StepFunction]:
    lf, vf = _fn(load, unit), _fn(avail, unit)
    la, va = arrays_of(lf), arrays_of(vf)
    assert la is not None and va is not None
    hi = lo + count * dur
    w = BoundedWindows(lo, dur, count, gang, step, cap, _read(*la, lo, hi), _read(*va, lo, hi + 1))
    w.integrals = integrals(w.lt, w.lv[:, 0], lo, dur, count)
    return w, lf, vf


def _walk_cost(lf: StepFunction, a: int, b: int, n: int, gang, step: int, cap) -> float:
    calc = Calculator("default")
    lt, lv = segments(lf, a, b)
    placed = StepFunction.from_intervals([(a, b, (gang[0] * n, gang[1] * n))] if n else [])
    pt, pv = segments(placed, a, b)
    lt.append(aligned._PAST_END)
    pt.append(aligned._PAST_END)
    return aligned.window_cost(lt, lv, pt, pv, a, b, step, {}, lambda r: calc.ratio(r, cap))


def _walk_fit(vf: StepFunction, a: int, b: int, gang) -> int:
    calc = Calculator("default")
    vt, vv = segments(vf, a, b)
    vt.append(aligned._PAST_END)
    pt, pv = [a, aligned._PAST_END], [(0, 0)]
    # no cap (the walk caps at Integer.MAX like trunk; the arrays do not, and a fit only meets
    # min(per_step, to_place, fit))
    return aligned.window_fit(vt, vv, pt, pv, a, b, 1 << 80, lambda r, best: calc.gangs(r, gang, best))


shape = dict(
    load=load_pieces, avail=avail_pieces, unit=units,
    cap=st.tuples(st.integers(1, 40).map(lambda k: k * 3 << 20), st.integers(1, 64)),
    lo=st.integers(0, 30), dur=st.sampled_from([1, 3, 10, 25]), count=st.integers(1, 40),
    gang=st.tuples(st.sampled_from([1, 512, 3 << 20]), st.integers(0, 2)), step=st.sampled_from([1, 7, 1000]),
)


@settings(max_examples=300, deadline=None)
@given(**shape, left=st.booleans(), grow=st.integers(1, 40))
def test_candidates_come_out_in_the_walks_full_order(load, avail, unit, cap, lo, dur, count, gang, step, left, grow):
    """Every entry, in order: the walk's cost of every candidate sorted with its end key, only
    those that fit a gang, whatever the levels the thresholds grow by."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(bounded_windows, "GROW", grow)
        _full_order(load, avail, unit, cap, lo, dur, count, gang, step, left)


def _full_order(load, avail, unit, cap, lo, dur, count, gang, step, left) -> None:
    w, lf, vf = _windows(load, avail, unit, cap, lo, dur, count, gang, step)
    want = []
    for k in range(count):
        a = lo + k * dur
        f = _walk_fit(vf, a, a + dur, gang)
        if f > 0:
            end = a + dur
            want.append((_walk_cost(lf, a, a + dur, 0, gang, step, cap), end if left else -end, k, k + 1, f))
    want.sort()
    got = list(CheapestFirst(w, left))
    assert got == want
    # read one at a time, the same (a fresh order, read lazily up to each index)
    c = CheapestFirst(w, left)
    assert [c[i] for i in range(len(want))] == want
    with pytest.raises(NoMoreRuns):
        c[len(want)]


@settings(max_examples=300, deadline=None)
@given(**shape, gangs=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 9)), min_size=1, max_size=6),
       every=st.integers(1, 3), asks=st.integers(1, 6))
def test_costs_and_integrals_are_the_walks(load, avail, unit, cap, lo, dur, count, gang, step, gangs, every, asks):
    """The integrals are the walk's exact ones, the costs summed in a batch and with the stage's
    gangs on a candidate (rows summed ahead) the walk's float sums, to the last bit."""
    w, lf, _vf = _windows(load, avail, unit, cap, lo, dur, count, gang, step)
    w.every, w.asks = every, asks
    assert w.integrals.tolist() == integrals_walk(w.lt.tolist(), w.lv[:, 0].tolist(), lo, dur, count)
    ks = np.arange(count, dtype=np.int64)
    walked = [_walk_cost(lf, lo + k * dur, lo + (k + 1) * dur, 0, gang, step, cap) for k in range(count)]
    assert w.costs(ks) == walked
    assert [w.cost_walk(k, 0) for k in range(count)] == walked
    for k, n in gangs:
        k %= count
        w.add(k, n)
        a = lo + k * dur
        n = w.counts[k]
        assert w.cost(k, every, asks) == _walk_cost(lf, a, a + dur, n, gang, step, cap) == w.cost_walk(k, n)


@settings(max_examples=300, deadline=None)
@given(**shape, gangs=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 4)), max_size=5),
       x=st.integers(0, 1100), span=st.integers(0, 300))
def test_negative_is_the_walk_over_every_instant(load, avail, unit, cap, lo, dur, count, gang, step, gangs, x, span):
    """Whether (availability - the stage's placements) is negative somewhere in [x, y], against a
    walk over every instant; one candidate's range [a, a + dur] as the allocator asks for it too."""
    w, _lf, vf = _windows(load, avail, unit, cap, lo, dur, count, gang, step)
    for k, n in gangs:
        w.add(k % count, n)
    hi = lo + count * dur

    def walked(x: int, y: int) -> bool:
        for t in range(x, y + 1):
            f = vf.at(t)
            k = (t - lo) // dur
            n = w.counts.get(k, 0) if 0 <= k < count else 0
            if f[0] < gang[0] * n or f[1] < gang[1] * n:
                return True
        return False

    x = lo + x % (hi - lo + 1)
    y = min(hi, x + span)
    assert w.negative(x, y) == walked(x, y)
    assert w.negative_walk(x, y) == walked(x, y)
    for k in range(count):
        a = lo + k * dur
        assert w.negative(a, a + dur) == walked(a, a + dur)


# -- whole plans ---------------------------------------------------------------------------------
@pytest.mark.parametrize("left", [True, False])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    step=st.sampled_from([1000, 700, 250]),
    calc=st.sampled_from(["default", "default", "dominant"]),
    capacity=st.tuples(st.integers(4, 16).map(lambda k: k * 1024), st.integers(4, 16)),
    loads=st.lists(existing, max_size=14),
    drop=st.integers(0, 3),
    capped=st.booleans(),
    jobs=st.lists(job, min_size=1, max_size=3),
    use_old=st.integers(-1, 1),
    grow=st.integers(1, 40),
)
def test_bounded_windows_place_exactly_like_array_windows_and_the_walk(
    left, step, calc, capacity, loads, drop, capped, jobs, use_old, grow
):
    """Random plans (periodic reservations, off-grid pieces, over-commitment after a capacity drop,
    per-user caps, an old version counted as free) and definitions of one to three stages of
    several gangs: the same reservation, or the same refusal, from all three evaluations."""
    plan, old = random_plan(capacity, capped, step, calc, loads, drop, use_old, True)
    for args in jobs:
        d = definition(*args)
        with pytest.MonkeyPatch.context() as m:
            # every stage the bounded windows can take, whatever its number of candidates
            m.setattr(bounded_windows, "MIN_COUNT", 1)
            m.setattr(bounded_windows, "RUNS_FACTOR", 10**9)
            m.setattr(bounded_windows, "GROW", grow)
            bounded = outcome(left, plan, d, old)
            m.setattr(BoundedWindows, "make", classmethod(lambda cls, *a, **k: None))
            arrays = outcome(left, plan, d, old)
            m.setattr(ArrayWindows, "make", classmethod(lambda cls, *a, **k: None))
            walk = outcome(left, plan, d, old)
        assert bounded == arrays == walk


def test_the_service_shape_is_read_from_bounds():
    """The service's submission (one 1 GB gang for one step, due in minutes, a plan of
    one-step reservations at off-grid times) takes the bounded windows, and the cheapest window
    is summed without summing them all."""
    plan = make_plan((128 * 1024, 32), CapacityOverTimePolicy(), step=1000)
    for n in range(1, 400):
        a = 1_000_000 + n * 997
        plan.add_reservation(ReservationAllocation(rid(n), "alice", None, a, a + 1000, [(a, a + 1000, (1024, 1))]),
                             is_recovering=True)
    d = ReservationDefinition(1_000_333, 1_000_333 + 600_000, (Stage((1024, 1), 1, 1, 1000),), 1, "t", 0, "0")
    seen: list[CheapestFirst] = []
    real = BoundedWindows.runs

    def runs(self, left):
        c = real(self, left)
        seen.append(c)
        return c

    mp = pytest.MonkeyPatch()
    mp.setattr(BoundedWindows, "runs", runs)
    try:
        got = outcome(True, plan, d, None)
    finally:
        mp.undo()
    assert len(seen) == 1
    assert seen[0].summed < seen[0].w.count // 4
    # the first empty window from the arrival on: past the last reservation, which ends at 1,398,803
    assert got[3] == [(1_399_333, 1_400_333, (1024, 1))]


def _count_made(m: pytest.MonkeyPatch, made: list[bool]) -> None:
    """Make `BoundedWindows.make` note in `made`, call by call, whether it answered (not None)."""
    real = BoundedWindows.make.__func__  # type: ignore[attr-defined]

    def counted(cls, *a, **k):
        w = real(cls, *a, **k)
        made.append(w is not None)
        return w

    m.setattr(BoundedWindows, "make", classmethod(counted))


@pytest.mark.parametrize("left", [True, False])
def test_a_job_of_several_gangs_and_stages_takes_the_bounded_windows(left):
    """Stages of many gangs (costs asked for again after each placement, levels grown) on a
    busy plan: the bounded windows are made for the first stage and place as `ArrayWindows` does."""
    plan = make_plan((16 * 1024, 16), CapacityOverTimePolicy(0.75, 1.0, T), step=1000, max_periodicity=T)
    for n in range(1, 120):
        a = (n * 7919) % 200_000
        size = (1 + n % 5) * 512
        plan.add_reservation(ReservationAllocation(rid(n), "alice" if n % 3 else "bob", None, a, a + 1500 + n % 7 * 333,
                                                   [(a, a + 1500 + n % 7 * 333, (size, 1 + n % 2))]),
                             is_recovering=True)
    d = ReservationDefinition(3_333, 190_000, (Stage((1024, 1), 40, 2, 2000), Stage((2048, 1), 9, 1, 5000)),
                              1, "t", 0, "0")
    made: list[bool] = []
    with pytest.MonkeyPatch.context() as m:
        _count_made(m, made)
        bounded = outcome(left, plan, d, None)
        m.setattr(BoundedWindows, "make", classmethod(lambda cls, *a, **k: None))
        arrays = outcome(left, plan, d, None)
    assert made[0]
    assert bounded == arrays
    assert bounded[3]  # placed


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("arrival", [0, 2**62 + 5_000, 2**63 - 2**59])
def test_stage_windows_up_to_long_max_place_as_array_windows(left, arrival):
    """Candidates whose bounds reach Long.MAX (a stage of 40 long windows at the end of time, over
    an empty load; from time 0, windows too long for exact integrals): the same placement as
    `ArrayWindows`."""
    plan = make_plan((8192, 8), NoPolicy())
    plan._mirrored, plan._mirrors_off = True, False
    a = arrival + 3_000 if arrival == 0 else arrival - 9_000
    plan.add_reservation(ReservationAllocation(rid(1), "alice", None, a, a + 6_000, [(a, a + 6_000, (4096, 4))]),
                         is_recovering=True)
    # (the availability is read up to deadline + 1, which int64 must hold for the arrays)
    deadline = 2**63 - 2
    dur = (deadline - arrival) // 40 // 1000 * 1000
    d = ReservationDefinition(arrival, deadline, (Stage((1024, 1), 3, 1, dur),), 1, "t", 0, "0")
    made: list[bool] = []
    with pytest.MonkeyPatch.context() as m:
        m.setattr(bounded_windows, "MIN_COUNT", 1)
        m.setattr(bounded_windows, "RUNS_FACTOR", 10**9)
        _count_made(m, made)
        bounded = outcome(left, plan, d, None)
        m.setattr(BoundedWindows, "make", classmethod(lambda cls, *a, **k: None))
        arrays = outcome(left, plan, d, None)
    assert bounded == arrays
    if arrival > 0:
        # the bounded windows answered, with bounds up to Long.MAX
        assert made == [True]
