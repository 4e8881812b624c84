"""The plan's numpy load mirrors against its step functions (the reference): identical breakpoints.

A `StepArrays` takes the same edits as a `StepFunction` (a `PeriodicStepArrays` as a
`PeriodicStepFunction`, wrapping included) and must hold the same canonical breakpoints after
every edit, and read any window as `segments` reads it. A plan keeps one per load; through adds,
deletes, updates and rollbacks they must stay equal to the step functions, user by user, and the
committed load read from them must be `committed_over`'s. The array checks built on them
(`fits_under`, NoOverCommit's validation) must answer as the walks they replace.
"""

from __future__ import annotations

from contextlib import suppress

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import make_plan, rid

from apportion.reservation import plan as plan_module
from apportion.reservation.exceptions import PlanIllegalArgument, PlanningException
from apportion.reservation.periodic import PeriodicStepFunction
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.policies import CapacityOverTimePolicy
from apportion.reservation.resmath import LONG_MAX, rsub
from apportion.reservation.steparrays import (
    MAX_VALUE,
    VALUE_BOUND,
    PeriodicStepArrays,
    StepArrays,
    arrays_of,
    arrays_of_walk,
    compact,
    compact_free,
    fits_under,
    fits_under_merged,
    free_of_one,
    one_function,
    running,
    running_merged,
    running_one,
    window,
    window_compact,
)
from apportion.reservation.stepfn import StepFunction, merge_pieces, segments

piece = st.tuples(st.integers(-30, 130), st.integers(1, 60), st.integers(-3, 6), st.integers(-1, 3))
edits = st.lists(st.tuples(st.lists(piece, min_size=1, max_size=4), st.integers(0, 3)), min_size=1, max_size=10)
windows = st.lists(st.tuples(st.integers(-80, 200), st.integers(0, 150)), min_size=1, max_size=4)


def _read(k, changes):
    """A mirror's read (time s, then the changes inside) as `segments` gives it: running sums."""
    return k.tolist(), [tuple(x) for x in np.cumsum(changes, axis=0).tolist()]


@settings(max_examples=300, deadline=None)
@given(edits=edits, windows=windows, period=st.sampled_from([7, 50, 100]))
def test_mirrors_take_every_edit_like_the_step_functions(edits, windows, period):
    f, a = StepFunction(), StepArrays()
    pf, pa = PeriodicStepFunction(period), PeriodicStepArrays(period)
    done: list[list[tuple[int, int, tuple[int, int]]]] = []
    for ps, undo in edits:
        if undo == 0 and done:
            pcs, sign = done.pop(), -1  # removing what was added restores the breakpoints
        else:
            pcs = [(x, x + min(ln, period), (m, c)) for x, ln, m, c in ps]
            done.append(pcs)
            sign = 1
        for x, y, r in pcs:
            rr = r if sign > 0 else (-r[0], -r[1])
            f.add(x, y, rr)
            pf.add(x, y, rr)
        assert a.add_pieces(pcs, sign)
        assert pa.add_pieces(pcs, sign)
        assert a.breakpoints() == f.breakpoints()
        assert pa.base.breakpoints() == pf.base.breakpoints()
        for s, n in windows:
            e = s + n + 1
            assert _read(*a.breaks(s, e)) == segments(f, s, e)
            assert _read(*pa.breaks(s, e)) == segments(pf, s, e)


def test_mirrors_refuse_what_int64_cannot_hold():
    a = StepArrays()
    assert not a.add_pieces([(0, 10, (VALUE_BOUND + 1, 0))], 1)
    assert not a.add_pieces([(0, LONG_MAX + 1, (1, 0))], 1)
    assert a.is_empty() and a.reach == 0
    assert a.add_pieces([(0, LONG_MAX, (1, 0))], 1)
    assert a.breakpoints() == [(0, (1, 0)), (LONG_MAX, (0, 0))]
    assert a.add_pieces([(5, 6, (VALUE_BOUND - 2, 0))], 1)
    # the reach counts every edit's size, removals too: it bounds any value the edits can make
    assert not a.add_pieces([(5, 6, (VALUE_BOUND - 2, 0))], -1)
    assert a.breakpoints() == [(0, (1, 0)), (5, (VALUE_BOUND - 1, 0)), (6, (1, 0)), (LONG_MAX, (0, 0))]
    assert not PeriodicStepArrays(10).add_pieces([(0, 11, (1, 1))], 1)


