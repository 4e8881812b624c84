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

from bisect import bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from apportion.reservation.resmath import Res, rmul
from apportion.reservation.steparrays import MAX_VALUE, window
from apportion.reservation.stepfn import segments

if TYPE_CHECKING:
    from apportion.reservation.agents.iterative import JobContext

Interval = tuple[int, int, Res]

#: windows with more cost pieces than this are summed one by one (np.add.accumulate), the others
#: position by position across all of them at once
_POSITIONS = 16


class ArrayWindows:
    """`Windows` (aligned.py) on arrays: the candidates of one stage, evaluated once per run."""

    def __init__(
        self, lo: int, dur: int, count: int, gang: Res, step: int, dominant: bool, cap: Res,
        ratio: Callable[[Res], float] | None = None, ratios: dict[Res, float] | None = None,
    ) -> None:
        self.lo, self.dur, self.count, self.gang, self.step = lo, dur, count, gang, step
        self.dominant = dominant
        # calc.ratio against the capacity, and a cache of it, for a candidate summed again in Python
        self.ratio = ratio
        self.ratios: dict[Res, float] = ratios if ratios is not None else {}
        self.cap32 = np.array(cap, dtype=np.float32)
        self.gang_arr = np.array(gang, dtype=np.int64)
        self.counts: dict[int, int] = {}  # gangs the stage placed, per candidate
        # filled by make(): per run, its positions [p0, p1), cost and fit
        self.p0: list[int] = []
        self.p1: list[int] = []
        self.p0s = self.p1s = np.zeros(0, dtype=np.int64)
        self.costs = np.zeros(0, dtype=np.float64)
        self.fits = np.zeros(0, dtype=np.int64)
        self.fit_list: list[int] = []
        # per run, the per-component minimum of (availability - earlier placements) over its first member
        self.low_free: list[list[int]] = []
        # per run, its first member's cost pieces as (value, length), made when first asked
        self.pieces: dict[int, list[tuple[Res, float]]] = {}
        # a run of one candidate's cost pieces, to sum again after a placement: cost values and
        # lengths, rows first[r]:first[r + 1]; a longer run has one piece, its value at run_value[r]
        self.cv = np.zeros((0, len(gang)), dtype=np.int64)
        self.lens = np.zeros(0, dtype=np.float64)
        self.first: list[int] = []
        # the availability and the job's earlier placements (times, values), read to one past hi
        self.vt = self.pt = np.zeros(0, dtype=np.int64)
        self.vv = self.pv = np.zeros((0, len(gang)), dtype=np.int64)

    @classmethod
    def make(
        cls, job: JobContext, load: tuple[np.ndarray, np.ndarray], avail: tuple[np.ndarray, np.ndarray], lo: int,
        dur: int, count: int, gang: Res, ratios: dict[Res, float] | None = None,
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
        if any(abs(x) > MAX_VALUE for v in pvals for x in v):
            return None
        w = cls(lo, dur, count, gang, plan.step, dominant, cap, lambda r: calc.ratio(r, cap), ratios)
        w.pt = np.array(ps, dtype=np.int64)
        w.pv = np.array(pvals, dtype=np.int64).reshape(len(ps), len(gang))
        lt, lv = window(*load, lo, hi)
        w.vt, w.vv = window(*avail, lo, hi + 1)
        w._evaluate(lt, lv)
        return w

    def _evaluate(self, lt: np.ndarray, lv: np.ndarray) -> None:
        lo, dur, count, hi = self.lo, self.dur, self.count, self.lo + self.count * self.dur
        vt, vv, pt, pv = self.vt, self.vv, self.pt, self.pv
        placed = len(pt) > 1 or bool(pv[0].any())
        inner_p = pt[1:][pt[1:] < hi]
        changes = _union(lt[1:], vt[1:][vt[1:] < hi], inner_p) if placed else _union(lt[1:], vt[1:][vt[1:] < hi])
        if count <= len(changes):
            # no fewer changes than candidates: every candidate a run of its own, and every
            # change inside one of them
            p0 = np.arange(count, dtype=np.int64)
            p1 = p0 + 1
            starts = lo + p0 * dur
            g = _union(starts, changes)
            win = (g - lo) // dur
        else:
            # runs: a change on a candidate's start cuts before it, one inside makes it a run alone
            k, off = np.divmod(changes - lo, dur)
            edges = _union(np.array((0, count), dtype=np.int64), k, k[off > 0] + 1)
            p0, p1 = edges[:-1], edges[1:]
            starts = lo + p0 * dur
            # one grid for both: every change point inside each run's first member, and its start
            g, win = _inside(_union(starts, changes), starts, dur)
        self.p0s, self.p1s = p0, p1
        self.p0, self.p1 = p0.tolist(), p1.tolist()
        first = np.flatnonzero(np.concatenate(((True,), win[1:] != win[:-1])))
        cv = lv[lt.searchsorted(g, "right") - 1]
        free = vv[vt.searchsorted(g, "right") - 1]
        if placed:
            mine = pv[pt.searchsorted(g, "right") - 1]
            cv = cv + mine
            free = free - mine
        # fits: the fewest gangs over the pieces (a change of the load alone changes no fit)
        per = free // self.gang_arr
        self.fits = np.minimum.reduceat(per.min(axis=1) if self.dominant else per[:, 0], first)
        self.fit_list = self.fits.tolist()
        self.low_free = np.minimum.reduceat(free, first, axis=0).tolist()
        # costs: the same pieces with equal neighbours joined (as trunk's merge joins them; a
        # change of the availability alone is no cost piece)
        join = np.zeros(len(g), dtype=bool)
        join[1:] = (cv[1:] == cv[:-1]).all(axis=1) & (win[1:] == win[:-1])
        if join.any():
            g, win, cv = g[~join], win[~join], cv[~join]
            first = np.flatnonzero(np.concatenate(((True,), win[1:] != win[:-1])))
        ends = starts[win] + dur
        nxt = np.empty(len(g), dtype=np.int64)
        nxt[:-1] = np.where(win[1:] == win[:-1], g[1:], ends[:-1])
        nxt[-1:] = ends[-1:]
        self.cv, self.lens = cv, (nxt - g).astype(np.float64)
        self.first = [*first.tolist(), len(g)]
        self.costs = _sums(self._terms(cv, self.lens), first)

    def _terms(self, values: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """calc.ratio(value, capacity) * length / step for every piece: each component cast to
        single precision and divided there (the largest share under the dominant calculator),
        the quotient cast to double and multiplied by the length, then divided by the step."""
        q = np.divide(values[:, 0], self.cap32[0], dtype=np.float32)
        if self.dominant:
            for i in range(1, values.shape[1]):
                q = np.maximum(q, np.divide(values[:, i], self.cap32[i], dtype=np.float32))
        t = np.multiply(q, lens, dtype=np.float64)
        t /= self.step
        return t

    def runs(self, left: bool) -> list[tuple[float, int, int, int, int]]:
        """See `Windows.runs` (aligned.py): sorted by cost and end key in numpy."""
        fit = self.fits > 0
        costs, p0, p1 = self.costs[fit], self.p0s[fit], self.p1s[fit]
        key = self.lo + (p0 + 1) * self.dur if left else -(self.lo + p1 * self.dur)
        order = np.lexsort((key, costs))
        return list(zip(costs[order].tolist(), key[order].tolist(), p0[order].tolist(), p1[order].tolist(),
                        self.fits[fit][order].tolist()))

    def _run(self, k: int) -> int:
        return bisect_right(self.p0, k) - 1

    def negative(self, x: int, y: int) -> bool:
        """See `Windows.negative`: the availability minus the placements (the job's earlier
        ones and this stage's, a constant per candidate) at every time in [x, y] where one of
        them changes. One candidate `[x, x + dur]` is answered from its run's minima and the
        value at its end instant."""
        lo, dur = self.lo, self.dur
        k, off = divmod(x - lo, dur)
        if off == 0 and y == x + dur and 0 <= k < self.count:
            n = self.counts.get(k, 0)
            if any(f < g * n for f, g in zip(self.low_free[self._run(k)], self.gang)):
                return True
            return self._negative_at(y, self.counts.get(k + 1, 0) if k + 1 < self.count else 0)
        vt, pt = self.vt, self.pt
        pts = [np.array((x,), dtype=np.int64), vt[vt.searchsorted(x, "right"):vt.searchsorted(y, "right")],
               pt[pt.searchsorted(x, "right"):pt.searchsorted(y, "right")]]
        mine = [lo + k * dur for k in self.counts if x < lo + k * dur <= y]
        mine += [lo + (k + 1) * dur for k in self.counts if x < lo + (k + 1) * dur <= y]
        if mine:
            pts.append(np.array(mine, dtype=np.int64))
        t = _union(*pts)
        free = self.vv[vt.searchsorted(t, "right") - 1] - self.pv[pt.searchsorted(t, "right") - 1]
        if self.counts:
            ks = (t - lo) // dur
            many = np.array([self.counts.get(c, 0) if 0 <= c < self.count else 0 for c in ks.tolist()], dtype=np.int64)
            free = free - many[:, None] * self.gang_arr
        return bool((free < 0).any())

    def _negative_at(self, t: int, n: int) -> bool:
        """Whether (availability - earlier placements - n gangs) is negative at the instant t."""
        a = self.vv[int(self.vt.searchsorted(t, "right")) - 1].tolist()
        p = self.pv[int(self.pt.searchsorted(t, "right")) - 1].tolist()
        return any(x - y < g * n for x, y, g in zip(a, p, self.gang))

    def add(self, k: int, n: int) -> None:
        """See `Windows.add`."""
        self.counts[k] = self.counts.get(k, 0) + n

    def cost(self, k: int) -> float:
        """See `Windows.cost`: the run's pieces (one, for a longer run) with the stage's gangs on
        top, summed in time order (a few in Python as the walk sums them, more on arrays)."""
        r = self._run(k)
        n = self.counts.get(k, 0)
        i = self.first[r]
        j = i + 1 if self.p1[r] - self.p0[r] > 1 else self.first[r + 1]
        if j - i > _POSITIONS:
            extra = self.gang_arr * n
            return float(np.add.accumulate(self._terms(self.cv[i:j] + extra, self.lens[i:j]))[-1])
        pieces = self.pieces.get(r)
        if pieces is None:
            length = [float(self.dur)] if j == i + 1 and self.p1[r] - self.p0[r] > 1 else self.lens[i:j].tolist()
            pieces = self.pieces[r] = list(zip(map(tuple, self.cv[i:j].tolist()), length))
        extra_r = [g * n for g in self.gang]
        ratios, ratio, step = self.ratios, self.ratio, self.step
        assert ratio is not None
        total = 0.0
        for v, length_ in pieces:
            key = tuple(a + b for a, b in zip(v, extra_r))
            q = ratios.get(key)
            if q is None:
                q = ratios[key] = ratio(key)
            total += q * length_ / step
        return total

    def fit(self, k: int) -> int:
        """See `Windows.fit`: floor((f - g n) / g) = floor(f / g) - n, piece by piece."""
        return self.fit_list[self._run(k)] - self.counts.get(k, 0)

    def placed(self) -> list[Interval]:
        """See `Windows.placed`."""
        lo, dur = self.lo, self.dur
        return [(lo + k * dur, lo + (k + 1) * dur, rmul(self.gang, n)) for k, n in sorted(self.counts.items())]


def _inside(times: np.ndarray, starts: np.ndarray, dur: int) -> tuple[np.ndarray, np.ndarray]:
    """The times (sorted, every start among them) that fall inside a window `[start, start + dur)`,
    and the index of that window for each."""
    win = starts.searchsorted(times, "right") - 1
    keep = (win >= 0) & (times < starts[np.maximum(win, 0)] + dur)
    return times[keep], win[keep]


def _sums(terms: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per window, its terms (rows first[w]:first[w + 1], in time order) added one after the other
    from 0.0, as a walk adds them: a few windows each with np.add.accumulate (which never
    regroups), many position by position across the windows that have that many pieces, and
    there a window with very many pieces again with np.add.accumulate."""
    n = len(first)
    if n <= _POSITIONS:
        b = [*first.tolist(), len(terms)]
        return np.array([np.add.accumulate(terms[i:j])[-1] for i, j in zip(b, b[1:])], dtype=np.float64)
    bounds = np.append(first, len(terms))
    total = np.zeros(n, dtype=np.float64)
    sizes = np.diff(bounds)
    longest = int(sizes.max())
    for j in range(min(longest, _POSITIONS)):
        has = np.flatnonzero(sizes > j)
        total[has] += terms[first[has] + j]
    if longest > _POSITIONS:
        for w in np.flatnonzero(sizes > _POSITIONS).tolist():
            total[w] = np.add.accumulate(np.concatenate(((total[w],), terms[bounds[w] + _POSITIONS:bounds[w + 1]])))[-1]
    return total


def _union(*parts: np.ndarray) -> np.ndarray:
    """Sorted distinct times of sorted parts: a stable sort (timsort) merges the sorted runs in
    linear time, where the default quicksort sorts them again from scratch."""
    x = np.concatenate(parts)
    x.sort(kind="stable")
    keep = np.empty(len(x), dtype=bool)
    keep[:1] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]
