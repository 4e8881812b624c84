"""Trunk's iterative planner and its greedy RLE stage allocator (contract §7.1-§7.3, §7.5).

`greedy-left` / `greedy-right` are the iterative planner with unconstrained stage windows and the
greedy stage allocator, allocating left to right (favor early) or right to left.
"""

from __future__ import annotations

import math
from contextlib import suppress
from typing import Protocol

import numpy as np

from apportion.reservation.agents.common import (
    NO_GAP_VIOLATED,
    NOT_SATISFIABLE,
    Interval,
    ReservationAgent,
    build_allocation,
    validate_stage,
)
from apportion.reservation.definition import (
    R_ALL,
    R_ANY,
    R_ORDER,
    R_ORDER_NO_GAP,
    ReservationDefinition,
    ReservationId,
    Stage,
)
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.resmath import LONG_MAX, Res, is_zero, rmul, round_down, round_up
from apportion.reservation.steparrays import arrays_of
from apportion.reservation.stepfn import StepFunction


class JobContext:
    """What one planning run shares between its stages."""

    def __init__(
        self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition,
        old: ReservationAllocation | None, allocate_left: bool,
    ) -> None:
        self.plan = plan
        self.rid = rid
        self.user = user
        self.definition = definition
        self.old = old
        self.left = allocate_left
        self.period = definition.period()
        self.placed = StepFunction(zero=plan.zero)  # this job's placements so far (planModifications)
        # the earliest time the low-cost allocator ever placed at, kept when a failed stage's
        # placements are taken back (trunk's merge leaves it in planModifications)
        self.first_placed: int | None = None
        step = plan.step
        self.load_start = round_up(definition.arrival, step)
        self.load_end = round_down(definition.deadline, step)
        self._load: StepFunction | None = None
        self._load_arrays: tuple[np.ndarray, np.ndarray] | None = None
        self._primed = False

    def load(self) -> StepFunction:
        """The plan load over [roundUp(arrival), roundDown(deadline)), old version subtracted (§7.1)."""
        if self._load is None:
            s, e = self.load_start, self.load_end
            f = self.plan.committed_over(s, e) if e > s else StepFunction(zero=self.plan.zero)
            if self.old is not None and e > s:
                f.add_function(self.old.over_time(s, e), -1)
            self._load = f
        return self._load

    def load_arrays(self) -> tuple[np.ndarray, np.ndarray] | None:
        """`load()`'s breakpoints as arrays (times, (n, 2) values); None when int64 cannot hold them.
        Without an old version they come from the plan's mirrors, and `load()` is never built."""
        if self._load_arrays is None:
            arrays = None
            if self.old is None:
                arrays = self.plan.committed_arrays(self.load_start, self.load_end)
            self._load_arrays = arrays if arrays is not None else arrays_of(self.load())
        return self._load_arrays

    def prime(self) -> None:
        """Ask the plan once for the whole window, so that its availability cache serves every
        stage window and the policy's check of the result (both lie inside it)."""
        if self._primed:
            return
        self._primed = True
        d = self.definition
        # on a refusal the stage windows ask for themselves and get their own answer
        if d.arrival <= d.deadline:
            with suppress(PlanningException):
                self.plan.warm_availability(self.user, self.rid if self.old is not None else None, d.arrival,
                                            d.deadline, self.period)

    def availability(self, s: int, d: int) -> StepFunction:
        """Plan availability for the user over [s, d] minus this job's placements (plain subtraction)."""
        self.prime()
        avail = self.plan.available(self.user, self.rid if self.old is not None else None, s, d, self.period)
        avail.add_function(self.placed.clip(s, d + 1), -1)
        return avail


class StageAllocator(Protocol):
    """StageAllocator: places one stage of a job inside a window of the plan."""

    def allocate(self, job: JobContext, st: Stage, s: int, d: int) -> list[Interval] | None:
        """The stage's intervals inside [s, d), or None when it does not fit there."""
        ...


