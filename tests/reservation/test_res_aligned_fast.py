"""The aligned allocator's vectorised window costs and fits against its scalar walk: identical results.

`LowCostAlignedAllocator` evaluates the candidate windows on numpy arrays (`ArrayWindows`) when it can,
and walks the pieces one by one otherwise. Random plans (periodic reservations, off-grid pieces,
over-commitment after a capacity drop so that the merges refuse, per-user caps) and random definitions
must give the same reservation, or the same refusal, both ways, for both directions.
"""

from __future__ import annotations

import numpy as np
import pytest
from aligned_cases import definition, existing, job, outcome, random_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import make_plan, rid

from apportion.reservation.agents import aligned
from apportion.reservation.agents.aligned_arrays import ArrayWindows
from apportion.reservation.definition import ReservationDefinition, Stage
from apportion.reservation.plan import ReservationAllocation
from apportion.reservation.policies import NoPolicy
from apportion.reservation.resmath import Calculator


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("mirrors", [True, False])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    step=st.sampled_from([1000, 700]),
    calc=st.sampled_from(["default", "dominant"]),
    capacity=st.tuples(st.integers(4, 16).map(lambda k: k * 1024), st.integers(4, 16)),
    loads=st.lists(existing, max_size=14),
    drop=st.integers(0, 3),
    capped=st.booleans(),
    jobs=st.lists(job, min_size=1, max_size=3),
    use_old=st.integers(-1, 1),
)
def test_vectorised_windows_place_exactly_like_the_scalar_walk(
    monkeypatch, left, mirrors, step, calc, capacity, loads, drop, capped, jobs, use_old
):
    plan, old = random_plan(capacity, capped, step, calc, loads, drop, use_old, mirrors)
    for args in jobs:
        d = definition(*args)
        fast = outcome(left, plan, d, old)
        with monkeypatch.context() as m:
            m.setattr(aligned.ArrayWindows, "make", classmethod(lambda cls, *a: None))
            scalar = outcome(left, plan, d, old)
        assert fast == scalar


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(["default", "dominant"]),
    cap=st.tuples(st.integers(1, 2**27), st.integers(1, 2**12)),
    vals=st.lists(st.tuples(st.integers(0, 2**27), st.integers(0, 2**12)), min_size=1, max_size=20),
    lens=st.integers(1, 10**7),
    step=st.sampled_from([1, 7, 1000]),
)
def test_vectorised_terms_round_like_calc_ratio(kind, cap, vals, lens, step):
    """Each piece's term is calc.ratio(value, capacity) * length / step to the last bit, and a window's
    cost is their sum in time order."""
    calc = Calculator(kind)
    w = ArrayWindows(0, 1, 1, (1, 1), step, kind != "default", cap)
    ls = [lens + 13 * i for i in range(len(vals))]
    v = np.array(vals, dtype=np.int64)
    terms = w._terms(v, np.array(ls, dtype=np.float64)).tolist()
    want = [calc.ratio(v, cap) * n / step for v, n in zip(vals, ls)]
    assert terms == want
    total = 0.0
    for t in want:
        total += t
    assert float(np.add.accumulate(np.array(terms))[-1]) == total


@pytest.mark.parametrize("left", [True, False])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    step=st.sampled_from([1000, 700, 1]),
    calc=st.sampled_from(["default", "dominant"]),
    capacity=st.tuples(st.integers(4, 16).map(lambda k: k * 1024), st.integers(4, 16)),
    loads=st.lists(existing, max_size=10),
    drop=st.integers(0, 3),
    capped=st.booleans(),
    jobs=st.lists(job, min_size=1, max_size=3),
    use_old=st.integers(-1, 1),
)
def test_candidate_runs_place_exactly_like_one_entry_per_candidate(
    monkeypatch, left, step, calc, capacity, loads, drop, capped, jobs, use_old
):
    """Candidates kept as runs between change points (long stage windows, issue 14 item 12) give
    the same reservation, or the same refusal, as one heap entry per candidate window."""
    plan, old = random_plan(capacity, capped, step, calc, loads, drop, use_old)
    for args in jobs:
        d = definition(*args)
        with monkeypatch.context() as m:
            # the walk (the arrays always run): runs against one entry per candidate
            m.setattr(aligned.ArrayWindows, "make", classmethod(lambda cls, *a: None))
            each = outcome(left, plan, d, old)
            m.setattr(aligned, "_RUNS_MIN", 0)
            m.setattr(aligned, "_RUNS_FACTOR", 0)
            runs = outcome(left, plan, d, old)
        assert runs == each


