"""The array form of a stage's candidates (`ArrayWindows`) against the walks it replaces, piece by piece.

A candidate's cost with n of the stage's gangs on it (read from rows summed ahead, or summed
again when the rows run out) must be the walk's float sum to the last bit, and the check after a
placement (from the runs' minima and the value where the candidate ends) must refuse exactly where
the walk over (availability - placements) finds a negative component. Random load, availability
(negative in places) and earlier placements; stages of a few candidates (one grid) and of many
(runs between change points).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.reservation.agents import aligned, aligned_arrays, merges
from apportion.reservation.agents.aligned_arrays import ArrayWindows
from apportion.reservation.agents.sorted_runs import NoMoreRuns, SortedRuns
from apportion.reservation.resmath import Calculator
from apportion.reservation.steparrays import arrays_of, window
from apportion.reservation.stepfn import StepFunction, segments

CAP = (8 * 512, 8)
pieces = st.lists(st.tuples(st.integers(0, 300), st.integers(1, 60), st.integers(-2, 6), st.integers(-2, 6)),
                  max_size=8)
# the availability: often negative, and often changing at the candidates' bounds
free = st.lists(st.tuples(st.integers(0, 60).map(lambda t: t * 5), st.integers(1, 12).map(lambda n: n * 5),
                          st.integers(-3, 4), st.integers(-3, 4)), max_size=10)


def _fn(ps: list[tuple[int, int, int, int]], scale: int = 512) -> StepFunction:
    return StepFunction.from_intervals([(a, a + n, (m * scale, v)) for a, n, m, v in ps])


def _windows(kind, load, avail, placed, lo, dur, count, gang, step, every, asks):
    calc = Calculator(kind)
    hi = lo + count * dur
    lf, vf, pf = _fn(load), _fn(avail, 1024), _fn([p for p in placed if p[2] >= 0 and p[3] >= 0])
    la, va = arrays_of(lf), arrays_of(vf)
    assert la is not None and va is not None
    w = ArrayWindows(lo, dur, count, gang, step, kind != "default", CAP, lambda r: calc.ratio(r, CAP))
    w.every, w.asks = every, asks
    ps, pv = segments(pf, lo, hi + 1)
    placed_before = len(ps) > 1 or any(pv[0])
    w.pt = np.array(ps, dtype=np.int64)
    w.pv = np.array(pv, dtype=np.int64).reshape(len(ps), 2)
    # as make() reads them (views from the first breakpoint at or before lo), or as window() does
    read = aligned_arrays._read if (lo + dur) % 2 else window
    lt, lv = read(*la, lo, hi)
    w.vt, w.vv = read(*va, lo, hi + 1)
    w._evaluate(lt, lv, placed_before)
    return w, calc, lf, vf, pf


common = dict(
    kind=st.sampled_from(["default", "dominant"]),
    # the availability of its own, or changing exactly where the load changes (as capacity - load)
    load=pieces, avail=st.one_of(free, pieces), placed=pieces,
    lo=st.sampled_from([0, 10, 20, 35]), dur=st.sampled_from([5, 10, 20, 30]), count=st.sampled_from([1, 2, 3, 5, 8, 17, 25]),
    gang=st.tuples(st.integers(1, 3).map(lambda k: k * 256), st.integers(1, 2)),
    step=st.sampled_from([1, 7]),
    every=st.integers(1, 3), asks=st.integers(1, 6),
)


@settings(max_examples=150, deadline=None)
@given(**common, gangs=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 12)), min_size=1, max_size=6))
def test_costs_ahead_are_the_walks_sum(kind, load, avail, placed, lo, dur, count, gang, step, every, asks, gangs):
    w, calc, lf, _vf, pf = _windows(kind, load, avail, placed, lo, dur, count, gang, step, every, asks)
    lt, lv = segments(lf, lo, lo + count * dur)
    lt.append(aligned._PAST_END)
    for k, n in gangs:
        k %= count
        a = lo + k * dur
        # the reference: the walk over the load and the placements with n gangs on [a, a + dur)
        mine = pf.copy()
        if n:
            mine.add(a, a + dur, (gang[0] * n, gang[1] * n))
        pt, pv = segments(mine, lo, lo + count * dur)
        pt.append(aligned._PAST_END)
        want = aligned.window_cost(lt, lv, pt, pv, a, a + dur, step, {}, lambda r: calc.ratio(r, CAP))
        w.counts = {k: n}
        assert w.cost(k, every, asks) == want
        assert w.cost_of(k, n) == want


@settings(max_examples=250, deadline=None)
@given(**common, gangs=st.lists(st.tuples(st.integers(0, 29), st.integers(1, 4)), max_size=8))
def test_the_check_after_a_placement_is_the_walks(kind, load, avail, placed, lo, dur, count, gang, step, every, asks,
                                                  gangs):
    w, _calc, _lf, vf, pf = _windows(kind, load, avail, placed, lo, dur, count, gang, step, every, asks)
    hi = lo + count * dur
    mine = pf.copy()
    counts: dict[int, int] = {}

    def walk(x: int, y: int) -> bool:
        vt, vv = segments(vf, lo, hi + 1)
        pt, pv = segments(mine, lo, hi + 1)
        vt.append(aligned._PAST_END)
        pt.append(aligned._PAST_END)
        return aligned.window_negative(vt, vv, pt, pv, x, y)

    # before anything is placed: the whole stage window, and its end instant alone (where an
    # earlier stage's placements start, allocating right)
    assert w.negative(lo, hi) == walk(lo, hi) == w.negative_walk(lo, hi)
    assert w.negative(hi, hi) == walk(hi, hi) == w.negative_walk(hi, hi)
    for k, n in gangs:
        k %= count
        a = lo + k * dur
        counts[k] = counts.get(k, 0) + n
        w.add(k, n)
        mine.add(a, a + dur, (gang[0] * n, gang[1] * n))
        assert w.counts == counts
        assert w.negative(a, a + dur) == walk(a, a + dur) == w.negative_walk(a, a + dur)
        assert w.negative(hi, hi) == walk(hi, hi) == w.negative_walk(hi, hi)


def test_the_check_after_a_placement_reads_the_instant_where_the_candidate_ends():
    """Trunk's merge over a candidate [a, b] includes the instant b: a negative availability
    there refuses the stage, on the last candidate (b = hi) as on any other, where the next
    candidate's own gangs count too."""
    # negative availability exactly at hi = 20, after the last candidate [10, 20)
    w, *_ = _windows("default", [], [(0, 20, 4, 4), (20, 5, -1, 0)], [], 0, 10, 2, (512, 1), 1, 1, 1)
    w.add(1, 1)
    assert w.negative(10, 20)
    assert not w.negative(0, 10)
    # candidate 1's gangs make the instant 10 (where candidate 0 ends) negative
    w, *_ = _windows("default", [], [(0, 20, 1, 4)], [], 0, 10, 2, (512, 1), 1, 1, 1)
    w.add(1, 3)
    assert w.negative(10, 20)
    w.add(0, 1)
    assert w.negative(0, 10)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 3).map(lambda c: c / 4), st.integers(-50, 50), st.integers(0, 9),
                               st.integers(1, 4)), max_size=80),
       reads=st.lists(st.integers(-100, 100), max_size=12))
