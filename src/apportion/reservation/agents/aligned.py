"""Trunk's AlignedPlannerWithGreedy (contract §7.4): `aligned-left` (the default) and `aligned-right`.

Two planners are tried in order: the iterative planner with by-demand stage windows and the
low-cost aligned stage allocator, then the iterative planner with unconstrained windows and the
greedy stage allocator. The first that places the job and gets it into the plan wins.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right

from apportion.reservation.agents.common import Interval, TryMany
from apportion.reservation.agents.iterative import GreedyStageAllocator, IterativePlanner, JobContext
from apportion.reservation.definition import Stage
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.stepfn import LONG_MAX, Res, StepFunction, rmul, round_up, segments


class LowCostAlignedAllocator:
    """StageAllocatorLowCostAligned: gangs go to the cheapest of the dur-long windows tiling the stage."""

    def __init__(self, smoothness: int = 10) -> None:
        self.smoothness = max(1, smoothness)
        self._ratios: dict[tuple[str, Res], dict[Res, float]] = {}

    def allocate(self, job: JobContext, st: Stage, s: int, d: int) -> list[Interval] | None:
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
        avail = plan.available(job.user, job.rid if job.old is not None else None, s, d, job.period)
        placed = job.placed
        # Every candidate lies in [s, d); the merges the cost and fit of a candidate [a, b) would walk
        # use the breakpoints of each operand strictly inside (a, b) plus its value at a, which are
        # exactly these lists restricted to [a, b). So the pieces (and the float sums over them, in
        # the same order) are those of merge_pieces, without building a merge per candidate.
        lt, lv = segments(job.load(), s, d)
        vt, vv = segments(avail, s, d)
        pt, pv = segments(placed, s, d)
        lt.append(LONG_MAX)
        vt.append(LONG_MAX)
        pt.append(LONG_MAX)
        # calc.ratio rounds through single precision, which costs more than the rest of a piece;
        # the plan's load values recur from job to job, so the ratios are kept across calls
        ratios = self._ratios.get((calc.kind, cap))
        if ratios is None or len(ratios) > 200_000:
            ratios = self._ratios[(calc.kind, cap)] = {}
        by_memory = calc.kind == "default" and gang[0] > 0
        g0 = gang[0]

        def cost(a: int, b: int) -> float:
            # area of (plan load + this job) in plan-fractions x steps, summed in time order
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
                    q = ratios[r] = calc.ratio(r, cap)
                total += q * (y - x) / step
                if nl == y:
                    i += 1
                    nl = lt[i + 1]
                if npl == y:
                    j += 1
                    npl = pt[j + 1]
                x = y
            return total

        def fit(a: int, b: int) -> int:
            best = to_place_now[0]
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
                n = r[0] // g0 if by_memory else calc.gangs(r, gang, best)
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

        to_place_now = [to_place]
        if job.left:
            cands = [(s + i * dur, s + (i + 1) * dur) for i in range(windows)]
        else:
            cands = [(d - (i + 1) * dur, d - i * dur) for i in range(windows)]
        heap: list[tuple[float, int, int, int]] = []
        for a, b in cands:
            if fit(a, b) > 0:
                heap.append((cost(a, b), b if job.left else -b, a, b))
        heapq.heapify(heap)
        per_step = max(1, to_place // windows)
        per_step = max(1, per_step // self.smoothness)
        mine: list[Interval] = []
        while to_place > 0:
            if not heap:
                for a, b, r in mine:
                    placed.remove(a, b, r)
                return None
            _c, _k, a, b = heapq.heappop(heap)
            to_place_now[0] = to_place
            n = min(per_step, to_place, fit(a, b))
            if n > 0:
                r = rmul(gang, n)
                placed.add(a, b, r)
                pt, pv = segments(placed, s, d)
                pt.append(LONG_MAX)
                mine.append((a, b, r))
                to_place -= n
            to_place_now[0] = max(to_place, 1)
            if to_place > 0 and fit(a, b) > 0:
                heapq.heappush(heap, (cost(a, b), b if job.left else -b, a, b))
        merged = StepFunction.from_intervals(mine)
        pts = merged.breakpoints()
        return [(t, t2, v) for (t, v), (t2, _) in zip(pts, pts[1:]) if v != (0, 0)]


def aligned_agent(allocate_left: bool, smoothness: int = 10) -> TryMany:
    name = "aligned-left" if allocate_left else "aligned-right"
    return TryMany(
        name,
        [
            IterativePlanner(name + "/low-cost", allocate_left, LowCostAlignedAllocator(smoothness), by_demand=True),
            IterativePlanner(name + "/greedy", allocate_left, GreedyStageAllocator()),
        ],
    )
