"""The low-cost aligned allocator's candidate windows on numpy arrays, grouped into runs.

A stage's candidates tile its window: `[lo + k dur, lo + (k + 1) dur)`, k < count. Between two
change points of the plan load, the availability and the job's earlier placements, neighbouring
candidates see one constant value each, so they have the same cost and fit: they form a run, and
a run is evaluated once, through its first member. A candidate with a change point strictly
inside is a run of its own. There are O(change points) runs whatever count is, so a stage costs
time in proportion to the change points in its window (plus the candidates it places on), never
to window/step. `WalkWindows` (aligned.py) is the reference: it walks the same pieces one by one,
and property tests check that both place every job identically.

The values are exactly the walk's: a candidate's cost is summed piece by piece in time order over
the runs of one value of (load + placements), each term `f32(value / capacity) * length / step`
in double precision (single-precision quotients are correctly rounded either way, and numpy adds
term by term here as the walk does); fits are exact integer floor divisions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from apportion.reservation.agents.merges import grid, lattice_grid, sorted_union, window_sums
from apportion.reservation.agents.sorted_runs import RunEntry, SortedRuns
from apportion.reservation.resmath import Res, rmul
from apportion.reservation.steparrays import MAX_VALUE, window
from apportion.reservation.stepfn import segments

if TYPE_CHECKING:
    from apportion.reservation.agents.iterative import JobContext

Interval = tuple[int, int, Res]

#: this many windows or fewer are summed one by one (np.add.accumulate), more position by
#: position; a stage of this many candidates or fewer is evaluated on one grid, a candidate a
#: run, and this many runs or fewer are sorted as a list
_POSITIONS = 16
#: `cost` sums a candidate with up to this many counts of gangs at once, in up to this many cells
_AHEAD = 16
_AHEAD_CELLS = 16_384

_NO_TIMES = np.zeros(0, dtype=np.int64)
_NO_ROWS = np.zeros((0, 2), dtype=np.int64)
_NO_FLOATS = np.zeros(0, dtype=np.float64)
_ZERO_ROW = np.zeros((1, 2), dtype=np.int64)


class ArrayWindows:
    """`Windows` (aligned.py) on arrays: the candidates of one stage, evaluated once per run."""

    def __init__(
        self, lo: int, dur: int, count: int, gang: Res, step: int, dominant: bool, cap: Res,
        ratio: Callable[[Res], float] | None = None,
    ) -> None:
        self.lo, self.dur, self.count, self.gang, self.step = lo, dur, count, gang, step
        self.dominant = dominant
        # calc.ratio against the capacity, for `cost_of` (the reference of `cost`)
        self.ratio = ratio
        # how the stage will ask for costs again (see `cost`): after `every` more gangs, up to
        # `asks` times for one candidate
        self.every, self.asks = 1, 1
        self.cap32 = _f32(cap)
        self.gang_arr = _i64(gang)
        self.counts: dict[int, int] = {}  # gangs the stage placed, per candidate
        # filled by make(): per run, its positions [p0, p1), cost and fit (arrays: a stage reads
        # a few runs of thousands, so they are never made Python lists)
        self.p0s = self.p1s = _NO_TIMES
        self.costs = _NO_FLOATS
        self.fits = _NO_TIMES
        # (availability - earlier placements) at the pieces of the runs' first members, run r's at
        # rows bounds[r]:bounds[r + 1]; from it, per run when first asked, the per-component
        # minimum and the value at the run's start (a run longer than one candidate is constant)
        self.free = _NO_ROWS
        self.bounds = _NO_TIMES
        self.low: dict[int, tuple[int, int]] = {}
        self.start: dict[int, tuple[int, int]] = {}
        # the same at the instant hi (where the last candidate ends), read when first asked
        self.hi_free: list[int] | None = None
        # per candidate, its costs with the stage's n, n + s, n + 2s, ... gangs on it: (n, s, costs)
        self.ahead: dict[int, tuple[int, int, list[float]]] = {}
        # a run of one candidate's cost pieces, to sum again after a placement: cost values and
        # lengths, rows first[r]:first[r + 1] (a longer run has one piece)
        self.cv = _NO_ROWS
        self.lens = _NO_FLOATS
        self.first = _NO_TIMES
        # the availability and the job's earlier placements (times, values), read to one past hi
        self.vt = self.pt = _NO_TIMES
        self.vv = self.pv = _NO_ROWS

    @classmethod
    def make(
        cls, job: JobContext, load: tuple[np.ndarray, np.ndarray], avail: tuple[np.ndarray, np.ndarray], lo: int,
        dur: int, count: int, gang: Res, every: int = 1, asks: int = 1,
    ) -> ArrayWindows | None:
        """The candidates from the breakpoints of the job's load and of the availability (as
        arrays: `job.load_arrays()`, the plan's `available_arrays`); None where the walk has a
        special case (a zero capacity or gang component), int64 cannot hold the placements, or the plan
        has other than the two YARN dimensions."""
        plan = job.plan
        cap, calc = plan.capacity, plan.calc
        if len(cap) != 2:
            return None  # the plan's arrays (steparrays) hold the two YARN dimensions
        dominant = calc.kind != "default"
        used = range(len(cap)) if dominant else range(1)
        if any(cap[i] <= 0 or gang[i] <= 0 for i in used):
            return None
        hi = lo + count * dur
        ps, pvals = segments(job.placed, lo, hi + 1)
        placed = len(ps) > 1 or any(pvals[0])
        if placed and any(abs(x) > MAX_VALUE for v in pvals for x in v):
            return None
        w = cls(lo, dur, count, gang, plan.step, dominant, cap, lambda r: calc.ratio(r, cap))
        w.every, w.asks = max(1, every), asks
        w.pt = np.array(ps, dtype=np.int64)
        w.pv = np.array(pvals, dtype=np.int64).reshape(len(ps), 2) if placed else _ZERO_ROW
        lt, lv = _read(*load, lo, hi)
        w.vt, w.vv = _read(*avail, lo, hi + 1)
        w._evaluate(lt, lv, placed)
        return w

    def _evaluate(self, lt: np.ndarray, lv: np.ndarray, placed: bool) -> None:
        """Every run's cost and fit, from the load's breakpoints over `[lo, hi)` (`lt, lv`), the
        availability's and the placements' (set before); `placed` when the job has placed
        something before the stage inside `[lo, hi]`."""
        hi = self.lo + self.count * self.dur
        vt, pt = self.vt, self.pt
        # the availability and the placements are read to hi + 1, so only their last change can
        # be at hi, which is inside no candidate
        inner_v = vt[1:-1] if vt[-1] == hi else vt[1:]
        inner_p = (pt[1:-1] if pt[-1] == hi else pt[1:]) if placed else None
        if self.count <= _POSITIONS:
            self._evaluate_each(lt, lv, inner_v, inner_p)
        else:
            self._evaluate_runs(lt, lv, inner_v, inner_p)

    def _evaluate_each(self, lt: np.ndarray, lv: np.ndarray, inner_v: np.ndarray, inner_p: np.ndarray | None) -> None:
        """A few candidates, every one a run of its own: one grid of all their change points."""
        lo, dur, count = self.lo, self.dur, self.count
        starts = np.arange(lo, lo + count * dur, dur, dtype=np.int64)
        # (runs() sorts this many runs as a list)
        self.p0s = np.arange(count, dtype=np.int64)
        self.p1s = self.p0s + 1
        g = sorted_union(starts, lt[1:], inner_v) if inner_p is None else sorted_union(starts, lt[1:], inner_v, inner_p)
        first = g.searchsorted(starts)
        cv = lv.take(lt.searchsorted(g, "right") - 1, axis=0)
        free = self.vv.take(self.vt.searchsorted(g, "right") - 1, axis=0)
        if inner_p is not None:
            mine = self.pv.take(self.pt.searchsorted(g, "right") - 1, axis=0)
            cv = cv + mine
            free = free - mine
        self._fits(free, first)
        # costs: the pieces with equal neighbours inside a candidate joined (as trunk's merge
        # joins them; a change of the availability alone is no cost piece)
        join = (cv[1:, 0] == cv[:-1, 0]) & (cv[1:, 1] == cv[:-1, 1])
        join[first[1:] - 1] = False
        if join.any():
            keep = np.concatenate(((True,), ~join))
            g, cv = g[keep], cv[keep]
            first = g.searchsorted(starts)
        # every candidate ends where the next one starts: a piece runs to the next time of g
        lens = np.empty(len(g), dtype=np.float64)
        lens[:-1] = g[1:] - g[:-1]
        lens[-1] = lo + count * dur - int(g[-1])
        self.cv, self.lens = cv, lens
        self.first = np.append(first, len(g))
        bounds = self.first.tolist()
        rows = min(self.asks, _AHEAD)
        if rows <= 1 or rows * len(g) > _AHEAD_CELLS:
            self.costs = window_sums(self._terms(cv, self.lens), first)
            return
        # the costs with 0, every, 2 every, ... gangs on each candidate at once (see `cost`):
        # row 0 is every candidate's cost now
        terms = self._row_terms(cv, lens, np.arange(0, rows * self.every, self.every, dtype=np.int64))
        sums = [np.add.accumulate(terms[:, i:j], axis=1)[:, -1].tolist() for i, j in zip(bounds, bounds[1:])]
        self.costs = np.array([c[0] for c in sums], dtype=np.float64)
        self.ahead = {k: (0, self.every, c) for k, c in enumerate(sums)}

    def _evaluate_runs(
        self, lt: np.ndarray, lv: np.ndarray, inner_v: np.ndarray, inner_p: np.ndarray | None, share: bool = True,
    ) -> None:
        """Many candidates: those between two change points are runs, evaluated through their
        first member (every candidate a run of its own when there are no fewer change points).
        `share`: an availability changing exactly where the load changes is merged once for both
        (False, the reference: merged as a part of its own)."""
        lo, dur, count = self.lo, self.dur, self.count
        vv, pv = self.vv, self.pv
        inner_l = lt[1:]
        # the availability is mostly the capacity less this same load, changing where it changes:
        # then one part stands for both (the counts of a part's times are the same for an equal part)
        same_v = share and len(inner_v) == len(inner_l) and bool(np.array_equal(inner_v, inner_l))
        inner: tuple[np.ndarray, ...] = (inner_l,) if same_v else (inner_l, inner_v)
        if inner_p is not None:
            inner += (inner_p,)
        # (every part's times are distinct, so there are no fewer changes than the longest part has)
        changes = None if count <= max(len(x) for x in inner) else sorted_union(*inner)
        if changes is None or count <= len(changes):
            # no fewer changes than candidates: every candidate a run of its own, and every
            # change inside one of them
            p0 = np.arange(count, dtype=np.int64)
            p1 = p0 + 1
            starts = lo + p0 * dur
            # the candidates' starts are counted by division, not by the merge
            if len(inner) == 1:
                g, win, counted = lattice_grid(lo, dur, starts, inner[0])
                at = [g, counted]
            else:
                g, at = grid(starts, *inner, counted=1)
                win = (g - lo) // dur
        else:
            # runs: a change on a candidate's start cuts before it, one inside makes it a run alone
            k, off = np.divmod(changes - lo, dur)
            edges = sorted_union(np.array((0, count), dtype=np.int64), k, k[off > 0] + 1)
            p0, p1 = edges[:-1], edges[1:]
            starts = lo + p0 * dur
            # one grid for both: every change point inside each run's first member, and its start
            g, at = grid(starts, *inner)
            win = at[0] - 1
            keep = np.flatnonzero((win >= 0) & (g < starts[np.maximum(win, 0)] + dur))
            g, win, at = g[keep], win[keep], [a[keep] for a in at]
        if same_v:
            at.insert(2, at[1])
        self.p0s, self.p1s = p0, p1
        first = np.flatnonzero(np.concatenate(((True,), win[1:] != win[:-1])))
        # every time of g lies in [lo, hi): the load's, the availability's and the placements' rows
        # there are the count of their inner times at or before it (their first row is at or
        # before lo); rows gathered with take: fancy indexing of a two-column array is many times slower
        cv = lv.take(at[1], axis=0)
        free = vv.take(at[2], axis=0)
        if inner_p is not None:
            mine = pv.take(at[3], axis=0)
            cv = cv + mine
            free = free - mine
        self._fits(free, first)
        # costs: the same pieces with equal neighbours joined (see _evaluate_each)
        join = np.zeros(len(g), dtype=bool)
        join[1:] = (cv[1:, 0] == cv[:-1, 0]) & (cv[1:, 1] == cv[:-1, 1]) & (win[1:] == win[:-1])
        if join.any():
            kept = np.flatnonzero(~join)
            g, win, cv = g[kept], win[kept], cv.take(kept, axis=0)
            first = np.flatnonzero(np.concatenate(((True,), win[1:] != win[:-1])))
        ends = starts[win] + dur
        nxt = np.empty(len(g), dtype=np.int64)
        nxt[:-1] = np.where(win[1:] == win[:-1], g[1:], ends[:-1])
        nxt[-1:] = ends[-1:]
        self.cv, self.lens = cv, (nxt - g).astype(np.float64)
        self.first = np.append(first, len(g))
        self.costs = window_sums(self._terms(cv, self.lens), first)

    def _fits(self, free: np.ndarray, first: np.ndarray) -> None:
        """Per run, from (availability - earlier placements) at its first member's pieces (rows
        first[r]:first[r + 1]): the fewest gangs over the pieces (a change of the load alone
        changes no fit); the rows are kept for `_low` and `_start`."""
        per = free[:, 0] // self.gang[0]
        if self.dominant:
            per = np.minimum(per, free[:, 1] // self.gang[1])
        self.fits = np.minimum.reduceat(per, first)
        self.free = free
        self.bounds = np.append(first, len(free))

    def _terms(self, values: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """calc.ratio(value, capacity) * length / step for every piece: each component cast to
        single precision and divided there (the largest share under the dominant calculator),
        the quotient cast to double and multiplied by the length, then divided by the step."""
        q = np.divide(values[:, 0], self.cap32[0], dtype=np.float32)
        if self.dominant:
            q = np.maximum(q, np.divide(values[:, 1], self.cap32[1], dtype=np.float32))
        t = np.multiply(q, lens, dtype=np.float64)
        t /= self.step
        return t

    def _row_terms(self, values: np.ndarray, lens: np.ndarray, ns: np.ndarray) -> np.ndarray:
        """`_terms(values + n gang, lens)` for every n of ns, a row each: the same elementwise
        operations, column by column (numpy's broadcast over a third axis is twice as slow)."""
        g = self.gang
        q = np.divide(values[:, 0] + (ns * g[0])[:, None], self.cap32[0], dtype=np.float32)
        if self.dominant:
            q = np.maximum(q, np.divide(values[:, 1] + (ns * g[1])[:, None], self.cap32[1], dtype=np.float32))
        t = np.multiply(q, lens, dtype=np.float64)
        t /= self.step
        return t

    def runs(self, left: bool) -> Sequence[RunEntry]:
        """See `Windows.runs` (aligned.py): sorted by cost and end key (a few runs as a list,
        more in numpy, handed out as `SortedRuns`, which sorts them when more than the first is
        read; the end keys differ from run to run, so both orders are the same)."""
        if len(self.p0s) <= _POSITIONS:
            lo, dur = self.lo, self.dur
            out = [(c, lo + (a + 1) * dur if left else -(lo + b * dur), a, b, f)
                   for c, a, b, f in zip(self.costs.tolist(), self.p0s.tolist(), self.p1s.tolist(), self.fits.tolist())
                   if f > 0]
            out.sort()
            return out
        fit = np.flatnonzero(self.fits > 0)
        costs, p0, p1 = self.costs[fit], self.p0s[fit], self.p1s[fit]
        key = self.lo + (p0 + 1) * self.dur if left else -(self.lo + p1 * self.dur)
        # sorted only if more than the first is read (a stage of one gang reads one)
        return SortedRuns(None, costs, key, p0, p1, self.fits[fit])

    def _run(self, k: int) -> int:
        return int(self.p0s.searchsorted(k, "right")) - 1

    def negative(self, x: int, y: int) -> bool:
        """See `Windows.negative`: the availability minus the placements (the job's earlier
        ones and this stage's, a constant per candidate) at every time in [x, y] where one of
        them changes. One candidate `[x, x + dur]` is answered from its run's minima and the
        value where it ends (the start of the next run member, or hi), the whole stage window
        before anything is placed from every run's minima and hi, the instant hi alone from its
        value; `negative_walk` is the general form and the reference."""
        lo, dur = self.lo, self.dur
        k, off = divmod(x - lo, dur)
        if off == 0 and y == x + dur and 0 <= k < self.count:
            g0, g1 = self.gang
            n = self.counts.get(k, 0)
            f0, f1 = self._low(self._run(k))
            if f0 < g0 * n or f1 < g1 * n:
                return True
            if k + 1 < self.count:
                f0, f1 = self._start(self._run(k + 1))
                n = self.counts.get(k + 1, 0)
                return f0 < g0 * n or f1 < g1 * n
            f0, f1 = self._hi_free()
            return f0 < 0 or f1 < 0
        hi = lo + self.count * dur
        if x == y == hi:
            # the instant where the stage window ends (an earlier stage's placements start there,
            # allocating right): no candidate covers it
            return any(f < 0 for f in self._hi_free())
        if x == lo and y == hi and not self.counts:
            return bool((self.free < 0).any()) or any(f < 0 for f in self._hi_free())
        return self.negative_walk(x, y)

    def _low(self, r: int) -> tuple[int, int]:
        """Run r's per-component minimum of (availability - earlier placements)."""
        got = self.low.get(r)
        if got is None:
            i, j = self.bounds[r:r + 2].tolist()
            m = self.free[i:j].min(axis=0).tolist() if j - i > 1 else self.free[i].tolist()
            got = self.low[r] = (m[0], m[1])
        return got

    def _start(self, r: int) -> tuple[int, int]:
        """(availability - earlier placements) where run r starts."""
        got = self.start.get(r)
        if got is None:
            m = self.free[self.bounds[r]].tolist()
            got = self.start[r] = (m[0], m[1])
        return got

    def _hi_free(self) -> list[int]:
        if self.hi_free is None:
            hi = self.lo + self.count * self.dur
            a = self.vv[int(self.vt.searchsorted(hi, "right")) - 1].tolist()
            p = self.pv[int(self.pt.searchsorted(hi, "right")) - 1].tolist()
            self.hi_free = [u - v for u, v in zip(a, p)]
        return self.hi_free

    def negative_walk(self, x: int, y: int) -> bool:
        """`negative` at every change point in [x, y], on arrays."""
        lo, dur = self.lo, self.dur
        vt, pt = self.vt, self.pt
        pts = [np.array((x,), dtype=np.int64), vt[vt.searchsorted(x, "right"):vt.searchsorted(y, "right")],
               pt[pt.searchsorted(x, "right"):pt.searchsorted(y, "right")]]
        mine = [lo + k * dur for k in self.counts if x < lo + k * dur <= y]
        mine += [lo + (k + 1) * dur for k in self.counts if x < lo + (k + 1) * dur <= y]
        if mine:
            pts.append(np.array(mine, dtype=np.int64))
        t = sorted_union(*pts)
        free = self.vv[vt.searchsorted(t, "right") - 1] - self.pv[pt.searchsorted(t, "right") - 1]
        if self.counts:
            ks = (t - lo) // dur
            many = np.array([self.counts.get(c, 0) if 0 <= c < self.count else 0 for c in ks.tolist()], dtype=np.int64)
            free = free - many[:, None] * self.gang_arr
        return bool((free < 0).any())

    def add(self, k: int, n: int) -> None:
        """See `Windows.add`."""
        self.counts[k] = self.counts.get(k, 0) + n

    def cost(self, k: int, every: int = 1, asks: int = 1) -> float:
        """See `Windows.cost`: the run's pieces (one, for a longer run) with the stage's gangs on
        top, summed in time order. The stage may ask again up to `asks` times, each after `every`
        more gangs, so the costs with those counts are summed at once, a row each (`cost_of` is
        one row)."""
        n = self.counts.get(k, 0)
        summed = ahead_cost(self.ahead, k, n)
        if summed is not None:
            return summed
        r = self._run(k)
        i, j = self._pieces(r)
        every = max(1, every)
        rows = max(1, min(asks, _AHEAD, _AHEAD_CELLS // (j - i), -(-(int(self.fits[r]) - n) // every)))
        if rows == 1:
            sums = [float(np.add.accumulate(self._terms(self.cv[i:j] + self.gang_arr * n, self.lens[i:j]))[-1])]
        else:
            ns = np.arange(n, n + rows * every, every, dtype=np.int64)
            sums = np.add.accumulate(self._row_terms(self.cv[i:j], self.lens[i:j], ns), axis=1)[:, -1].tolist()
        self.ahead[k] = (n, every, sums)
        return sums[0]

    def _pieces(self, r: int) -> tuple[int, int]:
        """The rows of run r's first member's cost pieces (one for a run longer than one candidate)."""
        i, j = self.first[r:r + 2].tolist()
        return (i, i + 1) if int(self.p1s[r]) - int(self.p0s[r]) > 1 else (i, j)

    def cost_of(self, k: int, n: int) -> float:
        """Candidate k's cost with n of the stage's gangs on it: the reference for `cost`'s rows,
        its pieces summed one after the other in Python from calc.ratio."""
        assert self.ratio is not None
        r = self._run(k)
        i, j = self._pieces(r)
        total = 0.0
        for v, length in zip(self.cv[i:j].tolist(), self.lens[i:j].tolist()):
            total += self.ratio(tuple(a + g * n for a, g in zip(v, self.gang))) * length / self.step
        return total

    def fit(self, k: int) -> int:
        """See `Windows.fit`: floor((f - g n) / g) = floor(f / g) - n, piece by piece."""
        return int(self.fits[self._run(k)]) - self.counts.get(k, 0)

    def placed(self) -> list[Interval]:
        """See `Windows.placed`."""
        lo, dur = self.lo, self.dur
        return [(lo + k * dur, lo + (k + 1) * dur, rmul(self.gang, n)) for k, n in sorted(self.counts.items())]


def ahead_cost(ahead: dict[int, tuple[int, int, list[float]]], k: int, n: int) -> float | None:
    """Candidate `k`'s cost with `n` gangs of the stage on it when it was summed ahead (`ahead[k]` =
    (the count the sums start at, the gangs between two sums, the sums)), else None."""
    got = ahead.get(k)
    if got is None:
        return None
    n0, s, sums = got
    j, off = divmod(n - n0, s)
    return sums[j] if off == 0 and 0 <= j < len(sums) else None


@lru_cache(maxsize=256)
def _f32(r: Res) -> np.ndarray:
    """r as a float32 array, read-only (shared: a capacity recurs from stage to stage)."""
    a = np.array(r, dtype=np.float32)
    a.flags.writeable = False
    return a


@lru_cache(maxsize=256)
def _i64(r: Res) -> np.ndarray:
    """r as an int64 array, read-only (shared: a gang recurs from stage to stage)."""
    a = np.array(r, dtype=np.int64)
    a.flags.writeable = False
    return a


#: what the low-cost allocator reads of the availability at the stage's deadline. Trunk's
#: availability (`getAvailableResourceOverTime`, a chain of RLE merges over [arrival, deadline])
#: ends in an undefined (null) entry at the deadline, and a merge given an undefined operand
#: takes the other one untested, so nothing is ever refused at that instant, not even a periodic
#: over-commit starting there. A value no placement can bring below zero stands for it.
UNDEFINED = 1 << 62


def undefined_at(t: np.ndarray, v: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The availability's breakpoints read up to the deadline d (`_read(t, v, lo, d + 1)`: d is
    the last time read), with the value at d undefined (`UNDEFINED`)."""
    if len(t) and t[-1] == d:
        v = v.copy()
        v[-1] = UNDEFINED
        return t, v
    return np.append(t, d), np.concatenate((v, np.full((1, v.shape[1]), UNDEFINED, dtype=v.dtype)))


def _read(t: np.ndarray, v: np.ndarray, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
    """`steparrays.window(t, v, s, e)` as views where a breakpoint lies at or before s, whose
    time then stands first in place of s (the value there is the value at s): what the windows
    read of it, the breakpoints inside (s, e) and the value at any time from s, is the same."""
    if len(t) and t[0] <= s:
        i, j = t.searchsorted((s, max(s, e - 1)), "right").tolist()
        return t[i - 1:j], v[i - 1:j]
    return window(t, v, s, e)
