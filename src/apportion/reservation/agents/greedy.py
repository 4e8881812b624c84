"""`greedy`: the seed's agent, Hadoop 2.7's GreedyReservationAgent (contract §7.6).

Two implementations of one algorithm. `GreedyReferenceAgent` is kept exactly as the seed walks
through it: stages from the last to the first, each placed backwards from its deadline, a batch
of gangs per window using the min-point rule, one plan query per time step. `GreedyAgent` (the
`greedy` agent) walks the constant segments of the free-resource function instead of the time
steps, so its cost follows the breakpoints, not the window length. The property tests hold the
two to identical placements, and the benchmark reports their speed ratio.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

from apportion.reservation.agents.common import ReservationAgent, build_allocation, validate_stage
from apportion.reservation.definition import (
    R_ANY,
    R_ORDER,
    R_ORDER_NO_GAP,
    ReservationDefinition,
    ReservationId,
    Stage,
)
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.resmath import Res, radd, rmul, rneg, round_down, round_up, rsub
from apportion.reservation.stepfn import StepFunction

GREEDY_FAILED = "The GreedyAgent couldn't find a valid allocation for your request"

#: places one stage backwards from a deadline: the placed blocks, or None (the stage is undone)
StagePlacer = Callable[[Stage, int], list[tuple[int, int]] | None]


class GreedyReferenceAgent(ReservationAgent):
    """The seed's GreedyReservationAgent (Hadoop 2.7), one plan query per time step.

    Not a contract agent name: it is the reference the fast `GreedyAgent` is tested and
    benchmarked against (`make_agent("greedy-reference")`).
    """

    name = "greedy-reference"

    def plan_job(
        self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition,
        old: ReservationAllocation | None,
    ) -> ReservationAllocation:
        """The seed's step-by-step walk: each stage from the deadline backwards, as late as it fits."""
        step = plan.step
        earliest = round_up(definition.arrival, step)
        deadline = round_down(definition.deadline, step)
        cur_deadline = deadline
        old_deadline = -1
        interp = definition.interpreter
        temp = StepFunction(zero=plan.zero)  # what this job has placed so far (tempAssigned)
        place = self._placer(plan, temp, earliest, deadline, old)
        for st in reversed(definition.stages):
            validate_stage(plan, st)
            if st.duration <= 0:
                # deviation (§12 row 4): a zero-length stage counts as placed with nothing
                if interp == R_ANY:
                    break
                continue
            cur = place(st, cur_deadline)
            if cur is None:
                if interp != R_ANY:
                    raise PlanningException(GREEDY_FAILED)
                continue
            if interp == R_ANY:
                break
            if interp in (R_ORDER, R_ORDER_NO_GAP):
                cur_deadline = min(a for a, _b in cur)
                if interp == R_ORDER_NO_GAP and old_deadline > 0 and old_deadline - max(b for _a, b in cur) > step:
                    raise PlanningException(GREEDY_FAILED)
                old_deadline = cur_deadline
        if temp.is_empty():
            raise PlanningException(GREEDY_FAILED)
        first = temp.first_change()
        assert first is not None
        prefix = []
        start = first
        if first > earliest:
            # the seed's zero fill: the reservation starts at the (rounded) arrival
            prefix = [(earliest, first, plan.zero)]
            start = earliest
        end = temp.last_nonzero_end()
        return build_allocation(rid, user, definition, temp, start, end, prefix)

    def _placer(
        self, plan: InMemoryPlan, temp: StepFunction, earliest: int, deadline: int,
        old: ReservationAllocation | None,
    ) -> StagePlacer:
        def place(st: Stage, cur_deadline: int) -> list[tuple[int, int]] | None:
            return self._place_stage(plan, temp, st, earliest, cur_deadline, old)

        return place

    @staticmethod
    def _place_stage(
        plan: InMemoryPlan, temp: StepFunction, st: Stage, earliest: int, cur_deadline: int,
        old: ReservationAllocation | None,
    ) -> list[tuple[int, int]] | None:
        """placeSingleStage: batches of gangs backwards from cur_deadline, one query per step."""
        step = plan.step
        gang: Res = rmul(st.capability, st.concurrency)
        dur = round_up(st.duration, step)
        to_place = st.num_containers // st.concurrency
        cap = plan.capacity
        calc = plan.calc
        placed: list[tuple[int, int, Res]] = []
        while to_place > 0 and cur_deadline - dur >= earliest:
            max_gang = to_place
            min_point = cur_deadline
            t = cur_deadline - step
            while t >= cur_deadline - dur and max_gang > 0:
                oldr = old.resources_at(t) if old is not None else plan.zero
                free = rsub(rsub(radd(cap, oldr), plan.total_at(t)), temp.at(t))
                n = calc.gangs(free, gang, to_place)
                if n <= max_gang:
                    max_gang = n
                    min_point = t
                t -= step
            if max_gang > 0:
                to_place -= max_gang
                r = rmul(gang, max_gang)
                temp.add(cur_deadline - dur, cur_deadline, r)
                placed.append((cur_deadline - dur, cur_deadline, r))
            cur_deadline = min_point
        if to_place == 0:
            return [(a, b) for a, b, _r in placed]
        for a, b, r in placed:
            temp.remove(a, b, r)
        return None


