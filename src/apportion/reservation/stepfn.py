"""Resources over time: YARN's RLESparseResourceAllocation as a run-length step function.

A `StepFunction` maps sorted breakpoints to values; a value holds from its breakpoint until the next
one, and the function is zero before the first breakpoint. The map is kept canonical (no breakpoint
whose value equals the value just before it), so two functions are equal exactly when they describe
the same function, and removing what was added restores the map byte for byte.

Every operation costs time proportional to the breakpoints it touches, never to time steps: an
interval update touches the breakpoints inside the interval, a merge walks the union of two
breakpoint lists.

Values are YARN resource vectors (`Res`, resmath.py), all of one length: a function knows its
zero, the value before its first breakpoint (two components unless told otherwise, or taken from
the values it is built from). The periodic variant is in periodic.py.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import Protocol

from sortedcontainers import SortedDict

from apportion.reservation.breakpoints import interval_breakpoints
from apportion.reservation.resmath import LONG_MAX, ZERO, Res, radd, rneg, rsub


class Unrolled(Protocol):
    """A step function read through its breakpoints only (PeriodicStepFunction, periodic.py)."""

    @property
    def zero(self) -> Res:
        """The function's zero."""

    def breaks(self, s: int, e: int) -> tuple[list[int], list[Res]]:
        """The breakpoints inside `[s, e)` as parallel lists, the first at s."""


def _as_pieces(ks: list[int], vs: list[Res], e: int) -> Iterator[tuple[int, int, Res]]:
    """Breakpoints and their values as (start, end, value) pieces, the last one ending at `e`."""
    ends = ks[1:]
    ends.append(e)
    return zip(ks, ends, vs)