def test_sorted_runs_hand_out_the_sorted_list(rows, reads):
    """`SortedRuns` (tuples made a chunk at a time when read) against the list it replaces; the
    first entry alone read first (a stage of one gang), then the others."""
    costs = np.array([c for c, _k, _p, _f in rows], dtype=np.float64)
    key = np.array([k for _c, k, _p, _f in rows], dtype=np.int64)
    p0 = np.array([p for _c, _k, p, _f in rows], dtype=np.int64)
    fits = np.array([f for _c, _k, _p, f in rows], dtype=np.int64)
    order = np.lexsort((key, costs))
    want = list(zip(costs[order].tolist(), key[order].tolist(), p0[order].tolist(), (p0 + 1)[order].tolist(),
                    fits[order].tolist()))
    # sorted up front, or (None) the first found by a minimum and the rest sorted when read
    for given_order in (order, None):
        runs = SortedRuns(given_order, costs, key, p0, p0 + 1, fits)
        assert len(runs) == len(want)
        for i in reads:
            if -len(want) <= i < len(want):
                assert runs[i] == want[i]
            else:
                with pytest.raises(NoMoreRuns):
                    runs[i]
        assert list(runs) == want
        assert runs[1:7] == want[1:7]
        if want:
            assert SortedRuns(given_order, costs, key, p0, p0 + 1, fits)[0] == want[0]


@settings(max_examples=300, deadline=None)
@given(sizes=st.sampled_from([3, 8, 9, 40]).flatmap(
           lambda most: st.lists(st.integers(1, most), min_size=1, max_size=60)),
       seed=st.integers(0, 1000))
def test_window_sums_add_each_windows_terms_in_order(sizes, seed):
    """`window_sums` against each window's terms added one after the other from 0.0 in Python: terms
    of both signs and zeros (never -0.0, which no cost term is), windows of a few terms (summed as
    padded columns) and of many."""
    rng = np.random.default_rng(seed)
    terms = rng.random(sum(sizes)) * 10.0 ** rng.integers(-8, 8, sum(sizes))
    terms *= rng.choice([-1.0, 1.0, 1.0, 0.0], sum(sizes))
    terms += 0.0  # a zero times -1.0 is -0.0: made +0.0
    first = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
    want = []
    for i, n in zip(first.tolist(), sizes):
        total = 0.0
        for x in terms[i:i + n].tolist():
            total += x
        want.append(total)
    assert merges.window_sums(terms, first).tolist() == want


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.lists(st.integers(-20, 60), max_size=25).map(sorted), min_size=1, max_size=4),
       counted=st.integers(0, 2), shift=st.sampled_from([0, 0, 1 << 60, -(1 << 61), (1 << 63) - 61, -(1 << 63) + 20]))
