"""CapacityOverTime's average check over time (contract §9): the plan's load and a reservation's,
clamped to the window around the reservation, merged, and integrated with a sliding window of
YARN's length; the exact integer integral (the deviation of docs/semantics.md, Y-rows) and its
two-component fast path beside the generic one.

`policies.CapacityOverTimePolicy.validate` is the only caller; these are apart because they are
arithmetic on step-function pieces, not policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apportion.reservation.periodic import PeriodicStepFunction, periods_meeting, piece_integral
from apportion.reservation.resmath import LONG_MAX, Res, is_zero, radd
from apportion.reservation.stepfn import StepFunction

if TYPE_CHECKING:
    from apportion.reservation.plan import ReservationAllocation
    from apportion.reservation.view import PlanView


def integral_bound_within(
    plan: PlanView, res: ReservationAllocation, old: ReservationAllocation | None, cs: int, ce: int, W: int,
    limit: Res,
) -> bool:
    """Whether `_average_walk` must answer True because everything it sums is too small to matter.

    With non-negative values the walk's running integral A never decreases, so every A(t) - A(t - W)
    it compares is at most A at its last grid point inside [cs, ce], which is Math.round(I / W) for
    I the integral of the merged map up to there. That map is the user's consumption (plus the old
    version, on an update) and the reservation, each exact on its part of [cs - 2T, ce] and
    undefined (zero) elsewhere, so I is at most the bound summed here; and I <= W * limit gives
    round(I / W) <= limit (rounding half up: floor((2I + W) / 2W) <= floor(limit + 1/2)).
    """
    bound = plan.user_integral_bound(res.user or "", cs, ce)
    if bound is None:
        return False
    total = list(bound)
    for r in (res, old):
        if r is None:
            continue
        pieces = r.rle.nonzero_pieces()
        if any(v < 0 for _a, _b, x in pieces for v in x):
            return False
        integral = piece_integral(pieces, len(total))
        k = periods_meeting(cs, ce, r.period) if r.period > 0 else 1
        for i, x in enumerate(integral):
            total[i] += x * k
    return all(m <= W * lim for m, lim in zip(total, limit))


def average_within(f_map: list[tuple[int, Res | None]], W: int, cs: int, ce: int, limit: Res) -> bool:
    """Trunk's integral check on the merged map: A(t) - A(t - W) <= limit at every time of [cs, ce].

    The grid G holds the change points plus k + i*W inside every segment followed by a defined
    value; A is the running integral on G divided by W and rounded half up (Math.round), stepping
    up at every g and back down at g + W. Both event lists are sorted, so one merge walk visits
    every event of [cs, ce] (and cs itself) once.
    """
    if len(limit) != 2:
        return average_within_k(f_map, W, cs, ce, limit)
    grid: dict[int, Res | None] = {}
    for (k, v), (k2, v2) in zip(f_map, f_map[1:]):
        if v2 is None or k2 - k < W:
            continue
        for i in range(1, (k2 - k) // W + 1):
            grid[k + i * W] = v
    for k, v in f_map:
        grid[k] = v
    gs = sorted(grid)
    am: list[int] = []
    av: list[int] = []
    prev_t = f_map[0][0]
    pm = pv = 0
    tm = tv = 0
    w2 = 2 * W
    for g in gs:
        tm += pm * (g - prev_t)
        tv += pv * (g - prev_t)
        am.append((2 * tm + W) // w2)
        av.append((2 * tv + W) // w2)
        v = grid[g]
        if v is None:
            pm = pv = 0
        else:
            pm, pv = v
        prev_t = g
    lm, lv = limit
    n = len(gs)
    iu = idn = 0
    cum = cuv = cdm = cdv = 0
    t = cs
    while True:
        while iu < n and gs[iu] <= t:
            cum, cuv = am[iu], av[iu]
            iu += 1
        while idn < n and gs[idn] + W <= t:
            cdm, cdv = am[idn], av[idn]
            idn += 1
        if cum - cdm > lm or cuv - cdv > lv:
            return False
        # the next event after t
        nu = gs[iu] if iu < n else None
        nd = gs[idn] + W if idn < n else None
        if nu is None:
            if nd is None:
                return True
            t = nd
        elif nd is None or nu < nd:
            t = nu
        else:
            t = nd
        if t > ce:
            return True


def average_within_k(f_map: list[tuple[int, Res | None]], W: int, cs: int, ce: int, limit: Res) -> bool:
    """`average_within` for vectors of any length (the two-component walk above, per component)."""
    k = len(limit)
    grid: dict[int, Res | None] = {}
    for (t, v), (t2, v2) in zip(f_map, f_map[1:]):
        if v2 is None or t2 - t < W:
            continue
        for i in range(1, (t2 - t) // W + 1):
            grid[t + i * W] = v
    for t, v in f_map:
        grid[t] = v
    gs = sorted(grid)
    avg: list[tuple[int, ...]] = []
    prev_t = f_map[0][0]
    cur: Res = (0,) * k
    total = [0] * k
    w2 = 2 * W
    for g in gs:
        for i in range(k):
            total[i] += cur[i] * (g - prev_t)
        avg.append(tuple((2 * x + W) // w2 for x in total))
        v = grid[g]
        cur = (0,) * k if v is None else v
        prev_t = g
    n = len(gs)
    iu = idn = 0
    up: tuple[int, ...] = (0,) * k
    down: tuple[int, ...] = (0,) * k
    t = cs
    while True:
        while iu < n and gs[iu] <= t:
            up = avg[iu]
            iu += 1
        while idn < n and gs[idn] + W <= t:
            down = avg[idn]
            idn += 1
        if any(u - d > lim for u, d, lim in zip(up, down, limit)):
            return False
        nu = gs[iu] if iu < n else None
        nd = gs[idn] + W if idn < n else None
        if nu is None:
            if nd is None:
                return True
            t = nd
        elif nd is None or nu < nd:
            t = nu
        else:
            t = nd
        if t > ce:
            return True


def close_open_end(f_map: list[tuple[int, Res | None]], ce: int) -> list[tuple[int, Res | None]]:
    """End a load that is still non-zero at the check's end with a defined zero just after it.

    A periodic unroll (or a reservation ending at Long.MAX) leaves its last value running up to the
    Long.MAX end marker. Trunk then multiplies that value by about 2^63 in 64-bit arithmetic, so its
    answer there is decided by the overflow (docs/semantics.md, YARN rows); with exact integers the
    piece would add nothing inside `[cs, ce]`, and a reservation that holds its whole period (one
    piece after unrolling) would escape the average check entirely. Closing the piece at `ce + 1`
    makes the grid cover it like any other piece; what lies after ce never enters the check.
    """
    if not f_map:
        return f_map
    tail = f_map[-1:] if f_map[-1][1] is None else []
    body = f_map[: len(f_map) - len(tail)]
    if not body:
        return f_map
    k, v = body[-1]
    if v is None or is_zero(v) or k > ce or (tail and tail[0][0] <= ce + 1):
        return f_map
    return [*body, (ce + 1, (0,) * len(v)), *tail]


def clamped(f: StepFunction, cs: int, ce: int) -> list[tuple[int, Res | None]]:
    """YARN's merge over [cs, ce]: first entry clamped at cs, an undefined entry at ce."""
    out: list[tuple[int, Res | None]] = []
    for a, _b, r in f.pieces(cs, ce):
        if not out or out[-1][1] != r:
            out.append((a, r))
    out.append((ce, None))
    return out