class GreedyStageAllocator:
    """StageAllocatorGreedyRLE (contract §7.3)."""

    def allocate(self, job: JobContext, st: Stage, s: int, d: int) -> list[Interval] | None:
        """The stage's intervals inside [s, d), greedy over the free-resource function; None if none."""
        if s + st.duration > d:
            return None
        plan = job.plan
        step = plan.step
        dur = round_up(st.duration, step)
        gang: Res = rmul(st.capability, st.concurrency)
        to_place = st.num_containers // st.concurrency
        calc = plan.calc
        avail = job.availability(s, d)  # computed once per stage (trunk behaviour)
        pieces = list(avail.pieces(s, d))
        placed: list[Interval] = []
        lo, hi = s, d
        while to_place > 0 and lo + dur <= hi:
            max_gang = to_place
            if job.left:
                seg_end = lo + dur
                for a, b, r in pieces:
                    if b <= lo:
                        continue
                    t = max(a, lo)
                    if t >= lo + dur:
                        break
                    n = calc.gangs(r, gang, to_place)
                    if n <= max_gang:
                        max_gang = n
                        seg_end = b
                    if max_gang <= 0:
                        break
                block = (lo, lo + dur)
            else:
                seg_start = hi - dur
                for a, b, r in reversed(pieces):
                    if a >= hi:
                        continue
                    end = min(b, hi)
                    if end < hi - dur:
                        break
                    n = calc.gangs(r, gang, to_place)
                    if n <= max_gang:
                        max_gang = n
                        seg_start = a
                    if max_gang <= 0:
                        break
                block = (hi - dur, hi)
            if max_gang > 0:
                to_place -= max_gang
                res = rmul(gang, max_gang)
                job.placed.add(block[0], block[1], res)
                placed.append((block[0], block[1], res))
            if job.left:
                lo = min(seg_end, lo + dur)
            else:
                hi = max(seg_start, hi - dur)
        if to_place == 0:
            return placed
        for a, b, r in placed:
            job.placed.remove(a, b, r)
        return None


def _no_gap_contiguous(intervals: list[Interval]) -> bool:
    """Endpoints of the non-zero intervals, each shared one cancelled: exactly two must remain."""
    ends: set[int] = set()
    for a, b, r in intervals:
        if is_zero(r):
            continue
        ends ^= {a}
        ends ^= {b}
    return len(ends) == 2


def order_no_gap_ok(block: tuple[int, int] | None, cur: list[Interval], left: bool) -> bool:
    """IterativePlanner.validateOrderNoGap: a stage's non-zero intervals `cur` touch what the
    earlier stages placed (`block`, its first and last time; None when nothing is placed yet) on
    the side the planner walks towards, and form one contiguous block."""
    nz = [(a, b, r) for a, b, r in cur if not is_zero(r)]
    if block is not None and nz:
        if left and block[1] < min(a for a, _b, _r in nz):
            return False
        if not left and max(b for _a, b, _r in nz) < block[0]:
            return False
    return _no_gap_contiguous(nz)


