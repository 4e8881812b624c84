"""Step functions against a dense per-step array (hypothesis), plus the calculators."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.reservation.periodic import PeriodicStepFunction
from apportion.reservation.resmath import ZERO, Calculator, f32_str, radd, rsub
from apportion.reservation.stepfn import StepFunction, merge, merge_pieces, segments

H = 40  # horizon of the dense model
res = st.tuples(st.integers(-5, 5), st.integers(-5, 5))
interval = st.tuples(st.integers(0, H), st.integers(0, H), res).map(lambda x: (min(x[0], x[1]), max(x[0], x[1]), x[2]))


def dense(ops):
    arr = [ZERO] * (H + 1)
    for s, e, r in ops:
        for t in range(s, e):
            arr[t] = radd(arr[t], r)
    return arr


def build(ops):
    f = StepFunction()
    for s, e, r in ops:
        f.add(s, e, r)
    return f


@settings(max_examples=150, deadline=None)
@given(st.lists(interval, max_size=12))
def test_add_matches_dense_and_is_canonical(ops):
    f = build(ops)
    arr = dense(ops)
    assert [f.at(t) for t in range(H + 1)] == arr
    assert f.at(-1) == ZERO
    pts = f.breakpoints()
    prev = ZERO
    for _t, v in pts:
        assert v != prev  # canonical: no redundant breakpoint
        prev = v
    assert f == StepFunction.from_intervals(ops)


@settings(max_examples=100, deadline=None)
@given(st.lists(interval, max_size=10), st.lists(interval, max_size=10))
def test_remove_restores_exactly(base, extra):
    f = build(base)
    before = f.breakpoints()
    for s, e, r in extra:
        f.add(s, e, r)
    for s, e, r in reversed(extra):
        f.remove(s, e, r)
    assert f.breakpoints() == before


@settings(max_examples=100, deadline=None)
@given(st.lists(interval, max_size=8), st.lists(interval, max_size=8), st.integers(0, H), st.integers(0, H))
def test_merge_ops_match_dense(a_ops, b_ops, x, y):
    s, e = min(x, y), max(x, y)
    a, b = build(a_ops), build(b_ops)
    da, db = dense(a_ops), dense(b_ops)
    calc = Calculator("default")
    ref = (10, 10)
    ops = {
        "add": (radd, radd),
        "sub": (rsub, rsub),
        "min": (lambda p, q: calc.rmin(p, q, ref), lambda p, q: calc.rmin(p, q, ref)),
        "max": (lambda p, q: calc.rmax(p, q, ref), lambda p, q: calc.rmax(p, q, ref)),
    }
    for fn, dn in ops.values():
        m = merge(a, b, s, e, fn)
        for t in range(H + 1):
            want = dn(da[t], db[t]) if s <= t < e else ZERO
            assert m.at(t) == want
    # min/max over an interval, and the exact integral
    if e > s:
        vals = [da[t] for t in range(s, e)]
        assert max(v[0] for _a, _b, v in a.pieces(s, e)) == max(v[0] for v in vals)
        assert min(v[1] for _a, _b, v in a.pieces(s, e)) == min(v[1] for v in vals)
        assert a.integral(s, e) == (sum(v[0] for v in vals), sum(v[1] for v in vals))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.lists(st.tuples(st.integers(-30, 30), st.integers(1, 12), res), max_size=6),
       st.integers(-30, 30), st.integers(0, 40))
def test_periodic_matches_dense(period, ops, s, length):
    p = PeriodicStepFunction(period)
    base = [ZERO] * period
    for a, ln, r in ops:
        ln = min(ln, period)
        p.add(a, a + ln, r)
        for t in range(a, a + ln):
            base[t % period] = radd(base[t % period], r)
    for t in range(-30, 30):
        assert p.at(t) == base[t % period]
    u = p.unrolled(s, s + length)
    for t in range(s - 2, s + length + 2):
        want = base[t % period] if s <= t < s + length else ZERO
        assert u.at(t) == want
    c = p.last_change_at_or_before(s)
    if not p.is_empty():
        assert c is not None and c <= s


def test_add_touches_only_breakpoints_in_range():
    f = StepFunction()
    f.add(0, 10**15, (1, 1))  # a huge interval costs two breakpoints, not 10**15 steps
    f.add(5, 10**12, (2, 0))
    assert f.breakpoints() == [(0, (1, 1)), (5, (3, 1)), (10**12, (1, 1)), (10**15, ZERO)]
    assert f.last_nonzero_end() == 10**15


def test_calculators():
    d = Calculator("default")
    assert d.compare((1024, 9), (1024, 1), (4096, 4)) == 0  # memory only
    assert d.rmin((1024, 9), (1024, 1), (1, 1)) == (1024, 9)  # tie keeps the first operand
    assert d.gangs((4096, 0), (1024, 1), 10) == 4
    dom = Calculator("dominant")
    ref = (10240, 10)
    assert dom.compare((1024, 5), (5120, 1), ref) == 0 or dom.compare((1024, 5), (5120, 1), ref) != 0
    assert dom.compare((1024, 6), (5120, 1), ref) > 0
    assert dom.gangs((4096, 2), (1024, 1), 10) == 2  # component-wise (deviation §12 row 8)
    assert dom.ratio((5120, 2), ref) == 0.5


def test_java_float_strings():
    assert f32_str(0.5) == "0.5"
    assert f32_str(1.0) == "1.0"
    assert f32_str(0.699999988079071) == "0.7"
    assert f32_str(0.0001) == "1.0E-4"


_pieces = st.lists(st.tuples(st.integers(-20, 80), st.integers(1, 17), st.integers(-3, 3), st.integers(-2, 2)),
                   max_size=6)


@settings(max_examples=300, deadline=None)
@given(fa=_pieces, fb=_pieces, periodic=st.booleans(), s=st.integers(-30, 100), span=st.integers(-3, 120),
       which=st.sampled_from(["add", "sub", "min"]))
def test_fused_merge_equals_its_pieces(fa, fb, periodic, s, span, which):
    """merge() collects the canonical breakpoints during the walk; it must equal building the
    function from merge_pieces' pieces, for plain and periodic operands and any op."""
    a = StepFunction()
    b: StepFunction | PeriodicStepFunction = PeriodicStepFunction(17) if periodic else StepFunction()
    for t, n, m, v in fa:
        a.add(t, t + n, (m, v))
    for t, n, m, v in fb:
        b.add(t, t + n, (m, v))
    op = {"add": radd, "sub": rsub, "min": lambda x, y: x if x[0] <= y[0] else y}[which]
    e = s + span
    want = StepFunction.from_pieces(merge_pieces(a, b, s, e, op)) if s < e else StepFunction()
    assert merge(a, b, s, e, op) == want
    assert merge(b, a, s, e, op) == (StepFunction.from_pieces(merge_pieces(b, a, s, e, op)) if s < e else StepFunction())