def overlapping(f: StepFunction, first: int | None, cs: int, ce: int) -> list[tuple[int, Res | None]]:
    """getRangeOverlapping(cs, ce): from the last change at or before cs (or the first change), to ce."""
    if f.is_empty():
        return []
    start = first if first is not None else f.first_change()
    assert start is not None
    out: list[tuple[int, Res | None]] = list(f.items_between(start, ce))
    return out


def periodic_overlapping(pf: PeriodicStepFunction, cs: int, ce: int) -> list[tuple[int, Res | None]]:
    """The unrolled periodic function from its last change at or before cs up to ce."""
    if pf.is_empty():
        return []
    first = pf.last_change_at_or_before(cs)
    assert first is not None
    return [(a, r) for a, _b, r in pf.pieces(first, ce + 1)]


def merge_maps(a: list[tuple[int, Res | None]], b: list[tuple[int, Res | None]]) -> list[tuple[int, Res | None]]:
    """RLESparseResourceAllocation.merge(add) over [Long.MIN, Long.MAX] of two breakpoint maps."""
    if not a:
        return b
    if not b:
        return a
    out: list[tuple[int, Res | None]] = []
    i = j = 0
    la: Res | None = None
    lb: Res | None = None
    first = a[0][1] if a[0][1] is not None else b[0][1]
    two = first is None or len(first) == 2
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and a[i][0] < b[j][0]):
            t, la = a[i]
            i += 1
        elif i >= len(a) or b[j][0] < a[i][0]:
            t, lb = b[j]
            j += 1
        else:
            t, la = a[i]
            lb = b[j][1]
            i += 1
            j += 1
        if la is None:
            v = lb
        elif lb is None:
            v = la
        else:
            v = (la[0] + lb[0], la[1] + lb[1]) if two else radd(la, lb)
        if not out or v is None or out[-1][1] != v:
            out.append((t, v))
    out.append((LONG_MAX, None))
    return out
