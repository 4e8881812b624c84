"""YARN's reservation exceptions, with the names the contract reports (§3.2, §5.3)."""

from __future__ import annotations

_PKG = "org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions."


class PlanningException(Exception):
    """YARN's PlanningException: a request the planner or the plan cannot satisfy."""

    java_name = _PKG + "PlanningException"
    kind = "Planning"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def java_string(self) -> str:
        """Throwable.toString(): the qualified class name, a colon, the message."""
        return f"{self.java_name}: {self.message}"


class ContractValidationException(PlanningException):
    """A definition the planner cannot accept (bad shape, impossible window)."""

    java_name = _PKG + "ContractValidationException"
    kind = "Planning"


class PlanningQuotaException(PlanningException):
    """A sharing policy refused the allocation."""

    java_name = _PKG + "PlanningQuotaException"
    kind = "PlanningQuota"


class ResourceOverCommitException(PlanningQuotaException):
    """The allocation would exceed the plan's capacity at some time."""

    java_name = _PKG + "ResourceOverCommitException"
    kind = "ResourceOverCommit"


class MismatchedUserException(PlanningException):
    """An update by a user other than the reservation's owner."""

    java_name = _PKG + "MismatchedUserException"
    kind = "Planning"


class PlanIllegalArgument(Exception):
    """Java's IllegalArgumentException raised by InMemoryPlan (unknown/duplicate id, no user)."""

    def __init__(self, message: str, kind: str = "IllegalArgument") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


def wrap_quota(cause: PlanningException) -> PlanningQuotaException:
    """`new PlanningQuotaException(cause)`: Java sets the message to the cause's toString()."""
    return PlanningQuotaException(cause.java_string())
