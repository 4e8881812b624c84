"""YARN's ReservationInputValidator: the definition checks of contract §6, with YARN's messages.

The REST-level checks (authentication, ids, queues) live in `api.py`; the per-stage checks the
agents make (gang size, container counts, maximum allocation) live in `agents/common.py`.
"""

from __future__ import annotations

from apportion.errors import ApportionError
from apportion.reservation.definition import R_ALL, R_ANY, ReservationDefinition, parse_java_long
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.resmath import fmt_res, rmul


class ValidationError(ApportionError):
    """A definition the validator refuses; the REST layer answers 400 with `message`."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def validate_definition(plan: InMemoryPlan, definition: ReservationDefinition | None, now: int) -> None:
    """Run the checks of contract §6 in order; raise ValidationError at the first failure."""
    if definition is None:
        raise ValidationError(
            "Missing reservation definition. Please try again by specifying a reservation definition."
        )
    if definition.deadline <= now:
        raise ValidationError(
            f"The specified deadline: {definition.deadline} is the past. "
            "Please try again with deadline in the future."
        )
    if not definition.stages:
        raise ValidationError(
            "No resources have been specified to reserve. Please try again by specifying the resources to reserve."
        )
    calc = plan.calc
    cap = plan.capacity
    min_duration = 0
    max_gang = plan.zero
    for st in definition.stages:
        if definition.interpreter in (R_ALL, R_ANY):
            min_duration = max(min_duration, st.duration)
        else:
            min_duration += st.duration
        max_gang = calc.rmax(max_gang, rmul(st.capability, st.concurrency), cap)
    duration = definition.deadline - definition.arrival
    if duration < min_duration and definition.interpreter != R_ANY:
        raise ValidationError(
            f"The time difference ({duration}) between arrival ({definition.arrival}) and deadline "
            f"({definition.deadline}) must  be greater or equal to the minimum resource duration ({min_duration})"
        )
    if calc.greater(max_gang, cap, cap) and definition.interpreter != R_ANY:
        raise ValidationError(
            f"The size of the largest gang in the reservation definition ({fmt_res(max_gang, plan.dims)}) "
            f"exceed the capacity available ({fmt_res(cap, plan.dims)} )"
        )
    expr = definition.recurrence
    try:
        recurrence = parse_java_long(expr)
    except ValueError:
        raise ValidationError(
            f"Invalid period {expr}. Please try again with a non-negative long value as period."
        ) from None
    if recurrence < 0:
        raise ValidationError(
            f"Negative Period : {expr}. Please try again with a non-negative long value as period."
        )
    if recurrence > 0 and duration > recurrence:
        raise ValidationError(
            f"Duration of the requested reservation: {duration} is greater than the recurrence: {recurrence}. "
            "Please try again with a smaller duration."
        )
    if recurrence > 0 and plan.max_periodicity % recurrence != 0:
        raise ValidationError(
            f"The maximum periodicity: {plan.max_periodicity} must be divisible by the recurrence expression "
            f"provided: {recurrence}. Please try again with a recurrence expression that satisfies this requirement."
        )