class GreedyAgent(GreedyReferenceAgent):
    """The `greedy` agent: the seed's algorithm on constant segments instead of time steps.

    Every time the reference samples is a multiple of the step in `[earliest, deadline)`, and
    free(t) = capacity + old(t) − committed(t) − placed(t) is constant between breakpoints. So the
    job builds free() once over its window, keeps it up to date as it places gangs, and each batch
    walks the segments of `[D − dur, D)` from the latest: a segment with gang count n ≤ the running
    minimum takes the minimum and moves the min point to its earliest grid time (the reference,
    walking down with `<=`, ends on that one too), unless n ≤ 0, where the reference stops at the
    first grid time it visits, the segment's latest.
    """

    name = "greedy"

    def _placer(
        self, plan: InMemoryPlan, temp: StepFunction, earliest: int, deadline: int,
        old: ReservationAllocation | None,
    ) -> StagePlacer:
        free = _free_profile(plan, earliest, deadline, old)
        step = plan.step
        calc = plan.calc

        def place(st: Stage, cur_deadline: int) -> list[tuple[int, int]] | None:
            gang: Res = rmul(st.capability, st.concurrency)
            dur = round_up(st.duration, step)
            to_place = st.num_containers // st.concurrency
            placed: list[tuple[int, int, Res]] = []
            times, values = free
            while to_place > 0 and cur_deadline - dur >= earliest:
                lo = cur_deadline - dur
                max_gang = to_place
                min_point = cur_deadline
                # the latest grid time the reference visits is cur_deadline - step
                i = bisect_right(times, cur_deadline - step) - 1
                seg_hi = cur_deadline
                while i >= 0:
                    seg_lo = times[i]
                    first = round_up(seg_lo, step)
                    if first < lo:
                        first = lo
                    if first < seg_hi:  # the segment holds grid times first .. (seg_hi - 1) rounded down
                        n = calc.gangs(values[i], gang, to_place)
                        if n <= max_gang:
                            max_gang = n
                            if n <= 0:
                                min_point = round_down(seg_hi - 1, step)
                                break
                            min_point = first
                    if seg_lo <= lo:
                        break
                    seg_hi = seg_lo
                    i -= 1
                if max_gang > 0:
                    to_place -= max_gang
                    r = rmul(gang, max_gang)
                    temp.add(lo, cur_deadline, r)
                    _sub_block(free, lo, cur_deadline, r)
                    placed.append((lo, cur_deadline, r))
                cur_deadline = min_point
            if to_place == 0:
                return [(a, b) for a, b, _r in placed]
            for a, b, r in placed:
                temp.remove(a, b, r)
                _sub_block(free, a, b, rneg(r))
            return None

        return place


def _free_profile(
    plan: InMemoryPlan, s: int, e: int, old: ReservationAllocation | None
) -> tuple[list[int], list[Res]]:
    """capacity + old − committed over `[s, e)` as parallel breakpoint lists (first entry at s).

    Times before s or after e are never read. old counts as `resources_at` counts it: only inside
    its own `[start, end)`.
    """
    cap = plan.capacity
    times: list[int] = []
    values: list[Res] = []
    if e <= s:
        return [s], [cap]
    old_f: StepFunction | None = None
    if old is not None:
        a, b = max(s, old.start), min(e, old.end)
        if a < b:
            old_f = old.over_time(a, b)
    committed = plan.committed_over(s, e)
    if old_f is not None and not old_f.is_empty():
        committed.add_function(old_f, -1)
    two = len(cap) == 2
    for a, _b, r in committed.pieces(s, e):
        v = (cap[0] - r[0], cap[1] - r[1]) if two else rsub(cap, r)
        if not values or values[-1] != v:
            times.append(a)
            values.append(v)
    return times, values


def _sub_block(free: tuple[list[int], list[Res]], a: int, b: int, r: Res) -> None:
    """free -= r on `[a, b)` (a inside the profile's range; equal neighbours are left unmerged,
    which the segment walk tolerates)."""
    times, values = free
    i = bisect_right(times, a) - 1
    if times[i] != a:
        i += 1
        times.insert(i, a)
        values.insert(i, values[i - 1])
    j = bisect_right(times, b) - 1
    if times[j] != b:
        j += 1
        times.insert(j, b)
        values.insert(j, values[j - 1])
    if len(r) != 2:
        for k in range(i, j):
            values[k] = rsub(values[k], r)
        return
    rm, rv = r
    for k in range(i, j):
        v = values[k]
        values[k] = (v[0] - rm, v[1] - rv)