T = 20_000
booking = st.tuples(
    st.lists(st.tuples(st.integers(0, 39), st.integers(1, 10), st.integers(0, 4), st.integers(0, 3)),
             min_size=1, max_size=3),
    st.sampled_from(["alice", "bob", "carol"]),
    st.sampled_from([0, 0, 5_000, 10_000, 20_000]),
    st.sampled_from(["add", "add", "delete", "update"]),
)


def _intervals(ps, period):
    """A drawn booking's pieces as plan intervals (folded into one period when periodic), and their span."""
    ivs = [(a * 500, (a + ln) * 500, (m * 1024, c)) for a, ln, m, c in ps]
    if period:
        ivs = [(a % period, min(a % period + (b - a), period), r) for a, b, r in ivs]
    return ivs, min(a for a, _b, _r in ivs), max(b for _a, b, _r in ivs)


def _mirrored_plan(cap: tuple[int, int]) -> InMemoryPlan:
    """A plan whose mirrors are on from the start, however small it stays."""
    plan = make_plan(cap, CapacityOverTimePolicy(0.75, 1.0, T), max_periodicity=T)
    plan._mirrored = True
    return plan


def _in_sync(plan: InMemoryPlan) -> None:
    assert plan._mirrored
    assert plan._load_arrays.breakpoints() == plan.load.breakpoints()
    assert plan._periodic_arrays.base.breakpoints() == plan.periodic_load.base.breakpoints()
    # a user's mirrors are kept once read (a cap below the capacity reads them), and follow its loads
    assert set(plan._user_arrays) <= set(plan.user_load)
    assert set(plan._user_periodic_arrays) <= set(plan.user_periodic)
    for u, a in plan._user_arrays.items():
        assert a.breakpoints() == plan.user_load[u].breakpoints()
    for u, pa in plan._user_periodic_arrays.items():
        assert pa.base.breakpoints() == plan.user_periodic[u].base.breakpoints()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bookings=st.lists(booking, min_size=1, max_size=10), windows=windows, tight=st.booleans())
def test_a_plans_mirrors_follow_its_loads(bookings, windows, tight):
    # tight: a small capacity and per-user cap, so that updates get refused and rolled back
    cap = (4 * 1024, 4) if tight else (64 * 1024, 64)
    plan = _mirrored_plan(cap)
    for n, (ps, user, period, what) in enumerate(bookings, start=1):
        ivs, s, e = _intervals(ps, period)
        target = rid(1 + n % 3) if what != "add" else rid(n + 10)
        try:
            if what == "delete":
                plan.delete_reservation(target)
            elif what == "update" and plan.get(target) is not None:
                old = plan.get(target)
                assert old is not None
                plan.update_reservation(ReservationAllocation(target, old.user, None, s, e, ivs, period=period))
            else:
                plan.add_reservation(ReservationAllocation(target, user, None, s, e, ivs, period=period))
        except (PlanningException, PlanIllegalArgument):
            pass
        _in_sync(plan)
        for k, (s0, n0) in enumerate(windows):
            if k % 2:
                # an availability over a range around it first: the committed load is read from its sums
                with suppress(PlanningException):
                    plan.available_arrays(user, None, s0 * 200 - 700 * k, (s0 + n0) * 200 + 300 * k)
            got = plan.committed_arrays(s0 * 200, (s0 + n0) * 200)
            assert got is not None
            want = plan.committed_over(s0 * 200, (s0 + n0) * 200).breakpoints()
            assert [(t, tuple(v)) for t, v in zip(got[0].tolist(), got[1].tolist())] == want


def _function(points):
    t = 0
    out = []
    for dt, m, c in points:
        t += dt
        out.append((t, (m, c)))
    return StepFunction(out)


fn_points = st.lists(st.tuples(st.integers(1, 20), st.integers(-2, 6), st.integers(-1, 4)), max_size=12)


