"""`greedy`: the seed's agent, Hadoop 2.7's GreedyReservationAgent (contract §7.6).

A straightforward reference, kept exactly as the seed walks through it: stages from the last to
the first, each placed backwards from its deadline, a batch of gangs per window using the
min-point rule, one plan query per time step. The fast agents are benchmarked against it.
"""

from __future__ import annotations

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
from apportion.reservation.stepfn import Res, StepFunction, rmul, round_down, round_up

GREEDY_FAILED = "The GreedyAgent couldn't find a valid allocation for your request"


class GreedyAgent(ReservationAgent):
    """The seed's GreedyReservationAgent (Hadoop 2.7)."""

    name = "greedy"

    def plan_job(
        self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition,
        old: ReservationAllocation | None,
    ) -> ReservationAllocation:
        step = plan.step
        earliest = round_up(definition.arrival, step)
        deadline = round_down(definition.deadline, step)
        cur_deadline = deadline
        old_deadline = -1
        interp = definition.interpreter
        temp = StepFunction()  # what this job has placed so far (tempAssigned)
        for st in reversed(definition.stages):
            validate_stage(plan, st)
            if st.duration <= 0:
                # deviation (§12 row 4): a zero-length stage counts as placed with nothing
                if interp == R_ANY:
                    break
                continue
            cur = self._place_stage(plan, temp, st, earliest, cur_deadline, old)
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
            prefix = [(earliest, first, (0, 0))]
            start = earliest
        end = temp.last_nonzero_end()
        return build_allocation(rid, user, definition, temp, start, end, prefix)

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
                oldr = old.resources_at(t) if old is not None else (0, 0)
                tot = plan.total_at(t)
                mine = temp.at(t)
                free = (cap[0] + oldr[0] - tot[0] - mine[0], cap[1] + oldr[1] - tot[1] - mine[1])
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
