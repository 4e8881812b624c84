"""What every planning agent shares: the agent interface, stage validation, folding and storage."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from apportion.reservation.definition import ReservationDefinition, ReservationId, Stage
from apportion.reservation.exceptions import ContractValidationException, PlanningException
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation, fold_intervals
from apportion.reservation.resmath import Res
from apportion.reservation.stepfn import StepFunction

Interval = tuple[int, int, Res]

NOT_SATISFIABLE = "The request cannot be satisfied"
NO_GAP_VIOLATED = "The allocation found does not respect ORDER_NO_GAP"


def validate_stage(plan: InMemoryPlan, st: Stage) -> None:
    """The per-stage checks of contract §7.1 item 3 (YARN's validateInputStage)."""
    if st.concurrency < 1:
        raise ContractValidationException("Gang Size should be >= 1")
    if st.num_containers <= 0:
        raise ContractValidationException("Num containers should be > 0")
    if st.num_containers % st.concurrency != 0:
        raise ContractValidationException("Parallelism must be an exact multiple of gang size")
    if plan.calc.greater(st.capability, plan.maximum_allocation, plan.capacity):
        raise ContractValidationException("Individual capability requests should not exceed cluster's maxAlloc")


def stored_pieces(f: StepFunction) -> list[Interval]:
    """The constant pieces from the first to the last non-zero piece, interior zero gaps kept."""
    pts = f.breakpoints()
    return [(t, t2, v) for (t, v), (t2, _) in zip(pts, pts[1:])]


def build_allocation(
    rid: ReservationId,
    user: str,
    definition: ReservationDefinition,
    job: StepFunction,
    start: int,
    end: int,
    prefix: list[Interval] | None = None,
    *,
    owned: bool = False,
) -> ReservationAllocation:
    """The reservation an agent hands to the plan; periodic jobs are folded into one period.
    With `owned` the caller hands job over (it keeps no reference), so it is not copied."""
    period = definition.period()
    if period > 0:
        folded = fold_intervals(job.nonzero_pieces(), period, job.zero)
        pre: list[Interval] = []
        for a, b, r in prefix or []:
            o, length = a % period, min(b - a, period)
            if o + length <= period:
                pre.append((o, o + length, r))
            else:
                pre += [(o, period, r), (0, o + length - period, r)]
        pieces = pre + stored_pieces(folded)
        return ReservationAllocation(rid, user, definition, start, end, pieces, period=period, rle=folded)
    pieces = list(prefix or []) + stored_pieces(job)
    return ReservationAllocation(rid, user, definition, start, end, pieces, period=0, rle=job if owned else job.copy())


class ReservationAgent(ABC):
    """YARN's ReservationAgent: place a definition and add it to (or update it in) the plan."""

    name = "agent"

    @abstractmethod
    def plan_job(
        self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition,
        old: ReservationAllocation | None,
    ) -> ReservationAllocation:
        """Compute the reservation (raise PlanningException when there is none)."""

    def create(self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition) -> bool:
        """createReservation: plan the definition and add the allocation to the plan."""
        res = self.plan_job(plan, rid, user, definition, None)
        return plan.add_reservation(res)

    def update(self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition) -> bool:
        """Re-plan from scratch counting the old version as free; re-create it if it is gone (§5.6)."""
        old = plan.get(rid)
        res = self.plan_job(plan, rid, user, definition, old)
        if old is None:
            return plan.add_reservation(res)
        return plan.update_reservation(res)


class TryMany(ReservationAgent):
    """YARN's TryManyReservationAgents: the first planner that succeeds wins (§7.4)."""

    def __init__(self, name: str, agents: list[ReservationAgent]) -> None:
        self.name = name
        self.agents = agents

    def plan_job(
        self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition,
        old: ReservationAllocation | None,
    ) -> ReservationAllocation:
        """Not used: TryMany's planners plan and add on their own (see create and update)."""
        raise NotImplementedError("TryMany delegates: each planner plans and adds on its own")

    def create(self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition) -> bool:
        """createReservation with each planner in turn until one succeeds."""
        return self._first(lambda a: a.create(plan, rid, user, definition))

    def update(self, plan: InMemoryPlan, rid: ReservationId, user: str, definition: ReservationDefinition) -> bool:
        """updateReservation with each planner in turn until one succeeds."""
        return self._first(lambda a: a.update(plan, rid, user, definition))

    def _first(self, attempt: Callable[[ReservationAgent], bool]) -> bool:
        """The first agent that succeeds wins; if none does, the last one's refusal is raised."""
        last: PlanningException | None = None
        try:
            for a in self.agents:
                try:
                    if attempt(a):
                        return True
                except PlanningException as e:
                    last = e
            if last is not None:
                raise last
            return False
        finally:
            # a refusal's traceback holds this frame, which outlives the call as an object: while the
            # frame held the refusal (raised again, or kept when a later agent succeeded) the two made a
            # cycle only the cycle collector frees (a server that froze it meanwhile never does, see
            # service/collector.py)
            last = None