def test_the_grid_counts_each_parts_times_as_a_search_does(parts, counted, shift):
    """`grid` (one stable merge) against the union of the parts and a binary search per part;
    the first `counted` parts are not counted (the grid stands in their place). Times near the
    int64 bounds (Long.MAX ends a stage) are merged without packing the part numbers in."""
    arrays = [np.array([t + shift for t in p], dtype=np.int64) for p in parts]
    g, at = merges.grid(*arrays, counted=counted)
    want = np.unique(np.concatenate(arrays))
    assert g.tolist() == want.tolist()
    assert len(at) == len(arrays)
    for k, (a, counts) in enumerate(zip(arrays, at)):
        if k < counted:
            assert counts is g
        else:
            assert counts.tolist() == a.searchsorted(want, "right").tolist()


@settings(max_examples=300, deadline=None)
@given(lo=st.integers(-50, 50), dur=st.integers(1, 7), count=st.integers(1, 20), data=st.data())
def test_the_lattice_grid_is_the_grid_of_the_starts_and_the_part(lo, dur, count, data):
    """`lattice_grid` (counts from positions) against `grid` (a running count per part) and the
    candidate of each grid time by division."""
    starts = lo + np.arange(count, dtype=np.int64) * dur
    times = data.draw(st.sets(st.integers(lo, lo + count * dur - 1), max_size=3 * count))
    part = np.array(sorted(times), dtype=np.int64)
    g, win, counts = merges.lattice_grid(lo, dur, starts, part)
    want_g, want_at = merges.grid(starts, part)
    assert g.tolist() == want_g.tolist()
    assert counts.tolist() == want_at[1].tolist()
    assert win.tolist() == ((want_g - lo) // dur).tolist() == (want_at[0] - 1).tolist()


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["default", "dominant"]), load=pieces, placed=pieces,
       lo=st.sampled_from([0, 10, 20, 35]), dur=st.sampled_from([5, 10, 20, 30]),
       count=st.sampled_from([17, 25, 40, 80]), gang=st.tuples(st.integers(1, 3).map(lambda k: k * 256), st.integers(1, 2)),
       scale=st.sampled_from([1024, 2048]), negate=st.booleans())
def test_an_availability_changing_with_the_load_is_merged_once(kind, load, placed, lo, dur, count, gang, scale, negate):
    """Where the availability changes exactly where the load does (capacity - load), the runs are
    evaluated from one merge for both; the reference merges it as a part of its own: every array
    the stage reads afterwards is the same."""
    avail = [(a, n, -m, -v) for a, n, m, v in load] if negate else load
    w, *_ = _windows(kind, load, avail, placed, lo, dur, count, gang, 1, 1, 1)
    ref, *_ = _windows(kind, load, avail, placed, lo, dur, count, gang, 1, 1, 1)
    hi = lo + count * dur
    read = aligned_arrays._read if (lo + dur) % 2 else window
    lt, lv = read(*arrays_of(_fn(load)), lo, hi)
    vt, pt = ref.vt, ref.pt
    inner_v = vt[1:-1] if vt[-1] == hi else vt[1:]
    placed_before = len(pt) > 1 or bool(ref.pv.any())
    inner_p = (pt[1:-1] if pt[-1] == hi else pt[1:]) if placed_before else None
    ref._evaluate_runs(lt, lv, inner_v, inner_p, share=False)
    for name in ("p0s", "p1s", "costs", "fits", "free", "bounds", "cv", "lens", "first"):
        a, b = getattr(w, name), getattr(ref, name)
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), name


def test_the_end_of_a_lazy_order_is_told_apart_from_an_index_fault_inside_it() -> None:
    """`place_gangs` stops at a lazy order's `NoMoreRuns` (or past a list's end); an IndexError from
    inside an order's reading is a fault and propagates instead of reading as "no more candidates"."""

    class Faulty:
        def __getitem__(self, i: int) -> aligned.RunEntry:
            return [(1.0, 0, 0, 1, 1)][i + 5]  # a wrong index inside the order

    class Ends:
        def __getitem__(self, i: int) -> aligned.RunEntry:
            if i > 0:
                raise NoMoreRuns("no more candidates")
            return (1.0, 0, 0, 1, 1)

    assert aligned._entry([(1.0, 0, 0, 1, 1)], 1) is None
    assert aligned._entry(Ends(), 0) == (1.0, 0, 0, 1, 1) and aligned._entry(Ends(), 1) is None
    with pytest.raises(IndexError) as err:
        aligned._entry(Faulty(), 0)
    assert not isinstance(err.value, NoMoreRuns)
