"""Trunk's AlignedPlannerWithGreedy (contract §7.4): `aligned-left` (the default) and `aligned-right`.

Two planners are tried in order: the iterative planner with by-demand stage windows and the
low-cost aligned stage allocator, then the iterative planner with unconstrained windows and the
greedy stage allocator. The first that places the job and gets it into the plan wins.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable

import numpy as np

from apportion.reservation.agents.common import Interval, TryMany
from apportion.reservation.agents.iterative import GreedyStageAllocator, IterativePlanner, JobContext
from apportion.reservation.definition import Stage
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.resmath import Calculator, Res, is_zero, radd, rmul, round_up, rsub
from apportion.reservation.steparrays import union, window
from apportion.reservation.stepfn import interval_breakpoints, segments


class LowCostAlignedAllocator:
    """StageAllocatorLowCostAligned: gangs go to the cheapest of the dur-long windows tiling the stage."""

    def __init__(self, smoothness: int = 10) -> None:
        self.smoothness = max(1, smoothness)
        self._ratios: dict[tuple[str, Res], dict[Res, float]] = {}

    def allocate(self, job: JobContext, st: Stage, s: int, d: int) -> list[Interval] | None:
        """Place the stage's gangs on the cheapest dur-long windows of `[s, d)`; None when they do not all fit."""
        plan = job.plan
        step = plan.step
        dur = round_up(st.duration, step)
        windows = (d - s) // dur
        if windows <= 0:
            return None
        gang: Res = rmul(st.capability, st.concurrency)
        to_place = st.num_containers // st.concurrency
        calc = plan.calc
        cap = plan.capacity
        job.prime()
        old_id = job.rid if job.old is not None else None
        # read only inside [s, d + 1) below; raises (as the plan's availability does) before anything is placed
        avail_arrays = plan.available_arrays(job.user, old_id, s, d, job.period)
        placed = job.placed
        # calc.ratio rounds through single precision, which costs more than the rest of a piece;
        # the plan's load values recur from job to job, so the ratios are kept across calls
        ratios = self._ratios.get((calc.kind, cap))
        if ratios is None or len(ratios) > 200_000:
            ratios = self._ratios[(calc.kind, cap)] = {}
        by_memory = calc.kind == "default" and gang[0] > 0
        g0 = gang[0]

        def ratio(r: Res) -> float:
            return calc.ratio(r, cap)

        def gangs(r: Res, best: int) -> int:
            return r[0] // g0 if by_memory else calc.gangs(r, gang, best)

        # the walks written out for two components, or their vector forms for a plan of other dimensions
        walk_cost, walk_fit = (window_cost, window_fit) if len(cap) == 2 else (_window_cost_k, _window_fit_k)

        def cost(a: int, b: int) -> float:
            return walk_cost(lt, lv, pt, pv, a, b, step, ratios, ratio)

        def fit(a: int, b: int) -> int:
            return walk_fit(vt, vv, pt, pv, a, b, to_place_now[0], gangs)

        to_place_now = [to_place]
        lo = s if job.left else d - windows * dur
        runs: list[tuple[int, int]] | None = None
        if windows > _RUNS_MIN:
            # a long stage window: the candidates between two change points of the load, the
            # availability and the job's placements are alike, so they are kept as runs
            lt, lv = segments(job.load(), s, d)
            vt, vv = segments(plan.available(job.user, old_id, s, d, job.period, shared=True), s, d)
            pt, pv = segments(placed, s, d)
            if windows > _RUNS_FACTOR * (len(lt) + len(vt) + len(pt)):
                runs = candidate_runs(lo, dur, windows, [*lt, *vt, *pt])
            lt.append(_PAST_END)
            vt.append(_PAST_END)
            pt.append(_PAST_END)
        load_arrays = job.load_arrays() if avail_arrays is not None and runs is None else None
        fast = None
        if avail_arrays is not None and load_arrays is not None:
            fast = _Windows.make(job, load_arrays, avail_arrays, s, d, dur, windows, gang, calc, cap, step)
        if fast is None:
            if runs is None:
                avail = plan.available(job.user, old_id, s, d, job.period, shared=True)
                # Every candidate lies in [s, d); the merges the cost and fit of a candidate [a, b)
                # would walk use the breakpoints of each operand strictly inside (a, b) plus its
                # value at a, which are exactly these lists restricted to [a, b). So the pieces
                # (and the float sums over them, in the same order) are those of merge_pieces,
                # without building a merge per candidate.
                lt, lv = segments(job.load(), s, d)
                vt, vv = segments(avail, s, d)
                pt, pv = segments(placed, s, d)
                lt.append(_PAST_END)
                vt.append(_PAST_END)
                pt.append(_PAST_END)
        else:
            # the same cost and fit, vectorised over the windows (see _Windows)
            def cost(a: int, b: int) -> float:  # noqa: F811
                return fast.cost(a)

            def fit(a: int, b: int) -> int:  # noqa: F811
                return fast.fit(a, to_place_now[0])

        left = job.left
        # heap entries: (cost, end key, first position, end position) of a run of candidates with
        # the same cost and fit; the end key is that of the run's preferred member, the one the
        # heap takes first on a cost tie: the earliest end allocating left, the latest allocating
        # right (a single candidate at position k is the run (k, k + 1))
        heap: list[tuple[float, int, int, int]] = []
        if runs is None:
            for k in range(windows):
                a = lo + k * dur
                b = a + dur
                if fit(a, b) > 0:
                    c = fast.initial_cost(a) if fast is not None else cost(a, b)
                    heap.append((c, b if left else -b, k, k + 1))
        else:
            for p0, p1 in runs:
                a = lo + (p0 if left else p1 - 1) * dur
                b = a + dur
                if fit(a, b) > 0:
                    heap.append((cost(a, b), b if left else -b, p0, p1))
        heapq.heapify(heap)
        per_step = max(1, to_place // windows)
        per_step = max(1, per_step // self.smoothness)
        mine: list[Interval] = []
        while to_place > 0:
            if not heap:
                if fast is None:
                    for a, b, r in mine:
                        placed.remove(a, b, r)
                return None
            c0, _k, p0, p1 = heapq.heappop(heap)
            k = p0 if left else p1 - 1
            a = lo + k * dur
            b = a + dur
            to_place_now[0] = to_place
            n = min(per_step, to_place, fit(a, b))
            if n > 0 and p1 - p0 > 1:
                # the rest of the run keeps its cost and fit, its next member first among them;
                # with no fit (n = 0) the whole run goes, as its members would one by one
                if left:
                    nb = b + dur
                    heapq.heappush(heap, (c0, nb, p0 + 1, p1))
                else:
                    heapq.heappush(heap, (c0, -a, p0, p1 - 1))
            if n > 0:
                r = rmul(gang, n)
                if fast is not None:
                    # placed is not read until the stage is done (fast keeps the stage's own
                    # load): the blocks go in at the end, one per window, which gives the same
                    # canonical function
                    fast.add(a, n)
                else:
                    placed.add(a, b, r)
                    pt, pv = segments(placed, s, d)
                    pt.append(_PAST_END)
                mine.append((a, b, r))
                to_place -= n
            to_place_now[0] = max(to_place, 1)
            if to_place > 0 and fit(a, b) > 0:
                heapq.heappush(heap, (cost(a, b), b if left else -b, k, k + 1))
        if fast is not None:
            placed.add_pieces([(a, a + dur, r) for a, r in fast.placed()])
        # the pieces of the stage's own function (from_intervals' breakpoints, without the map)
        keys, values = interval_breakpoints(mine)
        return [(t, t2, v) for t, t2, v in zip(keys, keys[1:], values) if not is_zero(v)]


class _Windows:
    """Cost and fit of every candidate window of one stage, on numpy arrays.

    Within one `allocate` the job's placements change only by whole candidate windows, which
    adds a constant inside the window: the breakpoints strictly inside every candidate stay those
    of the plan load (availability) and of what the job had placed before this stage. So the
    pieces of each candidate are fixed once, and a window's cost or fit is its fixed values plus
    what this stage put on it. The values are exactly the scalar code's: single-precision
    quotients are correctly rounded either way (a double quotient of two floats rounds to the same
    float), the products and quotients by the step are the same doubles, and each window's sum is
    an in-order accumulation (np.add.accumulate never regroups).
    """

    def __init__(self) -> None:
        self.lo = 0
        self.dur = 1
        self.step = 1
        self.gang: Res = (0, 0)
        self.kind = "default"
        # shared empty arrays until make() sets them: a stage builds one of these per call
        self.cap32 = _NO_F32
        self.c_start: list[int] = []
        self.c_mem = _NO_I64  # plan load + what the job placed before, per cost piece
        self.c_vc = _NO_I64
        self.c_lens = _NO_F64
        self.c_init: list[float] = []
        self.f_start: list[int] = []
        # per fit piece: how many gangs fit in its free value (floor), and the free value itself
        self.f_gangs: list[int] = []
        self.f_mem: list[int] = []
        self.f_vc: list[int] = []
        # per window: the minima of those three (see _fit), taken when first asked
        self.lows: list[tuple[int, int, int] | None] = []
        self.extra: list[tuple[int, int]] = []
        self.counts: list[int] = []  # gangs placed per window: extra is gang x count
        # per window: _fit for its current extra, None until asked (a placement resets it)
        self.fits: list[int | None] = []

    @classmethod
    def make(
        cls, job: JobContext, load: tuple[np.ndarray, np.ndarray], avail: tuple[np.ndarray, np.ndarray], s: int,
        d: int, dur: int, windows: int, gang: Res, calc: Calculator, cap: Res, step: int,
    ) -> _Windows | None:
        """The windows of a stage from the breakpoints of the job's load and of the availability
        (as arrays, `job.load_arrays()` and the plan's `available_arrays`); None where the scalar
        code has a special case (a zero capacity or gang component), and for a plan of other than
        the two YARN dimensions (the arrays here are written for two columns)."""
        if len(cap) != 2 or cap[0] <= 0 or gang[0] <= 0 or (calc.kind != "default" and (cap[1] <= 0 or gang[1] <= 0)):
            return None
        w = cls()
        lo = s if job.left else d - windows * dur
        hi = lo + windows * dur
        w.lo, w.dur, w.step, w.gang, w.kind = lo, dur, step, gang, calc.kind
        w.cap32 = np.array(cap, dtype=np.float32)
        bounds = np.arange(lo, hi, dur, dtype=np.int64)
        lt, lv = window(*load, lo, hi)
        vt, vv = window(*avail, lo, hi)
        if job.placed.zero_on(lo, hi):
            # nothing placed before the stage inside its windows (an ORDER stage lies past what
            # the earlier stages placed): the pieces are the load's and the availability's alone
            grid = union(lt, bounds)
            c_vals = lv[lt.searchsorted(grid, "right") - 1]
            fgrid = union(vt, bounds)
            free = vv[vt.searchsorted(fgrid, "right") - 1]
        else:
            pts, pvs = segments(job.placed, lo, hi)
            pt = np.array(pts, dtype=np.int64)
            pv = np.array(pvs, dtype=np.int64).reshape(-1, 2)
            grid = union(lt, pt, bounds)
            c_vals = lv[lt.searchsorted(grid, "right") - 1] + pv[pt.searchsorted(grid, "right") - 1]
            fgrid = union(vt, pt, bounds)
            free = vv[vt.searchsorted(fgrid, "right") - 1] - pv[pt.searchsorted(fgrid, "right") - 1]
        n = len(grid)
        lens = np.empty(n, dtype=np.float64)
        lens[:-1] = grid[1:] - grid[:-1]
        lens[-1] = hi - int(grid[-1])
        w.c_lens = lens
        w.c_start = grid.searchsorted(bounds).tolist()
        w.c_start.append(n)
        w.c_mem = c_vals[:, 0].copy()
        w.c_vc = c_vals[:, 1].copy()
        terms = w._terms(w.c_mem, w.c_vc, lens)
        w.c_init = [float(np.add.accumulate(terms[i:j])[-1]) for i, j in zip(w.c_start, w.c_start[1:])]
        starts = fgrid.searchsorted(bounds).tolist()
        starts.append(len(fgrid))
        w.fit_pieces(free, starts)
        return w

    def fit_pieces(self, free: np.ndarray, starts: list[int]) -> None:
        """The free value of every fit piece (availability minus what the job placed before the
        stage), window k's pieces at `starts[k]:starts[k + 1]`; nothing placed by the stage yet."""
        windows = len(starts) - 1
        self.f_start = starts
        gangs = free[:, 0] // self.gang[0]
        if self.kind != "default":
            gangs = np.minimum(gangs, free[:, 1] // self.gang[1])
        self.f_gangs = gangs.tolist()
        self.f_mem, self.f_vc = free.T.tolist()
        self.lows = [None] * windows
        self.extra = [(0, 0)] * windows
        self.counts = [0] * windows
        self.fits = [None] * windows

    def _terms(self, mem: np.ndarray, vc: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """calc.ratio((mem, vc), capacity) * (y - x) / step for every piece: each value cast to
        single precision and divided there, the quotient cast to double and multiplied by the
        length, then divided by the step (the dtype= forms cast first, as astype would)."""
        q = np.divide(mem, self.cap32[0], dtype=np.float32)
        if self.kind != "default":
            q = np.maximum(q, np.divide(vc, self.cap32[1], dtype=np.float32))
        t = np.multiply(q, lens, dtype=np.float64)
        t /= self.step
        return t

    def add(self, a: int, n: int) -> None:
        """The stage places n more gangs on the window starting at a."""
        k = (a - self.lo) // self.dur
        e = self.extra[k]
        self.extra[k] = (e[0] + self.gang[0] * n, e[1] + self.gang[1] * n)
        self.counts[k] += n
        self.fits[k] = None

    def placed(self) -> list[tuple[int, Res]]:
        """(window start, what the stage placed there) for every window it placed on."""
        return [(self.lo + k * self.dur, r) for k, r in enumerate(self.extra) if r != (0, 0)]

    def initial_cost(self, a: int) -> float:
        return self.c_init[(a - self.lo) // self.dur]

    def cost(self, a: int) -> float:
        k = (a - self.lo) // self.dur
        i, j = self.c_start[k], self.c_start[k + 1]
        e = self.extra[k]
        vc = self.c_vc[i:j] + e[1] if self.kind != "default" else self.c_vc
        return float(np.add.accumulate(self._terms(self.c_mem[i:j] + e[0], vc, self.c_lens[i:j]))[-1])

    def fit(self, a: int, best: int) -> int:
        k = (a - self.lo) // self.dur
        c = self.fits[k]
        if c is None:
            c = self.fits[k] = self._fit(k)
        if c < 0:
            raise PlanningException(
                "RLESparseResourceAllocation: merge failed as the resulting "
                "RLESparseResourceAllocation would be negative"
            )
        # the scalar walk caps every piece's count at best, so the answer is min(best, c)
        return c if c < best else best

    def _fit(self, k: int) -> int:
        """The window's smallest gang count over its pieces (0 if the walk stops at a piece with
        none), or -1 where the walk would raise: at a negative piece before any such stop.

        With n gangs placed the window's extra is gang x n, so a piece's free value is f - gang x n
        and its count floor((f - g n) / g) = floor(f / g) - n: the count is zero or less where
        floor(f / g) <= n, and the piece is negative where f_mem < g_mem n or f_vc < g_vc n. From
        the window's minima of the three: without a negative piece the answer is 0 or the
        smallest count; with one, the pieces are walked to see which kind comes first.
        """
        i, j = self.f_start[k], self.f_start[k + 1]
        lows = self.lows[k]
        if lows is None:
            lows = self.lows[k] = (min(self.f_gangs[i:j]), min(self.f_mem[i:j]), min(self.f_vc[i:j]))
        n = self.counts[k]
        need_m, need_v = self.gang[0] * n, self.gang[1] * n
        if lows[1] >= need_m and lows[2] >= need_v:
            return 0 if lows[0] <= n else lows[0] - n
        gangs, mem, vc = self.f_gangs, self.f_mem, self.f_vc
        for x in range(i, j):
            if mem[x] < need_m or vc[x] < need_v:
                return -1
            if gangs[x] <= n:
                return 0
        raise AssertionError("a window with a negative piece ends the walk")  # pragma: no cover


def window_cost(
    lt: list[int], lv: list[Res], pt: list[int], pv: list[Res], a: int, b: int, step: int,
    ratios: dict[Res, float], ratio: Callable[[Res], float],
) -> float:
    """A candidate's cost: the area of (plan load + this job's placements) over `[a, b)` in
    plan-fractions x steps, summed piece by piece in time order.

    `lt, lv` and `pt, pv` are the load's and the placements' breakpoints (`segments` over the
    stage window, closed by `_PAST_END`). This is `merge_pieces(load, placed, a, b, radd)` walked
    in place, inlined for speed; `ratios` keeps `ratio(r)` (calc.ratio, single precision) across
    candidates. A property test checks it against the walk of merge_pieces."""
    total = 0.0
    i = bisect_right(lt, a) - 1
    j = bisect_right(pt, a) - 1
    x = a
    nl = lt[i + 1]
    npl = pt[j + 1]
    while x < b:
        y = nl if nl < npl else npl
        if y > b:
            y = b
        u = lv[i]
        w = pv[j]
        r = (u[0] + w[0], u[1] + w[1])
        q = ratios.get(r)
        if q is None:
            q = ratios[r] = ratio(r)
        total += q * (y - x) / step
        if nl == y:
            i += 1
            nl = lt[i + 1]
        if npl == y:
            j += 1
            npl = pt[j + 1]
        x = y
    return total


def window_fit(
    vt: list[int], vv: list[Res], pt: list[int], pv: list[Res], a: int, b: int, best: int,
    gangs: Callable[[Res, int], int],
) -> int:
    """A candidate's fit: the fewest gangs that fit over `[a, b)` in (availability − this job's
    placements), capped at `best`; 0 as soon as one piece fits none. A negative piece met before
    that raises, as trunk's subtractTestNonNegative merge does.

    `merge_pieces(avail, placed, a, b, rsub)` walked in place, inlined for speed; property-tested
    against that walk."""
    i = bisect_right(vt, a) - 1
    j = bisect_right(pt, a) - 1
    x = a
    nv = vt[i + 1]
    npl = pt[j + 1]
    while x < b:
        y = nv if nv < npl else npl
        if y > b:
            y = b
        u = vv[i]
        w = pv[j]
        r = (u[0] - w[0], u[1] - w[1])
        if r[0] < 0 or r[1] < 0:
            raise PlanningException(
                "RLESparseResourceAllocation: merge failed as the resulting "
                "RLESparseResourceAllocation would be negative"
            )
        n = gangs(r, best)
        if n < best:
            best = n
        if best <= 0:
            return 0
        if nv == y:
            i += 1
            nv = vt[i + 1]
        if npl == y:
            j += 1
            npl = pt[j + 1]
        x = y
    return best


def _window_cost_k(
    lt: list[int], lv: list[Res], pt: list[int], pv: list[Res], a: int, b: int, step: int,
    ratios: dict[Res, float], ratio: Callable[[Res], float],
) -> float:
    """`window_cost` for a plan of any number of dimensions (the walk above, on vectors)."""
    total = 0.0
    i = bisect_right(lt, a) - 1
    j = bisect_right(pt, a) - 1
    x = a
    while x < b:
        y = min(lt[i + 1], pt[j + 1], b)
        r = radd(lv[i], pv[j])
        q = ratios.get(r)
        if q is None:
            q = ratios[r] = ratio(r)
        total += q * (y - x) / step
        if lt[i + 1] == y:
            i += 1
        if pt[j + 1] == y:
            j += 1
        x = y
    return total


def _window_fit_k(
    vt: list[int], vv: list[Res], pt: list[int], pv: list[Res], a: int, b: int, best: int,
    gangs: Callable[[Res, int], int],
) -> int:
    """`window_fit` for a plan of any number of dimensions (the walk above, on vectors)."""
    i = bisect_right(vt, a) - 1
    j = bisect_right(pt, a) - 1
    x = a
    while x < b:
        y = min(vt[i + 1], pt[j + 1], b)
        r = rsub(vv[i], pv[j])
        if min(r) < 0:
            raise PlanningException(
                "RLESparseResourceAllocation: merge failed as the resulting "
                "RLESparseResourceAllocation would be negative"
            )
        n = gangs(r, best)
        if n < best:
            best = n
        if best <= 0:
            return 0
        if vt[i + 1] == y:
            i += 1
        if pt[j + 1] == y:
            j += 1
        x = y
    return best


#: closes the breakpoint lists: later than any time, Long.MAX included (a stage may end there)
_PAST_END = 1 << 64

#: from this many candidate windows a stage looks at the change points before listing them
_RUNS_MIN = 4096
#: ... and keeps them as runs when they outnumber the change points this many times
_RUNS_FACTOR = 4


def candidate_runs(lo: int, dur: int, windows: int, times: list[int]) -> list[tuple[int, int]]:
    """The candidates `[lo + k*dur, lo + (k+1)*dur)`, k < windows, cut into runs (position
    ranges `[p0, p1)`) inside which no candidate meets one of `times`: a time on a candidate's
    start cuts before it, a time inside a candidate makes it a run of its own. Members of a run
    see constant values, so they have the same cost and fit; there are O(len(times)) runs."""
    hi = lo + windows * dur
    cuts = {0, windows}
    for t in times:
        if not lo < t < hi:
            continue
        k, off = divmod(t - lo, dur)
        cuts.add(k)
        if off:
            cuts.add(k + 1)
    edges = sorted(cuts)
    return list(zip(edges, edges[1:]))


_NO_F32 = np.zeros(2, dtype=np.float32)
_NO_I64 = np.zeros(0, dtype=np.int64)
_NO_F64 = np.zeros(0, dtype=np.float64)


def aligned_agent(allocate_left: bool, smoothness: int = 10) -> TryMany:
    """AlignedPlannerWithGreedy: the low-cost aligned planner, then the greedy one, in one direction."""
    name = "aligned-left" if allocate_left else "aligned-right"
    return TryMany(
        name,
        [
            IterativePlanner(name + "/low-cost", allocate_left, LowCostAlignedAllocator(smoothness), by_demand=True),
            IterativePlanner(name + "/greedy", allocate_left, GreedyStageAllocator()),
        ],
    )