class StepFunction:
    """A piecewise-constant resource function of time on sorted breakpoints (canonical form)."""

    __slots__ = ("_d", "_z")

    def __init__(self, points: Iterable[tuple[int, Res]] | None = None, zero: Res = ZERO) -> None:
        self._z = zero
        if points is None:
            self._d: SortedDict = SortedDict()
            return
        keys: list[int] = []
        values: list[Res] = []
        pts = sorted(points)
        if pts:
            self._z = zero = (0,) * len(pts[0][1])
        prev = zero
        for t, v in pts:
            if v != prev:
                keys.append(t)
                values.append(v)
                prev = v
        self._d = SortedDict(zip(keys, values))

    @property
    def zero(self) -> Res:
        """The function's zero (the value before its first breakpoint)."""
        return self._z

    @classmethod
    def _bulk(cls, keys: list[int], values: list[Res], zero: Res = ZERO) -> StepFunction:
        """From sorted, canonical breakpoint lists of vectors as long as `zero`; one bulk load is far
        cheaper than one insert each."""
        f = cls.__new__(cls)
        f._d = SortedDict(zip(keys, values))
        f._z = zero
        return f

    @classmethod
    def from_pieces(cls, pieces: Iterable[tuple[int, int, Res]], zero: Res | None = None) -> StepFunction:
        """From contiguous pieces in time order (as `pieces` and `merge_pieces` yield), zero outside
        (`zero`, else the first piece's length)."""
        keys: list[int] = []
        values: list[Res] = []
        prev = zero
        last_end: int | None = None
        for a, b, r in pieces:
            if prev is None:
                prev = zero = (0,) * len(r)
            if r != prev:
                keys.append(a)
                values.append(r)
                prev = r
            last_end = b
        if zero is None:
            zero = ZERO
        if prev != zero and last_end is not None:
            keys.append(last_end)
            values.append(zero)
        return cls._bulk(keys, values, zero)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_intervals(cls, intervals: Iterable[tuple[int, int, Res]], zero: Res = ZERO) -> StepFunction:
        """Sum of constant pieces `[start, end)`, overlapping pieces add up (`zero` for no piece)."""
        keys, values = interval_breakpoints(intervals)
        if values and len(values[0]) != len(zero):
            zero = (0,) * len(values[0])
        return cls._bulk(keys, values, zero)

    def copy(self) -> StepFunction:
        """An independent copy."""
        f = StepFunction.__new__(StepFunction)
        f._z = self._z
        # SortedDict.copy walks its items view in Python (and dict.copy of a SortedDict takes the
        # slow path too); reading the sorted key chunks and the dict directly is about twice as fast
        d = self._d
        keys = list(chain.from_iterable(d._list._lists))
        f._d = SortedDict(zip(keys, map(d.__getitem__, keys)))
        return f

    # -- queries ------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, StepFunction) and list(self._d.items()) == list(other._d.items())

    def __hash__(self) -> int:  # pragma: no cover - mutable, never hashed
        raise TypeError("StepFunction is mutable")

    def __repr__(self) -> str:
        return f"StepFunction({list(self._d.items())!r})"

    def __len__(self) -> int:
        return len(self._d)

    def is_empty(self) -> bool:
        """No breakpoint: zero everywhere."""
        return not self._d

    def breakpoints(self) -> list[tuple[int, Res]]:
        """(time, the value from that time on), in time order."""
        return list(self._d.items())

    def items_between(self, s: int, e: int) -> list[tuple[int, Res]]:
        """The breakpoints t with s <= t <= e, in order."""
        d = self._d
        return [(t, d[t]) for t in d.irange(s, e)]

    def at(self, t: int) -> Res:
        """The value at time t."""
        d = self._d
        i = d.bisect_right(t) - 1
        if i < 0:
            return self._z
        return d.peekitem(i)[1]

    def zero_on(self, s: int, e: int) -> bool:
        """Whether the function is zero everywhere on `[s, e)` (`segments` would give just a zero at s)."""
        d = self._d
        keys = d._list
        i = keys.bisect_right(s)
        if i > 0 and d[keys[i - 1]] != self._z:
            return False
        return i == len(keys) or keys[i] >= e

    def first_change(self) -> int | None:
        """The earliest breakpoint, None if there is none."""
        return self._d.peekitem(0)[0] if self._d else None

    def last_change(self) -> int | None:
        """The latest breakpoint, None if there is none."""
        return self._d.peekitem(-1)[0] if self._d else None

    def last_change_at_or_before(self, t: int) -> int | None:
        """The latest breakpoint <= t, None if there is none."""
        d = self._d
        i = d.bisect_right(t) - 1
        return d.peekitem(i)[0] if i >= 0 else None

    def next_change_after(self, t: int) -> int | None:
        """The earliest breakpoint > t, None if there is none."""
        d = self._d
        i = d.bisect_right(t)
        return d.peekitem(i)[0] if i < len(d) else None

    def last_nonzero_end(self) -> int:
        """End of the last non-zero piece, or -1 (contract §3.4 lastEndTime, §12 row 9)."""
        d = self._d
        if not d:
            return -1
        t, v = d.peekitem(-1)
        if v != self._z:
            return LONG_MAX
        return t

    def pieces(self, s: int, e: int) -> Iterator[tuple[int, int, Res]]:
        """The constant pieces covering `[s, e)` in time order, zero pieces included."""
        if s >= e:
            return iter(())
        return _as_pieces(*_breaks(self, s, e), e)

    def nonzero_pieces(self) -> list[tuple[int, int, Res]]:
        """All maximal constant non-zero pieces."""
        out: list[tuple[int, int, Res]] = []
        items = list(self._d.items())
        z = self._z
        for (t, v), (t2, _) in zip(items, items[1:]):
            if v != z:
                out.append((t, t2, v))
        if items and items[-1][1] != z:
            out.append((items[-1][0], LONG_MAX, items[-1][1]))
        return out

    def integral(self, s: int, e: int) -> Res:
        """Exact integral of each component over `[s, e)`."""
        total = [0] * len(self._z)
        for a, b, r in self.pieces(s, e):
            for i, x in enumerate(r):
                total[i] += x * (b - a)
        return tuple(total)

    def fits_under(self, other: StepFunction, s: int, e: int) -> bool:
        """self(t) <= other(t) component-wise for every t in `[s, e)`."""
        return all(max(r) <= 0 for _a, _b, r in merge_pieces(self, other, s, e, rsub))

    # -- updates ------------------------------------------------------------------------------
    def add(self, s: int, e: int, r: Res) -> None:
        """Add r on `[s, e)`; cost proportional to the breakpoints inside the interval."""
        if s >= e or r == self._z:
            return
        d = self._d
        if s not in d:
            d[s] = self.at(s)
        if e not in d:
            d[e] = self.at(e)
        keys = d._list
        # the keys exist already, so the plain dict store is enough (SortedDict's would look
        # each one up in its sorted list again)
        setv = dict.__setitem__
        if len(r) == 2:
            rm, rv = r
            for k in keys[keys.bisect_left(s):keys.bisect_left(e)]:
                v = d[k]
                setv(d, k, (v[0] + rm, v[1] + rv))
        else:
            for k in keys[keys.bisect_left(s):keys.bisect_left(e)]:
                setv(d, k, radd(d[k], r))
        self._coalesce(s)
        self._coalesce(e)

    def remove(self, s: int, e: int, r: Res) -> None:
        """Subtract r on `[s, e)`."""
        self.add(s, e, rneg(r))

    def add_pieces(self, pieces: Iterable[tuple[int, int, Res]]) -> None:
        """`add` of every piece, in one walk over the breakpoints the pieces span.

        The result is the function the `add`s give one by one, and canonical forms are unique, so
        it is the same map: every time in the span gets the old value plus the deltas summed up
        to it; a time whose value then equals the one before is dropped, a new one inserted.
        """
        if len(self._z) != 2:
            self._add_pieces_k(pieces)
            return
        deltas: dict[int, list[int]] = {}
        for a, b, r in pieces:
            if a >= b or r == ZERO:
                continue
            x = deltas.get(a)
            if x is None:
                x = deltas[a] = [0, 0]
            x[0] += r[0]
            x[1] += r[1]
            x = deltas.get(b)
            if x is None:
                x = deltas[b] = [0, 0]
            x[0] -= r[0]
            x[1] -= r[1]
        if not deltas:
            return
        events = sorted(deltas)
        d = self._d
        keys = d._list
        i0 = keys.bisect_left(events[0])
        old = keys[i0:keys.bisect_right(events[-1])]
        # the deltas sum to zero after the last event: past it nothing changes, and the next
        # breakpoint still differs from the value before it
        last = d[keys[i0 - 1]] if i0 > 0 else self._z  # the new value just before the walk's position
        last_old = last  # the old value there
        getv = d.__getitem__
        setv = dict.__setitem__
        update = dict.update  # the keys exist: the sorted list needs no change
        drop: list[int] = []
        new: list[tuple[int, Res]] = []
        dm = dv = 0
        p = 0
        n_old = len(old)
        for te in events:
            # the breakpoints strictly between two events all move by the same sum of deltas, so
            # each still differs from the one before it: only the events need a comparison
            q = bisect_left(old, te, p)
            if q > p:
                seg = old[p:q]
                last_old = getv(seg[-1])
                if dm or dv:
                    moved = [(v[0] + dm, v[1] + dv) for v in map(getv, seg)]
                    update(d, zip(seg, moved))
                    last = moved[-1]
                else:
                    last = last_old
                p = q
            dd = deltas[te]
            dm += dd[0]
            dv += dd[1]
            known = p < n_old and old[p] == te
            if known:
                last_old = getv(te)
                p += 1
            v = (last_old[0] + dm, last_old[1] + dv)
            if v == last:
                if known:
                    drop.append(te)
            else:
                if known:
                    setv(d, te, v)
                else:
                    new.append((te, v))
                last = v
        for t in drop:
            del d[t]
        for t, nv in new:
            d[t] = nv

    def _add_pieces_k(self, pieces: Iterable[tuple[int, int, Res]]) -> None:
        """`add_pieces` for vectors of any length: the same function, by one `add` per piece."""
        for a, b, r in pieces:
            self.add(a, b, r)

    def add_function(self, other: StepFunction, sign: int = 1) -> None:
        """self += sign * other, piece by piece."""
        for a, b, r in other.nonzero_pieces():
            self.add(a, b, r if sign > 0 else rneg(r))

    def _coalesce(self, t: int) -> None:
        d = self._d
        v = d.get(t)
        if v is None:
            return
        keys = d._list
        i = keys.bisect_left(t)
        prev = d[keys[i - 1]] if i > 0 else self._z
        if v == prev:
            del d[t]

    def clip(self, s: int, e: int) -> StepFunction:
        """The function restricted to `[s, e)` (zero elsewhere)."""
        z = self._z
        if s >= e:
            return StepFunction(zero=z)
        # the breakpoints inside (s, e) are canonical already: only the value at s (which may be
        # zero) and the closing zero at e need what from_pieces would do
        keys, values = _breaks(self, s, e)
        if values[0] == z:
            del keys[0]
            del values[0]
        if values and values[-1] != z:
            keys.append(e)
            values.append(z)
        return StepFunction._bulk(keys, values, z)