@settings(max_examples=300, deadline=None)
@given(fa=_pieces, s=st.integers(-30, 100), span=st.integers(-3, 120))
def test_clip_equals_the_function_built_from_its_pieces(fa, s, span):
    """clip() reuses the canonical breakpoints inside the range; it must equal from_pieces(pieces)."""
    a = StepFunction()
    for t, n, m, v in fa:
        a.add(t, t + n, (m, v))
    e = s + span
    assert a.clip(s, e) == (StepFunction.from_pieces(a.pieces(s, e)) if s < e else StepFunction())


@settings(max_examples=300, deadline=None)
@given(base=st.lists(interval, max_size=10), batches=st.lists(st.lists(interval, max_size=6), min_size=1, max_size=4))
def test_add_pieces_is_the_adds_one_by_one(base, batches):
    """One walk over the span (overlapping and negative pieces too) gives the same map as `add`s."""
    f = build(base)
    g = build(base)
    for ops in batches:
        for s, e, r in ops:
            f.add(s, e, r)
        g.add_pieces(ops)
        assert g.breakpoints() == f.breakpoints()
        assert [g.at(t) for t in range(-1, H + 2)] == [f.at(t) for t in range(-1, H + 2)]
    # and a batch of removals restores the map
    for ops in reversed(batches):
        g.add_pieces([(s, e, (-r[0], -r[1])) for s, e, r in ops])
    assert g.breakpoints() == build(base).breakpoints()


@settings(max_examples=150, deadline=None)
@given(period=st.integers(1, 12), ops=st.lists(st.tuples(st.integers(-30, 30), st.integers(0, 14), res), max_size=6))
def test_periodic_wrapped_pieces_are_what_add_puts_on_the_base(period, ops):
    p = PeriodicStepFunction(period)
    pieces = [(s, s + n, r) for s, n, r in ops]
    wrapped = p.wrapped(pieces)
    if any(n > period and r != ZERO for _s, n, r in ops):
        assert wrapped is None
        return
    assert wrapped is not None
    for s, e, r in pieces:
        p.add(s, e, r)
    q = PeriodicStepFunction(period)
    q.base.add_pieces(wrapped)
    assert q == p


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(interval, max_size=8), s=st.integers(-3, H + 3), span=st.integers(-2, H))
def test_zero_on_is_a_zero_segment_read(ops, s, span):
    f = build(ops)
    keys, values = segments(f, s, s + span)
    assert f.zero_on(s, s + span) == (len(keys) == 1 and values[0] == ZERO)


@settings(max_examples=200, deadline=None)
@given(
    period=st.integers(1, 40),
    ivs=st.lists(st.tuples(st.integers(-60, 60), st.integers(0, 90), st.integers(-3, 3), st.integers(0, 2)),
                 max_size=6),
)
def test_fold_intervals_is_the_sum_modulo_the_period(period, ivs):
    """fold_intervals (now wrap_pieces with clamp) against its definition, offset by offset."""
    from apportion.reservation.allocation import fold_intervals

    intervals = [(a, a + n, (m, v)) for a, n, m, v in ivs]
    f = fold_intervals(intervals, period)
    for o in range(period):
        want = [0, 0]
        for a, b, r in intervals:
            if b - a >= period or (b > a and (o - a) % period < b - a):
                want[0] += r[0]
                want[1] += r[1]
        assert f.at(o) == tuple(want), o
    assert f.at(period) == (0, 0) and f.at(-1) == (0, 0)