def test_candidate_runs_cut_at_change_points():
    # times on a candidate's start cut before it; inside one, they make it a run of its own
    assert aligned.candidate_runs(0, 10, 10, [20, 35, 100, -5, 0]) == [(0, 2), (2, 3), (3, 4), (4, 10)]
    assert aligned.candidate_runs(5, 10, 3, []) == [(0, 3)]


@pytest.mark.parametrize("left", [True, False])
def test_a_deadline_at_long_max_is_planned_from_the_change_points(left):
    """`plan replay` with deadline Long.MAX under the aligned agents grew past 11 GB (one
    candidate per step of the window) and aligned-right raised IndexError at Long.MAX: the work
    is now bounded by the plan's change points."""
    plan = make_plan((8192, 8), NoPolicy())
    plan.add_reservation(ReservationAllocation(rid(1), "alice", None, 5_000, 9_000, [(5_000, 9_000, (8192, 8))]),
                         is_recovering=True)
    d = ReservationDefinition(0, 2**63 - 1, (Stage((1024, 1), 3, 1, 1000),), 1, "t", 0, "0")
    r = outcome(left, plan, d, None)
    if left:
        # the cheapest windows are the empty ones, earliest first
        assert r[3] == [(0, 3000, (1024, 1))]
    else:
        assert r[3] == [(2**63 - 1 - 3000, 2**63 - 1, (1024, 1))]


pieces_st = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 30), st.integers(-2, 6), st.integers(-2, 6)),
                     max_size=6)


def _fn(ps):
    from apportion.reservation.stepfn import StepFunction

    return StepFunction.from_intervals([(a, a + n, (m * 512, v)) for a, n, m, v in ps])


@settings(max_examples=300, deadline=None)
@given(load=pieces_st, avail=pieces_st, placed=pieces_st, kind=st.sampled_from(["default", "dominant"]),
       s=st.integers(0, 20), span=st.integers(1, 70), cut=st.tuples(st.integers(0, 70), st.integers(1, 40)),
       best=st.integers(1, 9), step=st.sampled_from([1, 7]))
def test_window_cost_and_fit_are_the_merge_pieces_walk(load, avail, placed, kind, s, span, cut, best, step):
    """The inlined two-cursor walks of the aligned allocator against the reference walk
    (merge_pieces, equal neighbours joined): the same float sum in the same order, the same fit
    or the same refusal."""
    from apportion.reservation.resmath import radd, rsub
    from apportion.reservation.stepfn import merge_pieces, segments

    d = s + span
    a = s + cut[0] % span
    b = min(d, a + cut[1])
    calc = Calculator(kind)
    cap = (8192, 8)
    gang = (1024, 1)
    lf, vf, pf = _fn(load), _fn(avail), _fn(placed)
    lt, lv = segments(lf, s, d)
    vt, vv = segments(vf, s, d)
    pt, pv = segments(pf, s, d)
    for t in (lt, vt, pt):
        t.append(aligned._PAST_END)
    got = aligned.window_cost(lt, lv, pt, pv, a, b, step, {}, lambda r: calc.ratio(r, cap))
    runs: list[list] = []  # merge_pieces' pieces, equal neighbours joined (as trunk's merge leaves them)
    for x, y, r in merge_pieces(lf, pf, a, b, radd):
        if runs and runs[-1][2] == r:
            runs[-1][1] = y
        else:
            runs.append([x, y, r])
    want = 0.0
    for x, y, r in runs:
        want += calc.ratio(r, cap) * (y - x) / step
    assert got == want

    def gangs(r, cap_n):
        return calc.gangs(r, gang, cap_n)

    want_fit = best
    for _x, _y, r in merge_pieces(vf, pf, a, b, rsub):
        want_fit = min(want_fit, gangs(r, want_fit))
        if want_fit <= 0:
            break
    assert aligned.window_fit(vt, vv, pt, pv, a, b, best, gangs) == want_fit
    # the closed range [a, b]: the instant b too
    vt2, vv2 = segments(vf, s, d + 1)
    pt2, pv2 = segments(pf, s, d + 1)
    for t in (vt2, pt2):
        t.append(aligned._PAST_END)
    want_neg = any(r[0] < 0 or r[1] < 0 for _x, _y, r in merge_pieces(vf, pf, a, b + 1, rsub))
    assert aligned.window_negative(vt2, vv2, pt2, pv2, a, b) == want_neg
