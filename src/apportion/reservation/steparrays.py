"""The plan's loads as numpy arrays of change points, kept beside its step functions.

`InMemoryPlan` keeps every load as a `StepFunction` (the reference). A `StepArrays` holds the same
canonical breakpoints as sorted int64 arrays, each with the change of value there (never zero),
the function being their running sum, and takes the same edits. So a window query (availability,
committed load) is a slice, one sum for the value at the window's start and a few vector
operations, instead of a walk over sorted containers and a rebuild of one; and an edit touches
only the times it adds or removes a change at (whatever lies between keeps its change), at the
cost of one copy of the arrays, never a walk over its span or over the horizon.

Mirrors are kept for plans of the two YARN dimensions only (`of` answers None for any other
length; the plan then answers from its step functions, which hold vectors of any length).

A mirror only holds what int64 sums hold exactly: it keeps a bound on every value it can reach
(the sum of the sizes of all edits) and refuses an edit (`add_pieces` returns False) with a time
outside int64 or past `VALUE_BOUND`; the plan then stops using its mirrors.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

import numpy as np

from apportion.reservation.periodic import PeriodicStepFunction, wrap_pieces
from apportion.reservation.resmath import LONG_MAX, Res
from apportion.reservation.stepfn import StepFunction

#: Long.MIN_VALUE: the smallest time int64 holds
LONG_MIN = -(1 << 63)
#: values up to this size cannot overflow int64 when a few thousand of them are summed
MAX_VALUE = 1 << 48
#: what a mirror's values may reach: sums of a few of them, and a capacity up to MAX_VALUE, stay in int64
VALUE_BOUND = 1 << 58

_NO_TIMES = np.empty(0, dtype=np.int64)
_NO_VALUES = np.empty((0, 2), dtype=np.int64)
_ZERO_ROW = np.zeros((1, 2), dtype=np.int64)


class StepArrays:
    """A step function's canonical breakpoints: times `t` (n,), sorted, and the change `d` (n, 2)
    at each, never zero; the value is the running sum of the changes (zero before t[0])."""

    __slots__ = ("t", "d", "reach")

    def __init__(self) -> None:
        self.t = _NO_TIMES
        self.d = _NO_VALUES
        self.reach = 0  # no value is larger than this, in either component

    @classmethod
    def of(cls, f: StepFunction) -> StepArrays | None:
        """The mirror of f as it is now; None when int64 might not hold it, or f is not two-dimensional."""
        if len(f.zero) != 2:
            return None
        a = cls()
        pts = f.breakpoints()
        if not pts:
            return a
        ts = [t for t, _v in pts]
        vs = [v for _t, v in pts]
        reach = max(max(abs(m), abs(c)) for m, c in vs)
        if ts[0] < LONG_MIN or ts[-1] > LONG_MAX or reach > VALUE_BOUND:
            return None
        v = np.array(vs, dtype=np.int64).reshape(-1, 2)
        a.t = np.array(ts, dtype=np.int64)
        a.d = np.diff(v, axis=0, prepend=_ZERO_ROW)
        a.reach = reach
        return a

    def __len__(self) -> int:
        return len(self.t)

    def is_empty(self) -> bool:
        """No change point: zero everywhere."""
        return len(self.t) == 0

    def breakpoints(self) -> list[tuple[int, Res]]:
        """As `StepFunction.breakpoints` (for tests and conversions)."""
        v = np.cumsum(self.d, axis=0)
        return [(t, (m, c)) for t, (m, c) in zip(self.t.tolist(), v.tolist())]

    def value_before(self, i: int) -> tuple[int, int]:
        """The value on `[t[i - 1], t[i])`: the sum of the first i changes."""
        d = self.d[:i]
        # column by column: numpy's axis-0 sum over two columns is ten times slower
        return int(d[:, 0].sum()), int(d[:, 1].sum())

    def add_pieces(self, pieces: Iterable[tuple[int, int, Res]], sign: int) -> bool:
        """Add sign * r on every `[a, b)`; False (and unchanged) when int64 might not hold the result."""
        deltas: dict[int, list[int]] = {}
        size = 0
        for a, b, r in pieces:
            if a >= b or (r[0] == 0 and r[1] == 0):
                continue
            xm, xv = r[0] * sign, r[1] * sign
            size += max(abs(xm), abs(xv))
            x = deltas.get(a)
            if x is None:
                x = deltas[a] = [0, 0]
            x[0] += xm
            x[1] += xv
            x = deltas.get(b)
            if x is None:
                x = deltas[b] = [0, 0]
            x[0] -= xm
            x[1] -= xv
        events = sorted(k for k, x in deltas.items() if x[0] or x[1])
        if not events:
            return True
        if events[0] < LONG_MIN or events[-1] > LONG_MAX or self.reach + size > VALUE_BOUND:
            return False
        self.reach += size
        t, d = self.t, self.d
        n = len(t)
        at = t.searchsorted(np.array(events, dtype=np.int64)).tolist()
        # the arrays between the changed times are kept as they are; the changed times are
        # rebuilt: a new change is inserted, an existing one updated, or dropped when it cancels
        parts_t: list[np.ndarray] = []
        parts_d: list[np.ndarray] = []
        new_t: list[int] = []
        new_d: list[tuple[int, int]] = []
        kept = 0
        for te, i in zip(events, at):
            dm, dv = deltas[te]
            hit = i < n and int(t[i]) == te
            if hit:
                om, ov = d[i].tolist()
                dm += om
                dv += ov
            if i > kept:
                if new_t:
                    parts_t.append(np.array(new_t, dtype=np.int64))
                    parts_d.append(np.array(new_d, dtype=np.int64))
                    new_t, new_d = [], []
                parts_t.append(t[kept:i])
                parts_d.append(d[kept:i])
            if dm or dv:
                new_t.append(te)
                new_d.append((dm, dv))
            kept = i + 1 if hit else i
        if new_t:
            parts_t.append(np.array(new_t, dtype=np.int64))
            parts_d.append(np.array(new_d, dtype=np.int64))
        parts_t.append(t[kept:])
        parts_d.append(d[kept:])
        self.t = np.concatenate(parts_t)
        self.d = np.concatenate(parts_d)
        return True

    def read(self, s: int, e: int) -> Read:
        """The function over `[s, e)` as `running` takes it: the value at s, and the breakpoints
        strictly inside (s, e) with their changes (views of the arrays: read them, never write)."""
        t = self.t
        i, j = t.searchsorted((s, max(s, e - 1)), "right").tolist()
        return self.value_before(i), [(t[i:j], self.d[i:j])]

    def breaks(self, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
        """`read` as two arrays: time s with the value there, then the inner breakpoints with
        their changes (the running sum gives `stepfn.segments`' values)."""
        return joined(s, self.read(s, e))


class PeriodicStepArrays:
    """A `PeriodicStepFunction`'s base on offsets `[0, period)`, as `StepArrays`."""

    __slots__ = ("period", "base", "_ends")

    def __init__(self, period: int) -> None:
        self.period = period
        self.base = StepArrays()
        # first and last index of the base's changes inside (0, period), and the change at every
        # period's start (value at offset 0 minus the value just before the period): read by
        # every unrolled read, changed only by an edit
        self._ends: tuple[int, int, tuple[int, int]] | None = None

    @classmethod
    def of(cls, f: PeriodicStepFunction) -> PeriodicStepArrays | None:
        """The mirror of f as it is now; None when int64 might not hold it."""
        base = StepArrays.of(f.base)
        if base is None:
            return None
        p = cls(f.period)
        p.base = base
        return p

    def is_empty(self) -> bool:
        """Zero over the whole period."""
        return self.base.is_empty()

    def add_pieces(self, pieces: Iterable[tuple[int, int, Res]], sign: int) -> bool:
        """Add sign * r on every `[a, b)` taken modulo the period, wrapping as `PeriodicStepFunction.add`."""
        wrapped = wrap_pieces(pieces, self.period)
        if wrapped is None:
            return False
        self._ends = None
        return self.base.add_pieces(wrapped, sign)

    def read(self, s: int, e: int) -> Read:
        """The unrolled function over `[s, e)` as `StepArrays.read` gives a plain one; like
        `_periodic_breaks`, a period's start is a breakpoint only when the value changes there."""
        base = self.base
        bt, bd = base.t, base.d
        if len(bt) == 0:
            return (0, 0), []
        T = self.period
        ends = self._ends
        if ends is None:
            i0, iT = bt.searchsorted((0, T - 1), "right").tolist()
            start = base.value_before(i0)  # the value at offset 0
            end = base.value_before(iT)  # the value just before offset T
            ends = self._ends = (i0, iT, (start[0] - end[0], start[1] - end[1]))
        i0, iT, wrap = ends
        off = (s // T) * T
        # the first period from s on, as a plain function read
        first, blocks = base.read(s - off, e - off if e < off + T else T)
        blocks = [(t + off, d) for t, d in blocks]
        off += T
        while off < e:
            if wrap != (0, 0):
                blocks.append((np.array((off,), dtype=np.int64), np.array((wrap,), dtype=np.int64)))
            j = iT if e >= off + T else int(bt.searchsorted(e - off - 1, "right"))
            blocks.append((bt[i0:j] + off, bd[i0:j]))
            off += T
        return first, blocks

    def breaks(self, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
        """`read` as two arrays (see `StepArrays.breaks`)."""
        return joined(s, self.read(s, e))


#: a function read over [s, e): its value at s, and (times, changes) blocks strictly inside, in order
Read = tuple[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]]


def joined(s: int, read: Read) -> tuple[np.ndarray, np.ndarray]:
    """A read as two arrays: time s with the value there first, then every block's rows."""
    first, blocks = read
    keys = np.concatenate([np.array((s,), dtype=np.int64)] + [t for t, _d in blocks])
    changes = np.concatenate([np.array((first,), dtype=np.int64)] + [d for _t, d in blocks])
    return keys, changes


def window(t: np.ndarray, v: np.ndarray, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
    """The canonical breakpoints (t, v) read over `[s, e)` as `stepfn.segments` reads a function:
    the value at s first (at time s), then the breakpoints strictly inside (s, e). Times are
    integers, so "before e" is "at or before e - 1" and one search finds both ends."""
    i, j = t.searchsorted((s, max(s, e - 1)), "right").tolist()
    keys = np.concatenate(((s,), t[i:j]))
    vals = np.concatenate((v[i - 1:i] if i > 0 else _ZERO_ROW, v[i:j]))
    return keys, vals


def window_compact(t: np.ndarray, v: np.ndarray, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
    """`compact(*window(t, v, s, e), e, distinct=True)` (the reference) for rows that each differ
    from the one before, with a time at or before s: the answer written once, without the
    window's copies."""
    i, j = t.searchsorted((s, max(s, e - 1)), "right").tolist()
    if i == 0:
        return compact(*window(t, v, s, e), e)
    head = 1 if (v[i - 1, 0] != 0 or v[i - 1, 1] != 0) else 0
    close = 1 if (v[j - 1, 0] != 0 or v[j - 1, 1] != 0) else 0
    m = j - i
    kt = np.empty(head + m + close, dtype=np.int64)
    kv = np.empty((head + m + close, 2), dtype=np.int64)
    if head:
        kt[0] = s
        kv[0] = v[i - 1]
    kt[head:head + m] = t[i:j]
    kv[head:head + m] = v[i:j]
    if close:
        kt[-1] = e
        kv[-1] = 0
    return kt, kv


def union(*parts: np.ndarray) -> np.ndarray:
    """Sorted distinct times of the parts (np.union1d without its general-purpose overhead)."""
    x = np.concatenate(parts)
    x.sort()
    keep = np.empty(len(x), dtype=bool)
    keep[:1] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def running(s: int, sources: list[tuple[Read, int]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums of functions read from the same s (`read`), source by source into columns
    `col, col + 1` of `width`: the distinct times where some value may change, and the running
    sums there (the changes summed in time order, as the scalar pass sums them)."""
    if one_function(sources, width):
        return running_one(s, sources[0][0])
    return running_merged(s, sources, width)


def one_function(sources: list[tuple[Read, int]], width: int) -> bool:
    """Whether `running` sums one plain function read in one block: a mirror's changes are never
    zero, so each of its sums then differs from the one before (`compact(..., distinct=True)`)."""
    return width == 2 and len(sources) == 1 and len(sources[0][0][1]) <= 1


def running_one(s: int, read: Read) -> tuple[np.ndarray, np.ndarray]:
    """`running` of one function read in one block (a plain `StepArrays.read`): its times are
    already sorted and distinct, so the sums need neither a sort nor a merge of equal times. The
    sums are taken along each component's own contiguous row (numpy's cumulative sum down the
    columns of an (n, 2) array is several times slower); the answer is that array's transpose."""
    first, blocks = read
    t, d = blocks[0] if blocks else (_NO_TIMES, _NO_VALUES)
    times = np.empty(len(t) + 1, dtype=np.int64)
    times[0] = s
    times[1:] = t
    run = np.empty((2, len(t) + 1), dtype=np.int64)
    run[:, 0] = first
    run[:, 1:] = d.T
    np.cumsum(run, axis=1, out=run)
    return times, run.T


def free_of_one(s: int, read: Read, cap: Res, end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """capacity - one function read in one block (`running_one`'s sums), with a closing row of
    zero at end: the times (n + 2), the free resources (n + 2, 2) and the sums (n + 1, 2), in
    arrays made once. `compact_free` compacts them; the reference is `compact(t, capacity -
    running_one(s, read), end)`."""
    first, blocks = read
    t, d = blocks[0] if blocks else (_NO_TIMES, _NO_VALUES)
    n = len(t)
    times = np.empty(n + 2, dtype=np.int64)
    times[0] = s
    times[1:n + 1] = t
    times[n + 1] = end
    run = np.empty((2, n + 1), dtype=np.int64)
    run[:, 0] = first
    run[:, 1:] = d.T
    np.cumsum(run, axis=1, out=run)
    # column-major like the sums (each component's own contiguous row), which is what numpy
    # subtracts fastest into; the readers take rows and columns alike
    free = np.empty((2, n + 2), dtype=np.int64).T
    np.subtract((cap[0], cap[1]), run.T, out=free[:n + 1])
    free[n + 1] = 0
    return times, free, run.T


def compact_free(t: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`free_of_one`'s arrays compacted: its rows each differ from the one before (a mirror's
    changes are never zero), so only the first row (dropped when zero) and the closing row (kept
    when the last value is not zero) are decided; views of the arrays it made."""
    head = 0 if (free[0, 0] != 0 or free[0, 1] != 0) else 1
    stop = len(t) if (free[-2, 0] != 0 or free[-2, 1] != 0) else len(t) - 1
    return t[head:stop], free[head:stop]


def running_merged(s: int, sources: list[tuple[Read, int]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """`running` of any sources: their times merged (a stable sort), the changes summed in time
    order, one row kept per distinct time (the reference for `running_one`)."""
    row = [0] * width
    parts = [np.array((s,), dtype=np.int64)]
    for (first, blocks), col in sources:
        row[col] += first[0]
        row[col + 1] += first[1]
        parts += [t for t, _d in blocks]
    times = np.concatenate(parts)
    deltas = np.zeros((len(times), width), dtype=np.int64)
    deltas[0] = row
    i = 1
    for (_first, blocks), col in sources:
        for _t, d in blocks:
            n = len(d)
            deltas[i:i + n, col:col + 2] = d
            i += n
    order = np.argsort(times, kind="stable")
    times = times[order]
    run = np.cumsum(deltas[order], axis=0)
    # the running sums after the last change at each time
    last = np.empty(len(times), dtype=bool)
    last[-1:] = True
    np.not_equal(times[1:], times[:-1], out=last[:-1])
    return times[last], run[last]


def compact(t: np.ndarray, a: np.ndarray, end: int, distinct: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Keep the times where the value changes (the first one if non-zero); close with zero at end.
    `distinct`: the caller knows that every row differs from the one before (`one_function`), so
    only the first row and the close are looked at. The answer is written once into arrays of its
    final length (an append copies it again)."""
    n = len(t)
    change = np.empty(n, dtype=bool)
    change[0] = bool(a[0, 0] != 0 or a[0, 1] != 0)
    if distinct:
        change[1:] = True
    else:
        # column by column: .any(axis=1) over two columns is three times slower
        np.logical_or(a[1:, 0] != a[:-1, 0], a[1:, 1] != a[:-1, 1], out=change[1:])
    # the last kept value is the last row's (every row after the last change repeats it)
    close = bool(a[-1, 0] != 0 or a[-1, 1] != 0)
    if distinct or change[1:].all():
        # the usual case (a sum of canonical functions over one source): every row after the first
        # is kept, copied whole rather than gathered by index
        first = 0 if change[0] else 1
        k = n - first
        kt = np.empty(k + close, dtype=np.int64)
        kv = np.empty((k + close, 2), dtype=np.int64)
        kt[:k] = t[first:]
        kv[:k] = a[first:]
    else:
        # rows taken by index: a boolean mask over the rows of a two-column array is several times slower
        keep = np.flatnonzero(change)
        k = len(keep)
        kt = np.empty(k + close, dtype=np.int64)
        kv = np.empty((k + close, 2), dtype=np.int64)
        np.take(t, keep, out=kt[:k])
        np.take(a, keep, axis=0, out=kv[:k])
    if close:
        kt[k] = end
        kv[k] = 0
    return kt, kv


def arrays_of(f: StepFunction) -> tuple[np.ndarray, np.ndarray] | None:
    """f's canonical breakpoints as arrays; None when int64 might not hold them (or sums of them), or
    f is not two-dimensional (the arrays' paths are written for two columns). The bounds are checked
    on the arrays (`arrays_of_walk` is the reference): a Python pass over every value was half of an
    aligned submit's time on a plan too small for the mirrors."""
    if len(f.zero) != 2:
        return None
    d = f._d
    if not d:
        return _NO_TIMES, _NO_VALUES
    keys = list(chain.from_iterable(d._list._lists))
    if keys[0] < LONG_MIN or keys[-1] > LONG_MAX:
        return None
    try:
        v = np.array(list(map(d.__getitem__, keys)), dtype=np.int64).reshape(-1, 2)
    except OverflowError:
        return None
    if int(v.max()) > MAX_VALUE or int(v.min()) < -MAX_VALUE:
        return None
    return np.array(keys, dtype=np.int64), v


def arrays_of_walk(f: StepFunction) -> tuple[np.ndarray, np.ndarray] | None:
    """`arrays_of` with the bounds checked in Python, value by value (the reference)."""
    if len(f.zero) != 2:
        return None
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
    `merge_pieces(g, f, s, e, rsub)` checks piece by piece. An f of a few pieces (a reservation's
    ask against the availability) is compared piece by piece with g's minima there, reading g's
    rows in place; `fits_under_merged` is the general form and the reference."""
    if s >= e:
        return True
    ft, fv = f
    if len(ft) > _FEW_PIECES:
        return fits_under_merged(f, g, s, e)
    gt, gv = g
    i, j = ft.searchsorted((s, max(s, e - 1)), "right").tolist()
    xs = [s, *ft[i:j].tolist()]
    vals = ([fv[i - 1].tolist()] if i > 0 else [[0, 0]]) + fv[i:j].tolist()
    for x, y, (m, c) in zip(xs, [*xs[1:], e], vals):
        a, b = gt.searchsorted((x, y - 1), "right").tolist()
        # g's rows over [x, y): from its last breakpoint at or before x (zero before its first)
        if a == 0 and (m > 0 or c > 0):
            return False
        rows = gv[max(a - 1, 0):b]
        if len(rows) and (int(rows[:, 0].min()) < m or int(rows[:, 1].min()) < c):
            return False
    return True


def fits_under_merged(f: tuple[np.ndarray, np.ndarray], g: tuple[np.ndarray, np.ndarray], s: int, e: int) -> bool:
    """`fits_under` on the union of both breakpoints (the reference, and the form for any f)."""
    if s >= e:
        return True
    ft, fv = window(*f, s, e)
    gt, gv = window(*g, s, e)
    # every piece of the union starts at a time of f or of g (both start at s): g at f's times,
    # then f at g's times, cover all of them
    if bool((gv.take(gt.searchsorted(ft, "right") - 1, axis=0) < fv).any()):
        return False
    return not bool((gv < fv.take(ft.searchsorted(gt, "right") - 1, axis=0)).any())


#: `fits_under` compares an f of at most this many breakpoints piece by piece
_FEW_PIECES = 8