def _breaks(f: StepFunction | Unrolled, s: int, e: int) -> tuple[list[int], list[Res]]:
    """The breakpoints of f inside `[s, e)` as parallel lists, the first one at s."""
    if isinstance(f, StepFunction):
        d = f._d
        keys = d._list
        i = keys.bisect_right(s)
        inner = keys[i:keys.bisect_left(e)]
        values = [d[keys[i - 1]] if i > 0 else f._z]
        values.extend(map(d.__getitem__, inner))
        inner.insert(0, s)
        return inner, values
    return f.breaks(s, e)


def segments(f: StepFunction | Unrolled, s: int, e: int) -> tuple[list[int], list[Res]]:
    """The breakpoints of f strictly inside `(s, e)` plus its value at s, as fresh parallel lists:
    what `merge_pieces` walks for f over `[s, e)`, and over any `[a, b)` inside it."""
    return _breaks(f, s, e)


def merge_pieces(
    a: StepFunction | Unrolled,
    b: StepFunction | Unrolled,
    s: int,
    e: int,
    op: Callable[[Res, Res], Res],
) -> list[tuple[int, int, Res]]:
    """Pieces of op(a, b) over `[s, e)`, walking the union of both breakpoint lists."""
    if s >= e:
        return []
    ka, va = _breaks(a, s, e)
    kb, vb = _breaks(b, s, e)
    ka.append(e)
    kb.append(e)
    out: list[tuple[int, int, Res]] = []
    i = j = 0
    t = s
    na = ka[1]
    nb = kb[1]
    while True:
        end = na if na < nb else nb
        out.append((t, end, op(va[i], vb[j])))
        if end >= e:
            return out
        if na == end:
            i += 1
            na = ka[i + 1]
        if nb == end:
            j += 1
            nb = kb[j + 1]
        t = end


