"""What a sharing policy may read of a plan, and what a plan may ask of its policy.

YARN's SharingPolicy receives the whole Plan; here it receives `PlanView`, the read-only part it
needs (capacity, calculator, the availability, the users' consumption, a reservation by id), so a
policy cannot edit the plan and the plan does not need to know any policy class: it talks to
`Policy`, which `apportion.reservation.policies` implements. The plan passes itself (InMemoryPlan
satisfies PlanView), so reading through the view costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np

from apportion.reservation.definition import ReservationId
from apportion.reservation.periodic import PeriodicStepFunction
from apportion.reservation.resmath import Calculator, Res
from apportion.reservation.stepfn import StepFunction

if TYPE_CHECKING:
    from apportion.reservation.allocation import ReservationAllocation


class PlanView(Protocol):
    """The read-only queries of a plan that a sharing policy uses."""

    @property
    def capacity(self) -> Res:
        """The plan's total capacity."""

    @property
    def calc(self) -> Calculator:
        """The plan's resource calculator."""

    @property
    def user_load(self) -> Mapping[str, StepFunction]:
        """Per user, the non-periodic consumption (users without any are absent)."""

    @property
    def user_periodic(self) -> Mapping[str, PeriodicStepFunction]:
        """Per user, the periodic consumption, modulo maxPeriodicity (users without any are absent)."""

    def get(self, rid: ReservationId | None) -> ReservationAllocation | None:
        """The reservation with that id, if the plan holds it."""

    def user_over(self, user: str, s: int, e: int) -> StepFunction:
        """The user's consumption over `[s, e)`, non-periodic plus periodic."""

    def user_integral_bound(self, user: str, s: int, e: int) -> Res | None:
        """An upper bound of the integral of the user's consumption over any part of `[s - 2T, e]`."""

    def available(
        self, user: str | None, old_id: ReservationId | None, s: int, e: int, period: int = 0, *, shared: bool = False
    ) -> StepFunction:
        """The plan's availability for user over `[s, e]` (contract §8.3)."""

    def available_arrays(
        self, user: str | None, old_id: ReservationId | None, s: int, e: int, period: int = 0, *,
        convert: bool = True,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """`available` as breakpoint arrays, or None (see InMemoryPlan.available_arrays)."""


class Policy(Protocol):
    """A sharing policy as the plan uses it (YARN's SharingPolicy)."""

    name: str

    def validate(self, plan: PlanView, res: ReservationAllocation) -> None:
        """Raise a PlanningException when the plan must not accept res."""

    def available_resources(
        self, net: StepFunction, plan: PlanView, user: str | None, old_id: ReservationId | None, s: int, e: int
    ) -> StepFunction:
        """Lower the plan availability for user over `[s, e]`."""

    def instantaneous_limit(self, plan: PlanView) -> Res | None:
        """The per-user cap `available_resources` applies pointwise, or None when it applies none."""

    def availability_is_pointwise(self) -> bool:
        """Whether `available_resources` is `min(net, limit - used)` pointwise (or the identity), so
        that the plan may fuse it into its own pass and keep its answers."""

    def valid_window(self) -> int:
        """How long after their end reservations are kept (archiving, §8.4)."""
