"""The plan's loads as numpy breakpoint arrays, kept beside its step functions.

`InMemoryPlan` keeps every load as a `StepFunction` (the reference). A `StepArrays` holds the same
canonical breakpoints as sorted int64 arrays and takes the same edits, so that a window query
(availability, committed load) is a slice and a few vector operations instead of a walk over
sorted containers and a rebuild of one. An edit splices only the range it touches: its cost is
the edit's breakpoints plus one copy of the arrays, never a walk over the horizon.

A mirror only holds what int64 sums hold exactly: an edit with a time outside int64 or a value
beyond `MAX_VALUE` is refused (`add_pieces` returns False) and the plan stops using its mirrors.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from apportion.reservation.stepfn import LONG_MAX, Res, StepFunction

#: Long.MIN_VALUE: the smallest time int64 holds
LONG_MIN = -(1 << 63)
#: values up to this size cannot overflow int64 when a few thousand of them are summed
MAX_VALUE = 1 << 48

_NO_TIMES = np.empty(0, dtype=np.int64)
_NO_VALUES = np.empty((0, 2), dtype=np.int64)
_ZERO_ROW = np.zeros((1, 2), dtype=np.int64)


class StepArrays:
    """A step function's canonical breakpoints: times `t` (n,) and values `v` (n, 2), zero before t[0]."""

    __slots__ = ("t", "v")

    def __init__(self) -> None:
        self.t = _NO_TIMES
        self.v = _NO_VALUES

    def __len__(self) -> int:
        return len(self.t)

    def is_empty(self) -> bool:
        return len(self.t) == 0

    def breakpoints(self) -> list[tuple[int, Res]]:
        """As `StepFunction.breakpoints` (for tests and conversions)."""
        return [(t, (m, v)) for t, (m, v) in zip(self.t.tolist(), self.v.tolist())]

    def add_pieces(self, pieces: Iterable[tuple[int, int, Res]], sign: int) -> bool:
        """Add sign * r on every `[a, b)`; False (and unchanged) when int64 cannot hold the result."""
        deltas: dict[int, list[int]] = {}
        big = 0
        for a, b, r in pieces:
            if a >= b or (r[0] == 0 and r[1] == 0):
                continue
            xm, xv = r[0] * sign, r[1] * sign
            big = max(big, abs(xm), abs(xv))
            d = deltas.get(a)
            if d is None:
                d = deltas[a] = [0, 0]
            d[0] += xm
            d[1] += xv
            d = deltas.get(b)
            if d is None:
                d = deltas[b] = [0, 0]
            d[0] -= xm
            d[1] -= xv
        if not deltas:
            return True
        events = sorted(deltas)
        lo, hi = events[0], events[-1]
        if lo < LONG_MIN or hi > LONG_MAX or big > MAX_VALUE:
            return False
        t, v = self.t, self.v
        # only [lo, hi] changes (the deltas sum to zero after hi), and an edit touches few
        # breakpoints: merge them with the deltas in Python, splice the result in
        i0 = int(t.searchsorted(lo, "left"))
        i1 = int(t.searchsorted(hi, "right"))
        old_t: list[int] = t[i0:i1].tolist()
        old_v: list[list[int]] = v[i0:i1].tolist()
        pm, pv = v[i0 - 1].tolist() if i0 > 0 else (0, 0)
        om, ov = pm, pv  # the old value, then the running sum of deltas
        dm = dv = 0
        new_t: list[int] = []
        new_v: list[tuple[int, int]] = []
        i = j = 0
        n_old, n_ev = len(old_t), len(events)
        while i < n_old or j < n_ev:
            x = old_t[i] if i < n_old else LONG_MAX + 1
            y = events[j] if j < n_ev else LONG_MAX + 1
            if x <= y:
                om, ov = old_v[i]
                i += 1
            if y <= x:
                dd = deltas[y]
                dm += dd[0]
                dv += dd[1]
                j += 1
            cm, cv = om + dm, ov + dv
            if cm != pm or cv != pv:
                if abs(cm) > MAX_VALUE or abs(cv) > MAX_VALUE:
                    return False
                new_t.append(x if x <= y else y)
                new_v.append((cm, cv))
                pm, pv = cm, cv
        if not new_t and i0 == i1:
            return True
        self.t = np.concatenate((t[:i0], np.array(new_t, dtype=np.int64), t[i1:]))
        self.v = np.concatenate((v[:i0], np.array(new_v, dtype=np.int64).reshape(-1, 2), v[i1:]))
        return True

    def breaks(self, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
        """`stepfn.segments` on arrays: the value at s, then the breakpoints strictly inside (s, e)."""
        return window(self.t, self.v, s, e)


class PeriodicStepArrays:
    """A `PeriodicStepFunction`'s base on offsets `[0, period)`, as `StepArrays`."""

    __slots__ = ("period", "base")

    def __init__(self, period: int) -> None:
        self.period = period
        self.base = StepArrays()

    def is_empty(self) -> bool:
        return self.base.is_empty()

    def add_pieces(self, pieces: Iterable[tuple[int, int, Res]], sign: int) -> bool:
        """Add sign * r on every `[a, b)` taken modulo the period, wrapping as `PeriodicStepFunction.add`."""
        T = self.period
        wrapped: list[tuple[int, int, Res]] = []
        for s, e, r in pieces:
            length = e - s
            if length <= 0 or (r[0] == 0 and r[1] == 0):
                continue
            if length > T:
                return False
            s0 = s % T
            if s0 + length <= T:
                wrapped.append((s0, s0 + length, r))
            else:
                wrapped.append((s0, T, r))
                wrapped.append((0, s0 + length - T, r))
        return self.base.add_pieces(wrapped, sign)

    def breaks(self, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
        """`stepfn.segments` of the unrolled function over `[s, e)`, merged across period boundaries
        like `_periodic_breaks` (only a period's first value can repeat the one before it)."""
        bt, bv = self.base.t, self.base.v
        if len(bt) == 0:
            return np.array([s], dtype=np.int64), _ZERO_ROW.copy()
        T = self.period
        ts: list[np.ndarray] = []
        vs: list[np.ndarray] = []
        last: tuple[int, int] | None = None
        off = (s // T) * T
        while off < e:
            lo = s - off if s > off else 0
            hi = e - off if e < off + T else T
            i = int(np.searchsorted(bt, lo, "right"))
            j = int(np.searchsorted(bt, hi, "left"))
            first = (int(bv[i - 1, 0]), int(bv[i - 1, 1])) if i > 0 else (0, 0)
            if last is None or first != last:
                ts.append(np.array([lo + off], dtype=np.int64))
                vs.append(np.array([first], dtype=np.int64))
                last = first
            if j > i:
                ts.append(bt[i:j] + off)
                vs.append(bv[i:j])
                last = (int(bv[j - 1, 0]), int(bv[j - 1, 1]))
            off += T
        return np.concatenate(ts), np.concatenate(vs)


def window(t: np.ndarray, v: np.ndarray, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
    """The canonical breakpoints (t, v) read over `[s, e)` as `stepfn.segments` reads a function:
    the value at s first (at time s), then the breakpoints strictly inside (s, e). Times are
    integers, so "before e" is "at or before e - 1" and one search finds both ends."""
    i, j = t.searchsorted((s, max(s, e - 1)), "right").tolist()
    keys = np.concatenate(((s,), t[i:j]))
    vals = np.concatenate((v[i - 1:i] if i > 0 else _ZERO_ROW, v[i:j]))
    return keys, vals


def union(*parts: np.ndarray) -> np.ndarray:
    """Sorted distinct times of the parts (np.union1d without its general-purpose overhead)."""
    x = np.concatenate(parts)
    x.sort()
    keep = np.empty(len(x), dtype=bool)
    keep[:1] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def running(sources: list[tuple[np.ndarray, np.ndarray, int]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums of functions read from the same s (each as `window` gives it), source by source into
    columns `col, col + 1` of `width`: the distinct times where some value may change, and the
    running sums there (the value changes summed in time order, as the scalar pass sums them)."""
    times = np.concatenate([k for k, _v, _c in sources])
    deltas = np.zeros((len(times), width), dtype=np.int64)
    i = 0
    for k, v, col in sources:
        n = len(k)
        deltas[i, col:col + 2] = v[0]
        np.subtract(v[1:], v[:-1], out=deltas[i + 1:i + n, col:col + 2])
        i += n
    order = np.argsort(times, kind="stable")
    times = times[order]
    run = np.cumsum(deltas[order], axis=0)
    # the running sums after the last delta at each time
    last = np.empty(len(times), dtype=bool)
    last[-1:] = True
    np.not_equal(times[1:], times[:-1], out=last[:-1])
    return times[last], run[last]


def compact(t: np.ndarray, a: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep the times where the value changes (the first one if non-zero); close with zero at end."""
    change = np.empty(len(t), dtype=bool)
    change[0] = bool((a[0] != 0).any())
    change[1:] = (a[1:] != a[:-1]).any(axis=1)
    kt = t[change]
    kv = a[change]
    if len(kv) and bool((kv[-1] != 0).any()):
        kt = np.append(kt, np.int64(end))
        kv = np.concatenate((kv, _ZERO_ROW))
    return kt, kv


def arrays_of(f: StepFunction) -> tuple[np.ndarray, np.ndarray] | None:
    """f's canonical breakpoints as arrays; None when int64 might not hold them (or sums of them)."""
    pts = f.breakpoints()
    if not pts:
        return _NO_TIMES, _NO_VALUES
    ts = [t for t, _v in pts]
    if ts[0] < LONG_MIN or ts[-1] > LONG_MAX:
        return None
    vs = [v for _t, v in pts]
    if max(max(abs(m), abs(c)) for m, c in vs) > MAX_VALUE:
        return None
    return np.array(ts, dtype=np.int64), np.array(vs, dtype=np.int64).reshape(-1, 2)


def fits_under(f: tuple[np.ndarray, np.ndarray], g: tuple[np.ndarray, np.ndarray], s: int, e: int) -> bool:
    """Whether f(t) <= g(t) in both components for every t in `[s, e)`: what a walk of
    `merge_pieces(g, f, s, e, rsub)` checks piece by piece, on the union of both breakpoints."""
    if s >= e:
        return True
    ft, fv = window(*f, s, e)
    gt, gv = window(*g, s, e)
    grid = union(ft, gt)
    d = gv[np.searchsorted(gt, grid, "right") - 1] - fv[np.searchsorted(ft, grid, "right") - 1]
    return not bool((d < 0).any())