class IterativePlanner(ReservationAgent):
    """Trunk's IterativePlanner (contract §7.1) with a window rule and a stage allocator."""

    def __init__(self, name: str, allocate_left: bool, allocator: StageAllocator, by_demand: bool = False) -> None:
        self.name = name
        self.left = allocate_left
        self.allocator = allocator
        self.by_demand = by_demand

    def plan_job(
        self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition,
        old: ReservationAllocation | None,
    ) -> ReservationAllocation:
        """IterativePlanner.computeJobAllocation: each stage's window, then the allocator, in order."""
        job = JobContext(plan, rid, user, definition, old, self.left)
        interp = definition.interpreter
        stages = list(enumerate(definition.stages))
        if not self.left:
            stages.reverse()
        arrival, deadline = definition.arrival, definition.deadline
        block_lo: int | None = None  # start of what is placed (ORDER windows)
        block_hi: int | None = None  # end of what is placed
        for idx, st in stages:
            validate_stage(plan, st)
            if st.duration <= 0:
                # deviation (§12 row 4): placed with nothing, never sent to the allocator
                if interp == R_ANY:
                    break
                continue
            a, d = arrival, deadline
            if interp in (R_ORDER, R_ORDER_NO_GAP) and block_lo is not None and block_hi is not None:
                if self.left:
                    a = block_hi
                else:
                    d = block_lo
            if self.by_demand and interp in (R_ORDER, R_ORDER_NO_GAP):
                a, d = self._by_demand(plan, definition, idx, st, a, d)
            cur = self.allocator.allocate(job, st, a, d)
            if cur is None:
                if interp == R_ANY:
                    continue
                raise PlanningException(NOT_SATISFIABLE)
            nz = [(x, y, r) for x, y, r in cur if not is_zero(r)]
            if nz:
                c_lo = min(x for x, _y, _r in nz)
                c_hi = max(y for _x, y, _r in nz)
                if interp == R_ORDER_NO_GAP:
                    block = (block_lo, block_hi) if block_lo is not None and block_hi is not None else None
                    if not order_no_gap_ok(block, nz, self.left):
                        raise PlanningException(NO_GAP_VIOLATED)
                block_lo = c_lo if block_lo is None else min(block_lo, c_lo)
                block_hi = c_hi if block_hi is None else max(block_hi, c_hi)
            if interp == R_ANY:
                break
        if job.placed.is_empty() or not job.placed.nonzero_pieces():
            raise PlanningException(NOT_SATISFIABLE)
        # the job's placements go to the reservation: the context ends here
        return build_allocation(rid, user, definition, job.placed, arrival, deadline, owned=True)

    def _by_demand(
        self, plan: InMemoryPlan, definition: ReservationDefinition, idx: int, st: Stage, a: int, d: int
    ) -> tuple[int, int]:
        """StageExecutionIntervalByDemand (contract §7.2), in trunk's arithmetic: each weight an
        exact long product (wrapping as Java's does) turned into a double, summed from the far end
        of the job towards the stage, the window cast back to a long by truncation and rounded to
        the step with Java's truncating division. Deviation (docs/semantics.md): when the weights
        sum to zero (memory-less stages) the stage gets no slack, where trunk's 0/0 would put the
        window's far end at time 0."""
        step = plan.step
        stages = definition.stages
        # trunk walks from the last stage back to this one (left), or from the first up to it (right)
        rest = stages[idx:][::-1] if self.left else stages[: idx + 1]
        total_dur = _java_long(sum(round_up(s.duration, step) for s in rest))
        total = 0.0
        for s in rest:
            total += _weight(s)
        share = _weight(st) / total if total != 0.0 else 0.0
        slack = float(_java_long(_java_long(d - a) - total_dur))
        dur = round_up(st.duration, step)
        if self.left:
            return a, _java_round_down(_double_to_long(float(_java_long(a + dur)) + slack * share), step)
        return _java_round_up(_double_to_long(float(_java_long(d - dur)) - slack * share), step), d


def _java_long(x: int) -> int:
    """x wrapped to a signed 64-bit integer, as Java's long arithmetic wraps."""
    if -(1 << 63) <= x < (1 << 63):
        return x  # nothing to wrap (the common case; the modulo below costs big-integer arithmetic)
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def _weight(st: Stage) -> float:
    """StageExecutionIntervalByDemand.calcWeight: duration x memory x containers in long arithmetic."""
    return float(_java_long(_java_long(st.duration * st.capability[0]) * st.num_containers))


def _double_to_long(x: float) -> int:
    """Java's (long) cast: truncation towards zero, saturating, NaN to 0."""
    if math.isnan(x):
        return 0
    if x >= 2.0**63:
        return LONG_MAX
    if x <= -(2.0**63):
        return -LONG_MAX - 1
    return int(x)


def _java_round_down(t: int, step: int) -> int:
    """stepRoundDown with Java's division (towards zero)."""
    q = abs(t) // step
    return _java_long((q if t >= 0 else -q) * step)


def _java_round_up(t: int, step: int) -> int:
    """stepRoundUp: ((t + step - 1) / step) * step in long arithmetic."""
    return _java_round_down(_java_long(t + step - 1), step)


def greedy_left() -> IterativePlanner:
    """`greedy-left`: the iterative planner, greedy stage allocator, stages placed left to right (favor early)."""
    return IterativePlanner("greedy-left", True, GreedyStageAllocator())


def greedy_right() -> IterativePlanner:
    """`greedy-right`: the same, stages placed right to left (favor late)."""
    return IterativePlanner("greedy-right", False, GreedyStageAllocator())


__all__ = [
    "GreedyStageAllocator", "IterativePlanner", "JobContext", "R_ALL", "greedy_left", "greedy_right", "order_no_gap_ok",
]