@settings(max_examples=400, deadline=None)
@given(f=fn_points, g=fn_points, s=st.integers(-5, 120), n=st.integers(-3, 120))
def test_fits_under_checks_what_the_merge_walk_checks(f, g, s, n):
    ff, gg = _function(f), _function(g)
    e = s + n
    want = all(r[0] >= 0 and r[1] >= 0 for _a, _b, r in merge_pieces(gg, ff, s, e, rsub))
    fa, ga = arrays_of(ff), arrays_of(gg)
    assert fa is not None and ga is not None
    assert fits_under(fa, ga, s, e) == want
    assert fits_under_merged(fa, ga, s, e) == want
    # the other way round: many breakpoints in f, few in g
    want = all(r[0] >= 0 and r[1] >= 0 for _a, _b, r in merge_pieces(ff, gg, s, e, rsub))
    assert fits_under(ga, fa, s, e) == fits_under_merged(ga, fa, s, e) == want


big_value = st.one_of(st.integers(-6, 6), st.sampled_from([MAX_VALUE - 1, MAX_VALUE, MAX_VALUE + 1, -MAX_VALUE,
                                                             -MAX_VALUE - 1, 1 << 63, -(1 << 63) - 1, 1 << 70]))


@settings(max_examples=400, deadline=None)
@given(points=st.lists(st.tuples(st.integers(-(1 << 64), 1 << 64), big_value, big_value), max_size=10),
       k=st.sampled_from([2, 3]))
def test_arrays_of_is_the_walk(points, k):
    """The bounds checked on the arrays refuse exactly what the value-by-value walk refuses."""
    f = StepFunction([(t, (m, c) if k == 2 else (m, c, 0)) for t, m, c in points], zero=(0,) * k)
    want, got = arrays_of_walk(f), arrays_of(f)
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
        assert got[0].dtype == want[0].dtype and got[1].shape == want[1].shape


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bookings=st.lists(booking, min_size=1, max_size=8), tight=st.booleans())
def test_no_overcommit_validates_on_arrays_as_on_the_walk(bookings, tight):
    cap = (4 * 1024, 4) if tight else (16 * 1024, 16)
    plan = _mirrored_plan(cap)
    for n, (ps, user, period, what) in enumerate(bookings, start=1):
        ivs, s, e = _intervals(ps, period)
        target = rid(1 + n % 3) if what == "update" and plan.get(rid(1 + n % 3)) is not None else rid(n + 10)
        old = plan.get(target)
        res = ReservationAllocation(target, old.user if old is not None else user, None, s, e, ivs, period=period)
        outcomes = []
        for arrays in (True, False):
            plan._avail_cache = None
            saved = plan.available_arrays
            if not arrays:
                plan.available_arrays = lambda *a, **k: None  # type: ignore[method-assign]
            try:
                plan.policy.validate(plan, res)
                outcomes.append("ok")
            except PlanningException as x:
                outcomes.append(f"{type(x).__name__}: {x}")
            finally:
                plan.available_arrays = saved  # type: ignore[method-assign]
        assert outcomes[0] == outcomes[1]
        if outcomes[0] == "ok":
            if old is not None:
                plan.update_reservation(res)
            else:
                plan.add_reservation(res)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bookings=st.lists(booking, min_size=1, max_size=10))
def test_batched_load_edits_match_the_one_by_one_adds(bookings):
    """`_apply_loads` (one walk per load) leaves every load as `_apply_loads_one_by_one` does."""
    plans = [_mirrored_plan((64 * 1024, 64)) for _ in range(2)]
    plans[1]._apply_loads = plans[1]._apply_loads_one_by_one  # type: ignore[method-assign]
    for n, (ps, user, period, what) in enumerate(bookings, start=1):
        ivs, s, e = _intervals(ps, period)
        for plan in plans:
            if what == "delete" and plan.get(rid(1 + n % 3)) is not None:
                plan.delete_reservation(rid(1 + n % 3))
            elif plan.get(rid(1 + n % 3)) is None:
                plan.add_reservation(ReservationAllocation(rid(1 + n % 3), user, None, s, e, ivs, period=period),
                                     is_recovering=True)
        a, b = plans
        assert a.load == b.load
        assert a.periodic_load == b.periodic_load
        assert a.user_load == b.user_load
        assert a.user_periodic == b.user_periodic
        _in_sync(a)
        _in_sync(b)