def merge(
    a: StepFunction | Unrolled,
    b: StepFunction | Unrolled,
    s: int,
    e: int,
    op: Callable[[Res, Res], Res],
) -> StepFunction:
    """op(a, b) on `[s, e)` as a new step function (zero outside).

    The same walk as `merge_pieces` feeding `StepFunction.from_pieces`, fused: the canonical
    breakpoints are collected as the union is walked, without the list of pieces in between.
    """
    z = a.zero
    if s >= e:
        return StepFunction(zero=z)
    ka, va = _breaks(a, s, e)
    kb, vb = _breaks(b, s, e)
    ka.append(e)
    kb.append(e)
    keys: list[int] = []
    values: list[Res] = []
    prev = z
    add = op is radd and len(z) == 2
    i = j = 0
    t = s
    na = ka[1]
    nb = kb[1]
    r: Res
    while True:
        end = na if na < nb else nb
        if add:
            x, y = va[i], vb[j]
            r = (x[0] + y[0], x[1] + y[1])
        else:
            r = op(va[i], vb[j])
        if r != prev:
            keys.append(t)
            values.append(r)
            prev = r
        if end >= e:
            break
        if na == end:
            i += 1
            na = ka[i + 1]
        if nb == end:
            j += 1
            nb = kb[j + 1]
        t = end
    if prev != z:
        keys.append(e)
        values.append(z)
    return StepFunction._bulk(keys, values, z)


def madd(a: StepFunction, b: StepFunction) -> StepFunction:
    """a + b everywhere."""
    f = a.copy()
    f.add_function(b)
    return f
