"""YARN's reservation exceptions, with the names the contract reports (§3.2, §5.3).

All derive from `apportion.errors.ApportionError`: one that escaped to the command line would be
reported in one line, never as a traceback (the handlers turn them into YARN answers first).
"""

from __future__ import annotations

from apportion.errors import ApportionError

_PKG = "org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions."


class PlanningException(ApportionError):
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
    """An invalid stage (gang size, container count, maximum allocation), contract §7.1."""

    java_name = _PKG + "ContractValidationException"
    kind = "Planning"


class PlanningQuotaException(PlanningException):
    """A refusal by the CapacityOverTime policy (or any failure inside its check)."""

    java_name = _PKG + "PlanningQuotaException"
    kind = "PlanningQuota"


class ResourceOverCommitException(PlanningQuotaException):
    """A refusal by the NoOverCommit check: the reservation does not fit in what is free."""

    java_name = _PKG + "ResourceOverCommitException"
    kind = "ResourceOverCommit"


class MismatchedUserException(PlanningException):
    """An update by a user other than the reservation's."""

    java_name = _PKG + "MismatchedUserException"
    kind = "Planning"


class PlanIllegalArgument(ApportionError):
    """Java's IllegalArgumentException raised by InMemoryPlan (unknown/duplicate id, no user)."""

    def __init__(self, message: str, kind: str = "IllegalArgument") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


def wrap_quota(cause: PlanningException) -> PlanningQuotaException:
    """`new PlanningQuotaException(cause)`: Java sets the message to the cause's toString()."""
    return PlanningQuotaException(cause.java_string())
