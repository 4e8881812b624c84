"""The breakpoints of a sum of constant pieces: the canonical (key, value) lists a `StepFunction`
is built from (`StepFunction.from_intervals`) and the aligned agents read directly, computed from
the pieces' start/end deltas without building the sorted map; a two-component form beside the
generic one (benchmarks/README.md, "two-component paths").
"""

from __future__ import annotations

from collections.abc import Iterable

from apportion.reservation.resmath import ZERO, Res, zero


def interval_breakpoints(intervals: Iterable[tuple[int, int, Res]]) -> tuple[list[int], list[Res]]:
    """The canonical breakpoints of the sum of constant pieces `[start, end)` (overlapping pieces
    add up), as two lists: `StepFunction.from_intervals` without building the map."""
    intervals = list(intervals)
    if intervals and len(intervals[0][2]) != 2:
        return _interval_breakpoints_k(intervals, len(intervals[0][2]))
    deltas: dict[int, list[int]] = {}
    for s, e, r in intervals:
        if s >= e or r == ZERO:
            continue
        d = deltas.setdefault(s, [0, 0])
        d[0] += r[0]
        d[1] += r[1]
        d = deltas.setdefault(e, [0, 0])
        d[0] -= r[0]
        d[1] -= r[1]
    keys: list[int] = []
    values: list[Res] = []
    m = v = 0
    prev = ZERO
    for t in sorted(deltas):
        dm, dv = deltas[t]
        m += dm
        v += dv
        cur = (m, v)
        if cur != prev:
            keys.append(t)
            values.append(cur)
            prev = cur
    return keys, values


def _interval_breakpoints_k(intervals: list[tuple[int, int, Res]], k: int) -> tuple[list[int], list[Res]]:
    """`interval_breakpoints` for vectors of any length k."""
    z = zero(k)
    deltas: dict[int, list[int]] = {}
    for s, e, r in intervals:
        if s >= e or r == z:
            continue
        d = deltas.setdefault(s, [0] * k)
        x = deltas.setdefault(e, [0] * k)
        for i, v in enumerate(r):
            d[i] += v
            x[i] -= v
    keys: list[int] = []
    values: list[Res] = []
    run = [0] * k
    prev = z
    for t in sorted(deltas):
        for i, v in enumerate(deltas[t]):
            run[i] += v
        cur = tuple(run)
        if cur != prev:
            keys.append(t)
            values.append(cur)
            prev = cur
    return keys, values
