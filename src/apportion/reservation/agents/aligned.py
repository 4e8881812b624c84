"""Trunk's AlignedPlannerWithGreedy (contract §7.4): `aligned-left` (the default) and `aligned-right`.

Two planners are tried in order: the iterative planner with by-demand stage windows and the
low-cost aligned stage allocator, then the iterative planner with unconstrained windows and the
greedy stage allocator. The first that places the job and gets it into the plan wins.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable
from typing import Protocol

from apportion.reservation.agents.aligned_arrays import UNDEFINED, ArrayWindows, _read, undefined_at
from apportion.reservation.agents.bounded_windows import BoundedWindows
from apportion.reservation.agents.common import Interval, TryMany
from apportion.reservation.agents.iterative import GreedyStageAllocator, IterativePlanner, JobContext
from apportion.reservation.agents.sorted_runs import NoMoreRuns, RunEntry
from apportion.reservation.breakpoints import interval_breakpoints
from apportion.reservation.definition import Stage
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.resmath import Res, is_zero, radd, rmul, round_up, rsub
from apportion.reservation.stepfn import segments


class LowCostAlignedAllocator:
    """StageAllocatorLowCostAligned: gangs go to the cheapest of the dur-long windows tiling the stage."""

    def __init__(self, smoothness: int = 10) -> None:
        self.smoothness = max(1, smoothness)
        self._ratios: dict[tuple[str, Res], dict[Res, float]] = {}

    def allocate(self, job: JobContext, st: Stage, s: int, d: int) -> list[Interval] | None:
        """Place the stage's gangs on the cheapest dur-long windows of `[s, d)`; None when they do not all fit."""
        plan = job.plan
        dur = round_up(st.duration, plan.step)
        windows = (d - s) // dur
        if windows <= 0:
            return None
        gang: Res = rmul(st.capability, st.concurrency)
        to_place = st.num_containers // st.concurrency
        job.prime()
        old_id = job.rid if job.old is not None else None
        # raises (as the plan's availability does) before anything is placed
        avail_arrays = plan.available_arrays(job.user, old_id, s, d, job.period)
        per_step = max(1, max(1, to_place // windows) // self.smoothness)
        lo = s if job.left else d - windows * dur
        ev: Windows | None = None
        if avail_arrays is not None and lo + windows * dur == d:
            avail_arrays = undefined_at(*_read(*avail_arrays, lo, d + 1), d)
        if avail_arrays is not None:
            load_arrays = job.load_arrays()
            if load_arrays is not None:
                # a candidate's cost is asked for with 0, per_step, 2 per_step, ... gangs on it
                asks = -(-to_place // per_step)
                ev = BoundedWindows.make(job, load_arrays, avail_arrays, lo, dur, windows, gang, per_step, asks)
                if ev is None:
                    ev = ArrayWindows.make(job, load_arrays, avail_arrays, lo, dur, windows, gang, per_step, asks)
        if ev is None:
            ev = WalkWindows(job, self._ratio_cache(job), s, d, lo, dur, windows, gang)
        placed = place_gangs(ev, job, to_place, per_step)
        if placed is None:
            return None
        job.placed.add_pieces(placed)
        # the pieces of the stage's own function (from_intervals' breakpoints, without the map)
        keys, values = interval_breakpoints(placed)
        return [(t, t2, v) for t, t2, v in zip(keys, keys[1:], values) if not is_zero(v)]

    def _ratio_cache(self, job: JobContext) -> dict[Res, float]:
        # calc.ratio rounds through single precision, which costs more than the rest of a piece;
        # the plan's load values recur from job to job, so the ratios are kept across calls
        key = (job.plan.calc.kind, job.plan.capacity)
        ratios = self._ratios.get(key)
        if ratios is None or len(ratios) > 200_000:
            ratios = self._ratios[key] = {}
        return ratios


class Runs(Protocol):
    """A stage's runs in the order the allocator takes them, read by index (a list, `SortedRuns`,
    `CheapestFirst`)."""

    def __getitem__(self, i: int, /) -> RunEntry:
        """The i-th run; past the last, IndexError (a list) or `NoMoreRuns` (a lazy order)."""
        ...


class Windows(Protocol):
    """The candidate windows of one stage `[lo + k dur, lo + (k + 1) dur)`, k < count, as
    `place_gangs` reads them; the stage's own placements are kept here until it ends."""

    lo: int
    dur: int
    count: int

    def runs(self, left: bool) -> Runs:
        """(cost, end key, p0, p1, fit), ascending, read by index from the first on (past the last:
        IndexError from a list, `NoMoreRuns` from a lazy order; a lazy order need not know how many there are): the candidates cut into runs `[p0, p1)` whose
        members have the same cost and fit (evaluated as trunk evaluates every candidate when the
        stage starts), only those that fit a gang. The end key is that of the run's member taken
        first on a cost tie: its end allocating left (the earliest), minus its end allocating
        right (the latest)."""
        ...

    def negative(self, x: int, y: int) -> bool:
        """Whether (availability - the job's placements) has a negative component somewhere in
        the closed range `[x, y]`."""
        ...

    def add(self, k: int, n: int) -> None:
        """The stage places n more gangs on candidate k."""
        ...

    def cost(self, k: int, every: int = 1, asks: int = 1) -> float:
        """Candidate k's cost now. A hint: the stage may ask again up to `asks` times, each
        after `every` more gangs on k."""
        ...

    def fit(self, k: int) -> int:
        """How many gangs fit on candidate k now (zero or less: none)."""
        ...

    def placed(self) -> list[Interval]:
        """What the stage placed: one interval per candidate it placed on."""
        ...


def place_gangs(ev: Windows, job: JobContext, to_place: int, per_step: int) -> list[Interval] | None:
    """StageAllocatorLowCostAligned's loop: the cheapest candidate takes up to per_step gangs,
    then it alone is evaluated again; None when the candidates run out first.

    As trunk: a candidate's fit is the one evaluated when it entered the ordered set; the merge
    behind a fit refuses (PlanningException) a negative (availability - placements) from the
    first time the job placed anything on, so the stage raises when the availability is negative
    there anywhere in its candidates, and after every placement when it is negative on the
    candidate placed on (its end instant included). Ties go to the earliest end allocating left
    and to the latest allocating right."""
    left = job.left
    lo, dur = ev.lo, ev.dur
    hi = lo + ev.count * dur
    first = job.first_placed
    if first is not None and first <= hi and ev.negative(max(lo, first), hi):
        raise PlanningException(NEGATIVE_MERGE)
    # entries: (cost, end key, first position, end position, fit) of a run of candidates with the
    # same cost and fit (a single candidate k is the run (k, k + 1)); the runs as evaluated at the
    # start come in order, what is pushed later goes to a heap, and the smaller head is next
    ordered = ev.runs(left)
    i = 0
    heap: list[tuple[float, int, int, int, int]] = []
    try:
        while to_place > 0:
            head = _entry(ordered, i)
            if heap and (head is None or heap[0] < head):
                c0, _key, p0, p1, f0 = heapq.heappop(heap)
            elif head is not None:
                c0, _key, p0, p1, f0 = head
                i += 1
            else:
                return None
            k = p0 if left else p1 - 1
            a = lo + k * dur
            b = a + dur
            if p1 - p0 > 1:
                # the rest of the run keeps its cost and fit, its next member first among them
                if left:
                    heapq.heappush(heap, (c0, b + dur, p0 + 1, p1, f0))
                else:
                    heapq.heappush(heap, (c0, -a, p0, p1 - 1, f0))
            n = min(per_step, to_place, f0)
            ev.add(k, n)
            to_place -= n
            first = a if first is None else min(first, a)
            # trunk evaluates the candidate again after every placement, the last one included
            if ev.negative(a, b):
                raise PlanningException(NEGATIVE_MERGE)
            f = ev.fit(k)
            if f > 0 and to_place > 0:
                heapq.heappush(heap, (ev.cost(k, per_step, to_place // per_step + 1), b if left else -b, k, k + 1, f))
    finally:
        # trunk takes a failed stage's placements back out of planModifications, but the merge
        # leaves its first time behind, which keeps the check above on from there
        job.first_placed = first
    return ev.placed()


def _entry(ordered: Runs, i: int) -> RunEntry | None:
    """The i-th run, None past the last (a lazy order says so with `NoMoreRuns`; any other error
    from reading it propagates)."""
    if isinstance(ordered, list):
        return ordered[i] if i < len(ordered) else None
    try:
        return ordered[i]
    except NoMoreRuns:
        return None


NEGATIVE_MERGE = "RLESparseResourceAllocation: merge failed as the resulting RLESparseResourceAllocation would be negative"


class WalkWindows:
    """The candidates evaluated by walking the step functions piece by piece: the reference for
    `ArrayWindows`, and what the allocator uses where int64 arrays cannot hold the plan or a
    capacity or gang component is zero. Every placement goes into a copy of the job's
    placements, whose breakpoints are read again."""

    def __init__(
        self, job: JobContext, ratios: dict[Res, float], s: int, d: int, lo: int, dur: int, count: int, gang: Res,
    ) -> None:
        plan = job.plan
        self.lo, self.dur, self.count, self.gang = lo, dur, count, gang
        self.s, self.d = s, d
        self.step = plan.step
        calc, cap = plan.calc, plan.capacity
        self._ratio = lambda r: calc.ratio(r, cap)
        self._gangs = lambda r, best: calc.gangs(r, gang, best)
        self.ratios = ratios
        old_id = job.rid if job.old is not None else None
        # the availability is read on the closed range [s, d]: the end instant of the last
        # candidate is checked too, unless it is the deadline, where trunk's is undefined
        avail = plan.available(job.user, old_id, s, d, job.period, shared=True)
        self.lt, self.lv = segments(job.load(), s, d)
        self.vt, self.vv = segments(avail, s, d + 1)
        if lo + count * dur == d:
            undefined = (UNDEFINED,) * len(plan.capacity)
            if self.vt[-1] == d:
                self.vv[-1] = undefined
            else:
                self.vt.append(d)
                self.vv.append(undefined)
        self.lt.append(_PAST_END)
        self.vt.append(_PAST_END)
        self.cur = job.placed.copy()
        self.mine: dict[int, int] = {}
        self._read_placed()

    def _read_placed(self) -> None:
        self.pt, self.pv = segments(self.cur, self.s, self.d + 1)
        self.pt.append(_PAST_END)

    def runs(self, left: bool) -> list[tuple[float, int, int, int, int]]:
        """See `Windows.runs`: one run per candidate, or, for a long stage window, runs between
        the change points of the load, the availability and the job's placements."""
        lo, dur, count = self.lo, self.dur, self.count
        if count > _RUNS_MIN and count > _RUNS_FACTOR * (len(self.lt) + len(self.vt) + len(self.pt)):
            spans = candidate_runs(lo, dur, count, [*self.lt, *self.vt, *self.pt])
        else:
            spans = [(k, k + 1) for k in range(count)]
        out = []
        for p0, p1 in spans:
            a = lo + p0 * dur
            f = self._fit(a)
            if f > 0:
                end = lo + (p0 + 1) * dur if left else -(lo + p1 * dur)
                out.append((self._cost(a), end, p0, p1, f))
        out.sort()
        return out

    def _cost(self, a: int) -> float:
        return window_cost(self.lt, self.lv, self.pt, self.pv, a, a + self.dur, self.step, self.ratios, self._ratio)

    def _fit(self, a: int) -> int:
        return window_fit(self.vt, self.vv, self.pt, self.pv, a, a + self.dur, _NO_CAP, self._gangs)

    def negative(self, x: int, y: int) -> bool:
        """See `Windows.negative`."""
        return window_negative(self.vt, self.vv, self.pt, self.pv, x, y)

    def add(self, k: int, n: int) -> None:
        """See `Windows.add`."""
        a = self.lo + k * self.dur
        self.cur.add(a, a + self.dur, rmul(self.gang, n))
        self.mine[k] = self.mine.get(k, 0) + n
        self._read_placed()

    def cost(self, k: int, every: int = 1, asks: int = 1) -> float:
        """See `Windows.cost` (the hint is not used)."""
        return self._cost(self.lo + k * self.dur)

    def fit(self, k: int) -> int:
        """See `Windows.fit`."""
        return self._fit(self.lo + k * self.dur)

    def placed(self) -> list[Interval]:
        """See `Windows.placed`."""
        return [(self.lo + k * self.dur, self.lo + (k + 1) * self.dur, rmul(self.gang, n))
                for k, n in sorted(self.mine.items())]


def window_cost(
    lt: list[int], lv: list[Res], pt: list[int], pv: list[Res], a: int, b: int, step: int,
    ratios: dict[Res, float], ratio: Callable[[Res], float],
) -> float:
    """A candidate's cost: the area of (plan load + this job's placements) over `[a, b)` in
    plan-fractions x steps, summed in time order over the sum's runs of one value (trunk's merge
    joins equal neighbours, and a run summed as two pieces can differ in the last bit).

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
    run: Res | None = None  # the value of the run being summed, from run_x
    run_x = a
    while x < b:
        y = nl if nl < npl else npl
        if y > b:
            y = b
        r = radd(lv[i], pv[j])
        if r != run:
            if run is not None:
                total += _ratio(ratios, ratio, run) * (x - run_x) / step
            run = r
            run_x = x
        if nl == y:
            i += 1
            nl = lt[i + 1]
        if npl == y:
            j += 1
            npl = pt[j + 1]
        x = y
    if run is not None:
        total += _ratio(ratios, ratio, run) * (b - run_x) / step
    return total


def _ratio(ratios: dict[Res, float], ratio: Callable[[Res], float], r: Res) -> float:
    q = ratios.get(r)
    if q is None:
        q = ratios[r] = ratio(r)
    return q


def window_fit(
    vt: list[int], vv: list[Res], pt: list[int], pv: list[Res], a: int, b: int, best: int,
    gangs: Callable[[Res, int], int],
) -> int:
    """A candidate's fit: the fewest gangs that fit over `[a, b)` in (availability − this job's
    placements), capped at `best`; zero or less as soon as one piece fits none (a negative piece
    fits fewer than none: whether the merge refuses it is `window_negative`'s question).

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
        n = gangs(rsub(vv[i], pv[j]), best)
        if n < best:
            best = n
            if best <= 0:
                return best
        if nv == y:
            i += 1
            nv = vt[i + 1]
        if npl == y:
            j += 1
            npl = pt[j + 1]
        x = y
    return best


def window_negative(vt: list[int], vv: list[Res], pt: list[int], pv: list[Res], x: int, y: int) -> bool:
    """Whether (availability − this job's placements) has a negative component anywhere in the
    closed range `[x, y]`: where trunk's subtractTestNonNegative merge over a candidate refuses.
    The lists must reach past y (`segments` up to y + 1)."""
    i = bisect_right(vt, x) - 1
    j = bisect_right(pt, x) - 1
    while True:
        if any(c < 0 for c in rsub(vv[i], pv[j])):
            return True
        nv, npl = vt[i + 1], pt[j + 1]
        t = nv if nv < npl else npl
        if t > y:
            return False
        if nv == t:
            i += 1
        if npl == t:
            j += 1


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


#: no cap on a fit: trunk starts its minimum at Integer.MAX_VALUE
_NO_CAP = 2**31 - 1


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
