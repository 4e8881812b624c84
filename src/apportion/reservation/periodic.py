"""Periodic resources over time: YARN's PeriodicRLESparseResourceAllocation.

A `PeriodicStepFunction` keeps one period of a load on offsets `[0, T)` and reads as that period
repeated for ever; an interval that passes the period's end wraps to `[0, ...)` (`wrap_pieces`,
the one copy of the wrap, also used to fold a periodic reservation's allocation).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from apportion.reservation.resmath import ZERO, Res, is_zero, rneg
from apportion.reservation.stepfn import StepFunction, _as_pieces


def wrap_pieces(
    pieces: Iterable[tuple[int, int, Res]], period: int, *, clamp: bool = False
) -> list[tuple[int, int, Res]] | None:
    """Pieces `[a, b)` taken modulo `period`: one split in two where it crosses the period's end
    (the wrapped part is kept, contract §7.1 item 6 / §12 row 1); empty and zero pieces dropped.
    A piece longer than the period covers the whole period with `clamp`, else the answer is None."""
    out: list[tuple[int, int, Res]] = []
    for s, e, r in pieces:
        length = e - s
        if length <= 0 or is_zero(r):
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

    def __init__(self, period: int, zero: Res = ZERO) -> None:
        if period <= 0:
            raise ValueError("period must be positive")
        self.period = period
        self.base = StepFunction(zero=zero)

    @property
    def zero(self) -> Res:
        """The function's zero."""
        return self.base.zero

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

    def breaks(self, s: int, e: int) -> tuple[list[int], list[Res]]:
        """The breakpoints of the unrolled function inside `[s, e)` as parallel lists, the first
        at s (what stepfn's merges walk)."""
        return _periodic_breaks(self, s, e)

    def pieces(self, s: int, e: int) -> Iterator[tuple[int, int, Res]]:
        """Pieces over `[s, e)` of the unrolled function (merged across period boundaries)."""
        if s >= e:
            return iter(())
        return _as_pieces(*_periodic_breaks(self, s, e), e)

    def unrolled(self, s: int, e: int) -> StepFunction:
        """The function over `[s, e)` as a plain step function (zero outside)."""
        return StepFunction.from_pieces(self.pieces(s, e), self.base.zero)

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


def _periodic_breaks(f: PeriodicStepFunction, s: int, e: int) -> tuple[list[int], list[Res]]:
    """`_breaks` of the unrolled function, with `pieces`' merging across period boundaries: the
    base is canonical, so only a period's first value can repeat the one before it."""
    z = f.base.zero
    if f.base.is_empty():
        return [s], [z]
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
        v0 = getv(keys[i - 1]) if i > 0 else z
        if not vs or vs[-1] != v0:
            ks.append(lo + off)
            vs.append(v0)
        inner = keys[i:keys.bisect_left(hi)]
        if inner:
            ks.extend([t + off for t in inner])
            vs.extend(map(getv, inner))
        off += T
    return ks, vs


def piece_integral(pieces: Iterable[tuple[int, int, Res]], k: int = 2) -> Res:
    """The exact integral of a sum of pieces (vectors of k components), per component."""
    if k == 2:
        m = v = 0
        for a, b, r in pieces:
            m += r[0] * (b - a)
            v += r[1] * (b - a)
        return (m, v)
    total = [0] * k
    for a, b, r in pieces:
        for i, x in enumerate(r):
            total[i] += x * (b - a)
    return tuple(total)


def periods_meeting(s: int, e: int, period: int) -> int:
    """How many copies `[k*period, (k+1)*period)` can meet `[s - 2*period, e]`, at most (with room to spare)."""
    return max(e - s, 0) // period + 5
