"""Resources over time: YARN's RLESparseResourceAllocation as a run-length step function.

A `StepFunction` maps sorted breakpoints to values; a value holds from its breakpoint until the next
one, and the function is zero before the first breakpoint. The map is kept canonical (no breakpoint
whose value equals the value just before it), so two functions are equal exactly when they describe
the same function, and removing what was added restores the map byte for byte.

Every operation costs time proportional to the breakpoints it touches, never to time steps: an
interval update touches the breakpoints inside the interval, a merge walks the union of two
breakpoint lists.

Values are YARN resources, `(memory, vCores)` integer pairs (`Res`). `Calculator` holds the two
notions of "bigger" of the contract (§2.3): YARN's DefaultResourceCalculator (memory only) and its
DominantResourceCalculator, both relative to a reference capacity.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

from sortedcontainers import SortedDict

Res = tuple[int, int]
ZERO: Res = (0, 0)

#: Long.MAX_VALUE: "unbounded" in YARN times
LONG_MAX = 9223372036854775807


def radd(a: Res, b: Res) -> Res:
    """Component-wise sum."""
    return (a[0] + b[0], a[1] + b[1])


def rsub(a: Res, b: Res) -> Res:
    """Component-wise difference (may go negative)."""
    return (a[0] - b[0], a[1] - b[1])


def rneg(a: Res) -> Res:
    """-a."""
    return (-a[0], -a[1])


def rmul(a: Res, k: int) -> Res:
    """a scaled by an integer k."""
    return (a[0] * k, a[1] * k)


def fits_in(a: Res, b: Res) -> bool:
    """YARN's Resources.fitsIn: a <= b in every component (the admission test, contract §2.3 item 2)."""
    return a[0] <= b[0] and a[1] <= b[1]


def fmt_res(r: Res) -> str:
    """YARN's Resource.toString: `<memory:M, vCores:V>`."""
    return f"<memory:{r[0]}, vCores:{r[1]}>"


_F32 = struct.Struct("f")
_F32_EXACT = 1 << 24


def f32(x: float) -> float:
    """Round a double to single precision (YARN keeps percentages and shares as Java floats)."""
    if type(x) is int and -_F32_EXACT <= x <= _F32_EXACT:
        return float(x)  # every integer up to 2**24 is a float already: skip the pack/unpack
    return float(_F32.unpack(_F32.pack(x))[0])


def f32_str(x: float) -> str:
    """Java's Float.toString, for messages that print a float."""
    if x != x:
        return "NaN"
    if x == 0:
        return "0.0"
    # shortest decimal that round-trips in single precision
    digits = 1
    while digits < 12:
        s = f"{x:.{digits}g}"
        if f32(float(s)) == x:
            break
        digits += 1
    v = float(s)
    if 1e-3 <= abs(v) < 1e7:
        out = repr(v)
        if "e" in out or "E" in out:
            out = f"{v:f}".rstrip("0")
        if "." not in out:
            out += ".0"
        if out.endswith("."):
            out += "0"
        return out
    mant, exp = f"{v:.{max(digits - 1, 1)}e}".split("e")
    mant = mant.rstrip("0")
    if mant.endswith("."):
        mant += "0"
    return f"{mant}E{int(exp)}"


