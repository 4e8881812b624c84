"""Trunk's AlignedPlannerWithGreedy (contract §7.4): `aligned-left` (the default) and `aligned-right`.

Two planners are tried in order: the iterative planner with by-demand stage windows and the
low-cost aligned stage allocator, then the iterative planner with unconstrained windows and the
greedy stage allocator. The first that places the job and gets it into the plan wins.
"""

from __future__ import annotations

import heapq

from apportion.reservation.agents.common import Interval, TryMany
from apportion.reservation.agents.iterative import GreedyStageAllocator, IterativePlanner, JobContext
from apportion.reservation.definition import Stage
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.stepfn import Res, StepFunction, merge_pieces, radd, rmul, round_up


class LowCostAlignedAllocator:
    """StageAllocatorLowCostAligned: gangs go to the cheapest of the dur-long windows tiling the stage."""

    def __init__(self, smoothness: int = 10) -> None:
        self.smoothness = max(1, smoothness)

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
        avail = plan.available(job.user, job.rid if job.old is not None else None, s, d, job.period)
        load = job.load()
        placed = job.placed

        def cost(a: int, b: int) -> float:
            # area of (plan load + this job) in plan-fractions x steps, summed in time order
            total = 0.0
            for x, y, r in merge_pieces(load, placed, a, b, radd):
                total += calc.ratio(r, cap) * (y - x) / step
            return total

        def fit(a: int, b: int) -> int:
            best = to_place_now[0]
            for _x, _y, r in merge_pieces(avail, placed, a, b, _sub):
                if r[0] < 0 or r[1] < 0:
                    raise PlanningException(
                        "RLESparseResourceAllocation: merge failed as the resulting "
                        "RLESparseResourceAllocation would be negative"
                    )
                n = calc.gangs(r, gang, best)
                if n < best:
                    best = n
                if best <= 0:
                    return 0
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
                mine.append((a, b, r))
                to_place -= n
            to_place_now[0] = max(to_place, 1)
            if to_place > 0 and fit(a, b) > 0:
                heapq.heappush(heap, (cost(a, b), b if job.left else -b, a, b))
        merged = StepFunction.from_intervals(mine)
        pts = merged.breakpoints()
        return [(t, t2, v) for (t, v), (t2, _) in zip(pts, pts[1:]) if v != (0, 0)]


def _sub(a: Res, b: Res) -> Res:
    return (a[0] - b[0], a[1] - b[1])


def aligned_agent(allocate_left: bool, smoothness: int = 10) -> TryMany:
    name = "aligned-left" if allocate_left else "aligned-right"
    return TryMany(
        name,
        [
            IterativePlanner(name + "/low-cost", allocate_left, LowCostAlignedAllocator(smoothness), by_demand=True),
            IterativePlanner(name + "/greedy", allocate_left, GreedyStageAllocator()),
        ],
    )
