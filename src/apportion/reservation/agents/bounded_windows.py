"""The low-cost aligned allocator's candidates read cheapest first, each evaluated only when it can be next.

`ArrayWindows` evaluates every candidate of a stage (its cost summed piece by piece, its fit)
before handing out the first: a pass of some forty numpy operations over every change point of
the stage window, for a stage that usually places one gang. Here a candidate's cost is bounded
first, from the exact integral of the load over it: under the default calculator, with a load
that is nowhere negative, a cost is that integral over (capacity x step) to within a relative
2**-21 (each term is a single-precision ratio times a length over the step, rounded a few times,
and a sum of non-negative terms keeps the relative error of its terms; `REL_ERROR`). The integrals
of all candidates come from one prefix sum of the load, read at the candidates' bounds; only the candidates whose bound can reach the least cost are summed exactly, as
`ArrayWindows` sums them (the same pieces, the same float operations in the same order), and a
candidate's fit is read only when it is handed out. A candidate whose integral is zero costs
exactly 0.0 and is not summed at all.

Every candidate here is a run of its own (`Windows.runs` groups equal neighbours into runs;
`place_gangs` takes a run's members one by one in end-key order, so a run and its members one
by one are taken alike). The property tests compare every placement and refusal with
`ArrayWindows` and the walk (tests/reservation/test_res_bounded_windows.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from apportion.reservation.agents.aligned_arrays import _f32, _read, ahead_cost
from apportion.reservation.agents.merges import window_sums
from apportion.reservation.agents.sorted_runs import NoMoreRuns, RunEntry
from apportion.reservation.resmath import Res, rmul
from apportion.reservation.steparrays import MAX_VALUE

if TYPE_CHECKING:
    from apportion.reservation.agents.iterative import JobContext

Interval = tuple[int, int, Res]

#: a cost is integral / (capacity x step) to within this relative error (3 single-precision
#: roundings of the ratio, 2**-22 with room; the double-precision products and the sum of up to
#: 2**24 non-negative terms add less than 2**-28); the bounds below use twice it
REL_ERROR = 2.0**-21
#: stages with fewer candidates are left to `ArrayWindows` (its one grid is cheap there)
MIN_COUNT = 32
#: ... and so are stages with more candidates than this many times their change points (runs)
RUNS_FACTOR = 4
#: ... with fewer load pieces than this (the sum's share of REL_ERROR assumes it)
_MAX_PIECES = 1 << 24
#: the integrals are int64 sums: values times lengths up to this stay exact
_INTEGRAL_MAX = 1 << 62
#: a level that grows takes at least this many more candidates (or as many as it holds already)
GROW = 32
#: more candidates than this are summed by `window_sums`, fewer one float at a time
_SUMMED_IN_NUMPY = 64
#: `cost` sums a candidate with up to this many counts of gangs at once, in up to this many cells
_AHEAD = 16
_AHEAD_CELLS = 16_384


class BoundedWindows:
    """`Windows` (aligned.py) for a stage of the default calculator over a non-negative load, with
    nothing of the job placed inside it before: candidates summed in the order of their cost bounds."""

    def __init__(
        self, lo: int, dur: int, count: int, gang: Res, step: int, cap: Res, load: tuple[np.ndarray, np.ndarray],
        avail: tuple[np.ndarray, np.ndarray],
    ) -> None:
        self.lo, self.dur, self.count, self.gang, self.step = lo, dur, count, gang, step
        self.cap = cap
        self.cap32 = _f32(cap)
        self.lt, self.lv = load
        # the availability over [lo, hi]: the value at lo, then every change up to hi included
        self.vt, self.vv = avail
        self.every, self.asks = 1, 1
        self.counts: dict[int, int] = {}
        self.integrals = np.zeros(count, dtype=np.int64)
        self.low: dict[int, tuple[int, int]] = {}
        self.ahead: dict[int, tuple[int, int, list[float]]] = {}
        self.pieces: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def make(
        cls, job: JobContext, load: tuple[np.ndarray, np.ndarray], avail: tuple[np.ndarray, np.ndarray], lo: int,
        dur: int, count: int, gang: Res, every: int = 1, asks: int = 1,
    ) -> BoundedWindows | None:
        """The stage's candidates, or None where `ArrayWindows` is the one to use: another
        calculator or dimensions, a few candidates or many more than change points, the job's
        earlier placements inside the stage window, a negative load, integrals int64 cannot hold."""
        plan = job.plan
        cap = plan.capacity
        if len(cap) != 2 or plan.calc.kind != "default" or count < MIN_COUNT:
            return None
        if not 0 < cap[0] <= MAX_VALUE or gang[0] <= 0 or gang[1] < 0 or not job.placed.is_empty():
            return None
        hi = lo + count * dur
        if hi - lo >= _INTEGRAL_MAX:
            return None
        lt, lv = _read(*load, lo, hi)
        vt, vv = _read(*avail, lo, hi + 1)
        if count > RUNS_FACTOR * (len(lt) + len(vt)) + 4 * MIN_COUNT:
            return None
        mem = lv[:, 0]
        if len(lt) >= _MAX_PIECES or int(mem.min()) < 0 or int(mem.max()) * (hi - lo) >= _INTEGRAL_MAX:
            return None
        w = cls(lo, dur, count, gang, plan.step, cap, (lt, lv), (vt, vv))
        w.every, w.asks = max(1, every), asks
        w.integrals = integrals(lt, mem, lo, dur, count)
        return w

    # -- the order -------------------------------------------------------------------------
    def runs(self, left: bool) -> CheapestFirst:
        """See `Windows.runs`: every candidate a run of its own, read lazily (`CheapestFirst`)."""
        return CheapestFirst(self, left)

    def costs(self, ks: np.ndarray) -> list[float]:
        """The cost of each candidate of ks with nothing of the stage on it: its load pieces'
        terms added in time order from 0.0 (`ArrayWindows`' sums; `cost_walk` is the reference)."""
        lo, dur, lt = self.lo, self.dur, self.lt
        mem = self.lv[:, 0]
        a = lo + ks * dur
        first = lt.searchsorted(a, "right") - 1
        sizes = lt.searchsorted(a + dur, "left") - first
        total = int(sizes.sum())
        if total == len(ks):
            # each inside one piece: its one term added to 0.0 is the term
            return self._terms(mem.take(first), np.full(total, float(dur))).tolist()
        offsets = np.zeros(len(ks), dtype=np.int64)
        np.cumsum(sizes[:-1], out=offsets[1:])
        # piece rows: first[w], first[w] + 1, ... for each window w in turn
        rows = np.arange(total, dtype=np.int64) + np.repeat(first - offsets, sizes)
        ends = np.empty(total, dtype=np.int64)
        ends[:-1] = lt.take(rows[1:])
        ends[offsets + sizes - 1] = a + dur
        starts = np.maximum(lt.take(rows), np.repeat(a, sizes))
        terms = self._terms(mem.take(rows), (ends - starts).astype(np.float64))
        if len(ks) > _SUMMED_IN_NUMPY:
            return window_sums(terms, offsets).tolist()
        out = []
        flat = terms.tolist()
        i = 0
        for n in sizes.tolist():
            c = 0.0
            for x in flat[i:i + n]:
                c += x
            out.append(c)
            i += n
        return out

    def _terms(self, mem: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """`ArrayWindows._terms` under the default calculator: the memory share in single
        precision, times the length in double, over the step."""
        q = np.divide(mem, self.cap32[0], dtype=np.float32)
        t = np.multiply(q, lens, dtype=np.float64)
        t /= self.step
        return t

    def cost_walk(self, k: int, n: int) -> float:
        """Candidate k's cost with n of the stage's gangs on it, walked in Python from the load's
        pieces (the reference for `costs` and `cost`)."""
        a = self.lo + k * self.dur
        b = a + self.dur
        lt = self.lt.tolist()
        total = 0.0
        c = float(np.float32(self.cap[0]))
        for i, t in enumerate(lt):
            x = max(t, a)
            y = min(lt[i + 1], b) if i + 1 < len(lt) else b
            if y <= x:
                continue
            v = int(self.lv[i, 0]) + self.gang[0] * n
            total += float(np.float32(np.float32(v) / np.float32(c))) * (y - x) / self.step
        return total

    # -- one candidate -----------------------------------------------------------------------
    def _low(self, k: int) -> tuple[int, int]:
        """The availability's per-component minimum over candidate k."""
        got = self.low.get(k)
        if got is None:
            a = self.lo + k * self.dur
            i, j = self.vt.searchsorted((a, a + self.dur - 1), "right").tolist()
            m = self.vv[i - 1:j].min(axis=0).tolist() if j - i > 0 else self.vv[i - 1].tolist()
            got = self.low[k] = (m[0], m[1])
        return got

    def _at(self, t: int) -> tuple[int, int]:
        """The availability at t, inside [lo, hi]."""
        m = self.vv[int(self.vt.searchsorted(t, "right")) - 1].tolist()
        return m[0], m[1]

    def first_fit(self, k: int) -> int:
        """How many gangs fit on candidate k with nothing of the stage placed (memory decides,
        as the default calculator's `gangs`)."""
        return self._low(k)[0] // self.gang[0]

    def fit(self, k: int) -> int:
        """See `Windows.fit`."""
        return self.first_fit(k) - self.counts.get(k, 0)

    def negative(self, x: int, y: int) -> bool:
        """See `Windows.negative`: (availability - the stage's placements) at every change in the
        closed range [x, y]; one candidate from its minimum and the value where it ends, a range
        with nothing placed from the availability's rows, anything else by `negative_walk`."""
        lo, dur = self.lo, self.dur
        g0, g1 = self.gang
        k, off = divmod(x - lo, dur)
        if off == 0 and y == x + dur and 0 <= k < self.count:
            n = self.counts.get(k, 0)
            f0, f1 = self._low(k)
            if f0 < g0 * n or f1 < g1 * n:
                return True
            n = self.counts.get(k + 1, 0)
            f0, f1 = self._at(y)
            return f0 < g0 * n or f1 < g1 * n
        if not self.counts:
            i, j = self.vt.searchsorted((x, y), "right").tolist()
            return bool((self.vv[max(i - 1, 0):j] < 0).any())
        return self.negative_walk(x, y)

    def negative_walk(self, x: int, y: int) -> bool:
        """`negative` at every change in [x, y], by the candidates' counts (the general form)."""
        lo, dur, vt = self.lo, self.dur, self.vt
        pts = {x, *vt[vt.searchsorted(x, "right"):vt.searchsorted(y, "right")].tolist()}
        for k in self.counts:
            pts.update(t for t in (lo + k * dur, lo + (k + 1) * dur) if x < t <= y)
        g0, g1 = self.gang
        for t in pts:
            f0, f1 = self._at(t)
            k = (t - lo) // dur
            n = self.counts.get(k, 0) if 0 <= k < self.count else 0
            if f0 < g0 * n or f1 < g1 * n:
                return True
        return False

    def add(self, k: int, n: int) -> None:
        """See `Windows.add`."""
        self.counts[k] = self.counts.get(k, 0) + n

    def _pieces(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate k's load pieces: memory values and lengths."""
        got = self.pieces.get(k)
        if got is None:
            a = self.lo + k * self.dur
            b = a + self.dur
            lt = self.lt
            i, j = lt.searchsorted((a, b - 1), "right").tolist()
            t = lt[i - 1:j].copy()
            t[0] = a
            ends = np.append(t[1:], b)
            got = self.pieces[k] = (self.lv[i - 1:j, 0], (ends - t).astype(np.float64))
        return got

    def cost(self, k: int, every: int = 1, asks: int = 1) -> float:
        """See `Windows.cost`: the candidate's pieces with the stage's gangs on top, summed in time
        order; the costs with the counts the stage may ask for next are summed at once, a row each
        (as `ArrayWindows.cost`)."""
        n = self.counts.get(k, 0)
        summed = ahead_cost(self.ahead, k, n)
        if summed is not None:
            return summed
        mem, lens = self._pieces(k)
        every = max(1, every)
        rows = max(1, min(asks, _AHEAD, _AHEAD_CELLS // len(mem), -(-(self.first_fit(k) - n) // every)))
        g0 = self.gang[0]
        if rows == 1:
            sums = [float(np.add.accumulate(self._terms(mem + g0 * n, lens))[-1])]
        else:
            ns = np.arange(n, n + rows * every, every, dtype=np.int64)
            q = np.divide(mem + (ns * g0)[:, None], self.cap32[0], dtype=np.float32)
            t = np.multiply(q, lens, dtype=np.float64)
            t /= self.step
            sums = np.add.accumulate(t, axis=1)[:, -1].tolist()
        self.ahead[k] = (n, every, sums)
        return sums[0]

    def placed(self) -> list[Interval]:
        """See `Windows.placed`."""
        lo, dur = self.lo, self.dur
        return [(lo + k * dur, lo + (k + 1) * dur, rmul(self.gang, n)) for k, n in sorted(self.counts.items())]


def integrals(lt: np.ndarray, mem: np.ndarray, lo: int, dur: int, count: int) -> np.ndarray:
    """The exact integral of the load (times lt, the first at or before lo and the others inside
    the candidates, memory values mem) over each candidate `[lo + k dur, lo + (k + 1) dur)`: one
    prefix sum of value x length from lo, read at the candidates' bounds (`integrals_walk` is
    the reference)."""
    n = len(lt)
    t = lt.copy()
    t[0] = lo
    prefix = np.empty(n, dtype=np.int64)
    prefix[0] = 0
    np.cumsum(mem[:-1] * (t[1:] - t[:-1]), out=prefix[1:])
    # the last time at or before each bound lo + k dur: the first time, and the later ones k dur
    # reaches (the first bound at or after time x is ceil((x - lo) / dur), from 1 to count for a
    # time inside): a histogram of the lattice, cheaper than a search per bound
    at = np.empty(count + 1, dtype=np.int64)
    at[0] = 0
    np.cumsum(np.bincount((t[1:] - (lo + 1)) // dur, minlength=count), out=at[1:])
    # (from the offsets: lo + (count + 1) dur, arange's stop, may be past Long.MAX)
    bounds = np.arange(count + 1, dtype=np.int64) * dur + lo
    area = prefix.take(at)
    area += mem.take(at) * (bounds - t.take(at))
    return area[1:] - area[:-1]


def integrals_walk(lt: list[int], mem: list[int], lo: int, dur: int, count: int) -> list[int]:
    """`integrals` piece by piece in Python (the reference)."""
    out = []
    for k in range(count):
        a, b = lo + k * dur, lo + (k + 1) * dur
        total = 0
        for i, t in enumerate(lt):
            x = max(t, a)
            y = min(lt[i + 1], b) if i + 1 < len(lt) else b
            if y > x:
                total += mem[i] * (y - x)
        out.append(total)
    return out


class CheapestFirst:
    """A stage's candidates that fit a gang, in (cost, end key) order, as `Windows.runs` hands
    them out: read by index from the first on (`NoMoreRuns` past the last). Candidates are summed
    in levels of their integrals: every candidate at or below the level's threshold is summed,
    and an entry is handed out once its cost is below the least cost any candidate above the
    threshold can have; when none is, the threshold grows. Fits are read as entries are handed out."""

    def __init__(self, w: BoundedWindows, left: bool) -> None:
        self.w = w
        self.left = left
        self.done: list[RunEntry] = []
        integ = w.integrals
        # the queue: summed candidates not yet handed out, in (cost, end key) order
        self.q_cost = np.zeros(0, dtype=np.float64)
        self.q_k = np.zeros(0, dtype=np.int64)
        self.cursor = 0
        # candidates queued, and of them summed (a zero integral is a cost of 0.0, not summed)
        self.queued = self.summed = 0
        least = int(integ.min())
        self.top = int(integ.max())
        # every candidate can cost as little as the cheapest by its integral up to a relative
        # 2 REL_ERROR: the first level holds all of them, so the cheapest is handed out from it
        self.level = least + (least >> 17) + 1
        ks = np.flatnonzero(integ <= self.level)
        if least == 0:
            zero = integ.take(ks) == 0
            self._queue(ks[zero], ks[~zero])
        else:
            self._queue(ks[:0], ks)

    def _queue(self, zero: np.ndarray, ks: np.ndarray) -> None:
        """Queue the candidates ks (summed here) and zero (of cost exactly 0.0, first), behind
        what is left of the queue, in order."""
        w = self.w
        self.queued += len(zero) + len(ks)
        self.summed += len(ks)
        c = np.array(w.costs(ks), dtype=np.float64) if len(ks) else np.zeros(0, dtype=np.float64)
        k = ks
        if self.cursor < len(self.q_k):
            c = np.concatenate((self.q_cost[self.cursor:], c))
            k = np.concatenate((self.q_k[self.cursor:], k))
        if len(k) > 1:
            # the end key: ascending end allocating left, descending allocating right
            order = np.lexsort((k if self.left else -k, c))
            c, k = c.take(order), k.take(order)
        if len(zero):
            # every summed cost is positive: the zero-cost candidates go first, in end key order
            zk = zero if self.left else zero[::-1]
            c = np.concatenate((np.zeros(len(zk), dtype=np.float64), c)) if len(c) else np.zeros(len(zk))
            k = np.concatenate((zk, k)) if len(k) else zk
        self.q_cost, self.q_k, self.cursor = c, k, 0
        # every candidate above the level costs at least this (as a float: the margin covers the
        # rounding of the division as well)
        self.bound = ((self.level + 1) / (w.cap[0] * w.step) * (1.0 - 2 * REL_ERROR)
                      if self.level < self.top else float("inf"))

    def _grow(self) -> bool:
        """Sum the next level of candidates; False when every candidate has been summed."""
        if self.level >= self.top:
            return False
        integ = self.w.integrals
        above = integ[integ > self.level]
        want = max(GROW, self.queued)
        level = self.top if want >= len(above) else int(np.partition(above, want)[want])
        ks = np.flatnonzero((integ > self.level) & (integ <= level))
        self.level = level
        self._queue(ks[:0], ks)
        return True

    def __getitem__(self, i: int) -> RunEntry:
        done = self.done
        w = self.w
        lo, dur = w.lo, w.dur
        while len(done) <= i:
            if self.cursor < len(self.q_k) and self.q_cost[self.cursor] < self.bound:
                c = float(self.q_cost[self.cursor])
                k = int(self.q_k[self.cursor])
                self.cursor += 1
                f = w.first_fit(k)
                if f > 0:
                    end = lo + (k + 1) * dur
                    done.append((c, end if self.left else -end, k, k + 1, f))
            elif not self._grow():
                if self.cursor < len(self.q_k):
                    self.bound = float("inf")
                    continue
                raise NoMoreRuns("no more candidates")
        return done[i]

    def __len__(self) -> int:
        """Every entry (all candidates summed: for tests; the allocator reads by index)."""
        try:
            while True:
                self[len(self.done)]
        except NoMoreRuns:
            return len(self.done)


__all__ = ["BoundedWindows", "CheapestFirst", "integrals", "integrals_walk"]