class Calculator:
    """YARN's resource calculators (contract §2.3).

    `default` orders by memory only; `dominant` by dominant share of the reference capacity. Ties
    of min/max return the first operand, as YARN's Resources.min/max do.
    """

    def __init__(self, kind: str = "default") -> None:
        if kind not in ("default", "dominant"):
            raise ValueError(f"unknown resource calculator {kind!r}")
        self.kind = kind

    def compare(self, a: Res, b: Res, ref: Res) -> int:
        """-1, 0 or 1 as a is smaller than, equal to or bigger than b."""
        if self.kind == "default":
            return (a[0] > b[0]) - (a[0] < b[0])
        if a == b:
            return 0
        if ref[0] == 0 or ref[1] == 0:
            # YARN: with a zero reference component only a component-wise dominance orders them
            if a[0] >= b[0] and a[1] >= b[1]:
                return 1
            if a[0] <= b[0] and a[1] <= b[1]:
                return -1
            return 0
        sa = (a[0] / ref[0], a[1] / ref[1])
        sb = (b[0] / ref[0], b[1] / ref[1])
        da, db = max(sa), max(sb)
        if da != db:
            return 1 if da > db else -1
        la, lb = min(sa), min(sb)
        return (la > lb) - (la < lb)

    def greater(self, a: Res, b: Res, ref: Res) -> bool:
        """a > b under this calculator, relative to `ref` (the cluster resource)."""
        return self.compare(a, b, ref) > 0

    def rmin(self, a: Res, b: Res, ref: Res) -> Res:
        """Resources.min: the smaller under this calculator (a on a tie)."""
        return a if self.compare(a, b, ref) <= 0 else b

    def rmax(self, a: Res, b: Res, ref: Res) -> Res:
        """Resources.max: the larger under this calculator (a on a tie)."""
        return a if self.compare(a, b, ref) >= 0 else b

    def ratio(self, a: Res, b: Res) -> float:
        """a / b as YARN's calculator ratio, in single precision; 0 when b has a zero component used."""
        if self.kind == "default":
            if b[0] == 0:
                return 0.0
            return f32(f32(a[0]) / f32(b[0]))
        if b[0] == 0 or b[1] == 0:
            return 0.0
        return f32(max(f32(a[0]) / f32(b[0]), f32(a[1]) / f32(b[1])))

    def gangs(self, avail: Res, gang: Res, cap: int) -> int:
        """How many gangs fit in avail, at most cap: exact floor division (contract §2.3, §12 row 8)."""
        if self.kind == "default":
            if gang[0] <= 0:
                return cap if avail[0] >= 0 else min(cap, -1)
            return min(cap, avail[0] // gang[0])
        best: int | None = None
        for a, g in zip(avail, gang):
            if g > 0:
                n = a // g
                best = n if best is None else min(best, n)
        if best is None:
            return cap if avail[0] >= 0 and avail[1] >= 0 else min(cap, -1)
        return min(cap, best)

    def is_positive(self, a: Res, ref: Res) -> bool:
        """Resources.greaterThan(calc, ref, a, ZERO)."""
        return self.compare(a, ZERO, ref) > 0



def _as_pieces(ks: list[int], vs: list[Res], e: int) -> Iterator[tuple[int, int, Res]]:
    """Breakpoints and their values as (start, end, value) pieces, the last one ending at `e`."""
    ends = ks[1:]
    ends.append(e)
    return zip(ks, ends, vs)

def interval_breakpoints(intervals: Iterable[tuple[int, int, Res]]) -> tuple[list[int], list[Res]]:
    """The canonical breakpoints of the sum of constant pieces `[start, end)` (overlapping pieces
    add up), as two lists: `StepFunction.from_intervals` without building the map."""
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


class StepFunction:
    """A piecewise-constant resource function of time on sorted breakpoints (canonical form)."""

    __slots__ = ("_d",)

    def __init__(self, points: Iterable[tuple[int, Res]] | None = None) -> None:
        if points is None:
            self._d: SortedDict = SortedDict()
            return
        keys: list[int] = []
        values: list[Res] = []
        prev = ZERO
        for t, v in sorted(points):
            if v != prev:
                keys.append(t)
                values.append(v)
                prev = v
        self._d = SortedDict(zip(keys, values))

    @classmethod
    def _bulk(cls, keys: list[int], values: list[Res]) -> StepFunction:
        """From sorted, canonical breakpoint lists; one bulk load is far cheaper than one insert each."""
        f = cls.__new__(cls)
        f._d = SortedDict(zip(keys, values))
        return f

    @classmethod
    def from_pieces(cls, pieces: Iterable[tuple[int, int, Res]]) -> StepFunction:
        """From contiguous pieces in time order (as `pieces` and `merge_pieces` yield), zero outside."""
        keys: list[int] = []
        values: list[Res] = []
        prev = ZERO
        last_end: int | None = None
        for a, b, r in pieces:
            if r != prev:
                keys.append(a)
                values.append(r)
                prev = r
            last_end = b
        if prev != ZERO and last_end is not None:
            keys.append(last_end)
            values.append(ZERO)
        return cls._bulk(keys, values)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_intervals(cls, intervals: Iterable[tuple[int, int, Res]]) -> StepFunction:
        """Sum of constant pieces `[start, end)`, overlapping pieces add up."""
        return cls._bulk(*interval_breakpoints(intervals))

    def copy(self) -> StepFunction:
        """An independent copy."""
        f = StepFunction.__new__(StepFunction)
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
            return ZERO
        return d.peekitem(i)[1]

    def zero_on(self, s: int, e: int) -> bool:
        """Whether the function is zero everywhere on `[s, e)` (`segments` would give just a zero at s)."""
        d = self._d
        keys = d._list
        i = keys.bisect_right(s)
        if i > 0 and d[keys[i - 1]] != ZERO:
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
        if v != ZERO:
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
        for (t, v), (t2, _) in zip(items, items[1:]):
            if v != ZERO:
                out.append((t, t2, v))
        if items and items[-1][1] != ZERO:
            out.append((items[-1][0], LONG_MAX, items[-1][1]))
        return out

    def integral(self, s: int, e: int) -> tuple[int, int]:
        """Exact integral of each component over `[s, e)`."""
        m = v = 0
        for a, b, r in self.pieces(s, e):
            m += r[0] * (b - a)
            v += r[1] * (b - a)
        return (m, v)

    def fits_under(self, other: StepFunction, s: int, e: int) -> bool:
        """self(t) <= other(t) component-wise for every t in `[s, e)`."""
        return all(r[0] <= 0 and r[1] <= 0 for _a, _b, r in merge_pieces(self, other, s, e, rsub))

    # -- updates ------------------------------------------------------------------------------
    def add(self, s: int, e: int, r: Res) -> None:
        """Add r on `[s, e)`; cost proportional to the breakpoints inside the interval."""
        if s >= e or r == ZERO:
            return
        d = self._d
        if s not in d:
            d[s] = self.at(s)
        if e not in d:
            d[e] = self.at(e)
        rm, rv = r
        keys = d._list
        # the keys exist already, so the plain dict store is enough (SortedDict's would look
        # each one up in its sorted list again)
        setv = dict.__setitem__
        for k in keys[keys.bisect_left(s):keys.bisect_left(e)]:
            v = d[k]
            setv(d, k, (v[0] + rm, v[1] + rv))
        self._coalesce(s)
        self._coalesce(e)

    def remove(self, s: int, e: int, r: Res) -> None:
        """Subtract r on `[s, e)`."""
        self.add(s, e, (-r[0], -r[1]))

    def add_pieces(self, pieces: Iterable[tuple[int, int, Res]]) -> None:
        """`add` of every piece, in one walk over the breakpoints the pieces span.

        The result is the function the `add`s give one by one, and canonical forms are unique, so
        it is the same map: every time in the span gets the old value plus the deltas summed up
        to it; a time whose value then equals the one before is dropped, a new one inserted.
        """
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
        last = d[keys[i0 - 1]] if i0 > 0 else ZERO  # the new value just before the walk's position
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
        for t, v in new:
            d[t] = v

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
        prev = d[keys[i - 1]] if i > 0 else ZERO
        if v == prev:
            del d[t]

    def clip(self, s: int, e: int) -> StepFunction:
        """The function restricted to `[s, e)` (zero elsewhere)."""
        if s >= e:
            return StepFunction()
        # the breakpoints inside (s, e) are canonical already: only the value at s (which may be
        # zero) and the closing zero at e need what from_pieces would do
        keys, values = _breaks(self, s, e)
        if values[0] == ZERO:
            del keys[0]
            del values[0]
        if values and values[-1] != ZERO:
            keys.append(e)
            values.append(ZERO)
        return StepFunction._bulk(keys, values)


def _breaks(f: StepFunction | PeriodicStepFunction, s: int, e: int) -> tuple[list[int], list[Res]]:
    """The breakpoints of f inside `[s, e)` as parallel lists, the first one at s."""
    if isinstance(f, StepFunction):
        d = f._d
        keys = d._list
        i = keys.bisect_right(s)
        inner = keys[i:keys.bisect_left(e)]
        values = [d[keys[i - 1]] if i > 0 else ZERO]
        values.extend(map(d.__getitem__, inner))
        inner.insert(0, s)
        return inner, values
    return _periodic_breaks(f, s, e)


def _periodic_breaks(f: PeriodicStepFunction, s: int, e: int) -> tuple[list[int], list[Res]]:
    """`_breaks` of the unrolled function, with `pieces`' merging across period boundaries: the
    base is canonical, so only a period's first value can repeat the one before it."""
    if f.base.is_empty():
        return [s], [ZERO]
    T = f.period
    d = f.base._d
    keys = d._list
    getv = d.__getitem__
    ks: list[int] = []
    vs: list[Res] = []
    k = s // T
    off = k * T
    while off < e:
        lo = s - off if s > off else 0
        hi = e - off if e < off + T else T
        i = keys.bisect_right(lo)
        v0 = getv(keys[i - 1]) if i > 0 else ZERO
        if not vs or vs[-1] != v0:
            ks.append(lo + off)
            vs.append(v0)
        inner = keys[i:keys.bisect_left(hi)]
        if inner:
            ks.extend([t + off for t in inner])
            vs.extend(map(getv, inner))
        off += T
    return ks, vs


def segments(f: StepFunction | PeriodicStepFunction, s: int, e: int) -> tuple[list[int], list[Res]]:
    """The breakpoints of f strictly inside `(s, e)` plus its value at s, as fresh parallel lists:
    what `merge_pieces` walks for f over `[s, e)`, and over any `[a, b)` inside it."""
    return _breaks(f, s, e)


def merge_pieces(
    a: StepFunction | PeriodicStepFunction,
    b: StepFunction | PeriodicStepFunction,
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
    a: StepFunction | PeriodicStepFunction,
    b: StepFunction | PeriodicStepFunction,
    s: int,
    e: int,
    op: Callable[[Res, Res], Res],
) -> StepFunction:
    """op(a, b) on `[s, e)` as a new step function (zero outside).

    The same walk as `merge_pieces` feeding `StepFunction.from_pieces`, fused: the canonical
    breakpoints are collected as the union is walked, without the list of pieces in between.
    """
    if s >= e:
        return StepFunction()
    ka, va = _breaks(a, s, e)
    kb, vb = _breaks(b, s, e)
    ka.append(e)
    kb.append(e)
    keys: list[int] = []
    values: list[Res] = []
    prev = ZERO
    add = op is radd
    i = j = 0
    t = s
    na = ka[1]
    nb = kb[1]
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
    if prev != ZERO:
        keys.append(e)
        values.append(ZERO)
    return StepFunction._bulk(keys, values)


def madd(a: StepFunction, b: StepFunction) -> StepFunction:
    """a + b everywhere."""
    f = a.copy()
    f.add_function(b)
    return f


def wrap_pieces(
    pieces: Iterable[tuple[int, int, Res]], period: int, *, clamp: bool = False
) -> list[tuple[int, int, Res]] | None:
    """Pieces `[a, b)` taken modulo `period`: one split in two where it crosses the period's end
    (the wrapped part is kept, contract §7.1 item 6 / §12 row 1); empty and zero pieces dropped.
    A piece longer than the period covers the whole period with `clamp`, else the answer is None."""
    out: list[tuple[int, int, Res]] = []
    for s, e, r in pieces:
        length = e - s
        if length <= 0 or r == ZERO:
            continue
        if length > period:
            if not clamp:
                return None
            out.append((0, period, r))
            continue
        s0 = s % period
        if s0 + length <= period:
            out.append((s0, s0 + length, r))
        else:
            out.append((s0, period, r))
            out.append((0, s0 + length - period, r))
    return out


class PeriodicStepFunction:
    """A step function that repeats with period T (YARN's PeriodicRLESparseResourceAllocation).

    The base function lives on offsets `[0, T)`; an interval that passes T wraps to `[0, ...)`.
    """

    __slots__ = ("period", "base")

    def __init__(self, period: int) -> None:
        if period <= 0:
            raise ValueError("period must be positive")
        self.period = period
        self.base = StepFunction()

    def copy(self) -> PeriodicStepFunction:
        """An independent copy."""
        p = PeriodicStepFunction(self.period)
        p.base = self.base.copy()
        return p

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PeriodicStepFunction) and self.period == other.period and self.base == other.base

    def __hash__(self) -> int:  # pragma: no cover
        raise TypeError("PeriodicStepFunction is mutable")

    def is_empty(self) -> bool:
        """Zero over the whole period."""
        return self.base.is_empty()

    def add(self, s: int, e: int, r: Res) -> None:
        """Add r on `[s, e)` taken modulo the period (the length must not exceed the period)."""
        pieces = wrap_pieces(((s, e, r),), self.period)
        if pieces is None:
            raise ValueError(f"interval of length {e - s} is longer than the period {self.period}")
        for a, b, x in pieces:
            self.base.add(a, b, x)

    def remove(self, s: int, e: int, r: Res) -> None:
        """Subtract r on `[s, e)`, wrapping as `add` does."""
        self.add(s, e, rneg(r))

    def wrapped(self, pieces: Iterable[tuple[int, int, Res]]) -> list[tuple[int, int, Res]] | None:
        """The pieces as `add` puts them on the base (wrapped past the period), or None when
        `add` would refuse one (longer than the period)."""
        return wrap_pieces(pieces, self.period)

    def at(self, t: int) -> Res:
        """The value at time t (t taken modulo the period)."""
        return self.base.at(t % self.period)

    def pieces(self, s: int, e: int) -> Iterator[tuple[int, int, Res]]:
        """Pieces over `[s, e)` of the unrolled function (merged across period boundaries)."""
        if s >= e:
            return iter(())
        return _as_pieces(*_periodic_breaks(self, s, e), e)

    def unrolled(self, s: int, e: int) -> StepFunction:
        """The function over `[s, e)` as a plain step function (zero outside)."""
        return StepFunction.from_pieces(self.pieces(s, e))

    def last_change_at_or_before(self, t: int) -> int | None:
        """Latest breakpoint of the unrolled function at or before t."""
        if self.base.is_empty():
            return None
        T = self.period
        k, off = divmod(t, T)
        c = self.base.last_change_at_or_before(off)
        if c is not None:
            return k * T + c
        last = self.base.last_change()
        assert last is not None
        return (k - 1) * T + last


def piece_integral(pieces: Iterable[tuple[int, int, Res]]) -> Res:
    """The exact integral of a sum of pieces, per component."""
    m = v = 0
    for a, b, r in pieces:
        m += r[0] * (b - a)
        v += r[1] * (b - a)
    return (m, v)


def periods_meeting(s: int, e: int, period: int) -> int:
    """How many copies `[k*period, (k+1)*period)` can meet `[s - 2*period, e]`, at most (with room to spare)."""
    return max(e - s, 0) // period + 5


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, in integers."""
    return -((-a) // b)


def round_up(t: int, step: int) -> int:
    """Round t up to a multiple of step (YARN's stepRoundUp)."""
    return ceil_div(t, step) * step


def round_down(t: int, step: int) -> int:
    """Round t down to a multiple of step (YARN's stepRoundDown)."""
    return (t // step) * step


def isclose(a: float, b: float) -> bool:  # pragma: no cover - tiny helper for tests
    """Floats equal up to rounding (relative 1e-9, absolute 1e-12)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
