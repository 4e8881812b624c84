"""Planning agents (contract §2.4, §7): `make_agent(name)` builds one by its replay name."""

from __future__ import annotations

from apportion.reservation.agents.aligned import LowCostAlignedAllocator, aligned_agent
from apportion.reservation.agents.common import ReservationAgent, TryMany
from apportion.reservation.agents.greedy import GreedyAgent, GreedyReferenceAgent
from apportion.reservation.agents.iterative import (
    GreedyStageAllocator,
    IterativePlanner,
    greedy_left,
    greedy_right,
)

AGENT_NAMES = ("greedy", "greedy-left", "greedy-right", "aligned-left", "aligned-right", "none")

#: the seed's agent walked one time step at a time; for tests and benchmarks, not a contract name
REFERENCE_AGENT = "greedy-reference"


def make_agent(name: str, smoothness: int = 10) -> ReservationAgent | None:
    """The agent called `name`; None for "none"; ValueError for an unknown name."""
    if name == "greedy":
        return GreedyAgent()
    if name == REFERENCE_AGENT:
        return GreedyReferenceAgent()
    if name == "greedy-left":
        return greedy_left()
    if name == "greedy-right":
        return greedy_right()
    if name == "aligned-left":
        return aligned_agent(True, smoothness)
    if name == "aligned-right":
        return aligned_agent(False, smoothness)
    if name == "none":
        return None
    raise ValueError(f"unknown agent {name!r} (expected one of {', '.join(AGENT_NAMES)})")


__all__ = [
    "AGENT_NAMES",
    "GreedyAgent",
    "GreedyReferenceAgent",
    "GreedyStageAllocator",
    "IterativePlanner",
    "LowCostAlignedAllocator",
    "REFERENCE_AGENT",
    "ReservationAgent",
    "TryMany",
    "make_agent",
]