def test_a_piece_longer_than_the_period_fails_as_it_always_did():
    plans = [_mirrored_plan((64 * 1024, 64)) for _ in range(2)]
    plans[1]._apply_loads = plans[1]._apply_loads_one_by_one  # type: ignore[method-assign]
    errors = []
    for plan in plans:
        plan.add_reservation(ReservationAllocation(rid(1), "alice", None, 0, 4000, [(0, 4000, (1024, 1))],
                                                   period=5_000), is_recovering=True)
        long = StepFunction.from_intervals([(1000, 2000, (1024, 1)), (2000, 2000 + 2 * T, (2048, 1))])
        bad = ReservationAllocation(rid(2), "alice", None, 0, 2 * T, [], period=5_000, rle=long)
        try:
            plan.add_reservation(bad, is_recovering=True)
        except ValueError as e:
            errors.append(str(e))
        assert not plan._mirrored and plan.user_integral_bound("alice", 0, 1) is None
    assert len(errors) == 2 and errors[0] == errors[1]
    a, b = plans
    assert (a.periodic_load, a.user_periodic) == (b.periodic_load, b.user_periodic)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bookings=st.lists(booking, min_size=4, max_size=12), threshold=st.integers(1, 12))
def test_a_growing_plan_builds_its_mirrors_from_its_loads(bookings, threshold):
    """Small plans answer from their step functions; the first query that finds MIRROR_MIN
    breakpoints builds the mirrors from them, and every edit after keeps them in sync."""
    saved = plan_module.MIRROR_MIN
    plan_module.MIRROR_MIN = threshold
    try:
        _grow(bookings, threshold)
    finally:
        plan_module.MIRROR_MIN = saved


def _grow(bookings, threshold) -> None:
    plan = make_plan((64 * 1024, 64), CapacityOverTimePolicy(0.75, 1.0, T), max_periodicity=T)
    for n, (ps, user, period, _what) in enumerate(bookings, start=1):
        ivs, s, e = _intervals(ps, period)
        plan.add_reservation(ReservationAllocation(rid(n), user, None, s, e, ivs, period=period), is_recovering=True)
        size = len(plan.load) + len(plan.periodic_load.base)
        was = plan._mirrored
        got = plan.committed_arrays(0, 30_000)
        assert plan._mirrored == (was or size >= threshold)
        assert (got is not None) == plan._mirrored
        if plan._mirrored:
            _in_sync(plan)


@settings(max_examples=300, deadline=None)
@given(edits=edits, s=st.integers(-80, 200), n=st.integers(0, 150))
def test_one_source_sums_are_the_merged_sums(edits, s, n):
    """`running_one` (one function read in one block: no merge) against `running_merged`."""
    a = StepArrays()
    for ps, _undo in edits:
        a.add_pieces([(x, x + ln, (m, c)) for x, ln, m, c in ps], 1)
    read = a.read(s, s + n)
    want_t, want_v = running_merged(s, [(read, 0)], 2)
    got_t, got_v = running_one(s, read)
    assert got_t.tolist() == want_t.tolist()
    assert got_v.tolist() == want_v.tolist()
    assert running(s, [(read, 0)], 2)[1].tolist() == want_v.tolist()
    # capacity - the sums, compacted and closed, in one pass: as compact of the subtraction
    cap = (7, 5)
    t, free, committed = free_of_one(s, read, cap, s + n + 3)
    assert committed.tolist() == want_v.tolist()
    kt, kv = compact_free(t, free)
    rt, rv = compact(want_t, np.subtract(cap, want_v), s + n + 3)
    assert kt.tolist() == rt.tolist() and kv.tolist() == rv.tolist()
    # each sum differs from the one before (what `compact(..., distinct=True)` relies on)
    assert one_function([(read, 0)], 2)
    rows = got_v.tolist()
    assert all(x != y for x, y in zip(rows, rows[1:]))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2)), min_size=1, max_size=30),
       distinct=st.booleans(), view=st.booleans())
def test_compact_keeps_the_times_where_the_value_changes(values, distinct, view):
    """`compact` against a loop: the first time if its value is not zero, then every time whose value
    differs from the one before, closed with zero at the end when the last kept value is not zero.
    Rows that all change (copied whole) and rows with repeats (gathered); the input as a column view
    as the availability passes it; the answer owns its memory."""
    if distinct:  # every row differs from the one before (a canonical function's sums)
        values = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
    t = np.arange(0, 10 * len(values), 10, dtype=np.int64)
    a = np.array(values, dtype=np.int64).reshape(-1, 2)
    if view:
        wide = np.zeros((len(values), 4), dtype=np.int64)
        wide[:, 0:2] = a
        a = wide[:, 0:2]
    end = 10 * len(values) + 5
    want_t, want_v = [], []
    prev = (0, 0)
    for time, v in zip(t.tolist(), map(tuple, a.tolist())):
        if v != prev:
            want_t.append(time)
            want_v.append(v)
            prev = v
    if prev != (0, 0):
        want_t.append(end)
        want_v.append((0, 0))
    # rows known to differ (a mirror's sums) are compacted without comparing them
    for kt, kv in [compact(t, a, end)] + ([compact(t, a, end, distinct=True)] if distinct else []):
        assert kt.tolist() == want_t and [tuple(v) for v in kv.tolist()] == want_v
        assert kv.shape == (len(want_t), 2) and kt.dtype == kv.dtype == np.int64
        assert not np.shares_memory(kt, t) and not np.shares_memory(kv, a)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2)), min_size=1, max_size=30),
       s=st.integers(-20, 320), n=st.integers(0, 120))
def test_window_compact_is_compact_of_the_window(values, s, n):
    """`window_compact` against its reference, `compact(window(...))`, on rows that each differ from
    the one before (a mirror's running sums), windows before, across and after the rows."""
    values = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
    t = np.arange(0, 10 * len(values), 10, dtype=np.int64)
    a = np.array(values, dtype=np.int64).reshape(-1, 2)
    want_t, want_v = compact(*window(t, a, s, s + n + 1), s + n + 1)
    got_t, got_v = window_compact(t, a, s, s + n + 1)
    assert got_t.tolist() == want_t.tolist() and got_v.tolist() == want_v.tolist()
    assert got_v.shape == (len(got_t), 2) and not np.shares_memory(got_v, a) and not np.shares_memory(got_t, t)


def test_a_users_mirrors_are_built_when_a_cap_reads_them_and_follow_the_edits_after():
    """Under a per-user cap of the whole capacity the user's load is never read, so no user mirror
    is kept; under a cap that can bind, the first availability for a user builds that user's
    mirrors from the step functions, later edits keep them, and the answers are the walk's."""
    for inst, built in ((1.0, False), (0.75, True)):
        plan = _mirrored_plan((16 * 1024, 16))
        plan.policy = CapacityOverTimePolicy(inst, 1.0, T)
        plan.add_reservation(ReservationAllocation(rid(1), "alice", None, 0, 4000, [(0, 4000, (2048, 2))]))
        plan.add_reservation(ReservationAllocation(rid(2), "alice", None, 0, 5000, [(0, 5000, (1024, 1))],
                                                   period=10_000))
        plan.add_reservation(ReservationAllocation(rid(3), "bob", None, 1000, 3000, [(1000, 3000, (4096, 1))]))
        assert not plan._user_arrays and not plan._user_periodic_arrays
        got = plan.available_arrays("alice", None, 0, 9000)
        assert got is not None
        want = plan._available_uncached("alice", None, 0, 9000, 0).breakpoints()
        assert [(t, tuple(v)) for t, v in zip(got[0].tolist(), got[1].tolist())] == want
        assert set(plan._user_arrays) == ({"alice"} if built else set())
        assert set(plan._user_periodic_arrays) == ({"alice"} if built else set())
        plan.add_reservation(ReservationAllocation(rid(4), "alice", None, 2000, 6000, [(2000, 6000, (1024, 1))]))
        plan.delete_reservation(rid(2))
        _in_sync(plan)
        assert set(plan._user_periodic_arrays) == set()  # alice's periodic load is gone
        got = plan.available_arrays("alice", None, 0, 9000)
        assert got is not None
        want = plan._available_uncached("alice", None, 0, 9000, 0).breakpoints()
        assert [(t, tuple(v)) for t, v in zip(got[0].tolist(), got[1].tolist())] == want
