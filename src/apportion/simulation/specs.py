"""What a workload is made of, as the loaders produce it: jobs, synthetic generators and traces.

The scenario loader (`scenario.py`), the generators (`workload.py`) and the trace loaders (`traces/`)
all build these, so they live apart from the scenario file's loader, which calls the other two.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apportion.resources import Resource


@dataclass
class JobSpec:
    """One job of the workload: `tasks` identical tasks of `resources` each, running `duration` s."""

    name: str
    queue: str
    arrival: float
    duration: float
    tasks: int
    min_member: int
    resources: Resource
    priority_class: str = ""
    preemptable: bool = True
    reservation: str = ""
    user: str = ""
    source: str = ""

    @property
    def gang(self) -> bool:
        """Whether the job is a gang (needs more than one task at once)."""
        return self.min_member > 1


@dataclass
class GeneratorSpec:
    """A synthetic generator; expanded into JobSpecs by `workload.expand` with the run's seed."""

    name: str
    queues: dict[str, float]
    count: int
    start: float
    interarrival: Any
    duration: Any
    tasks: Any
    gang: bool
    resources: Resource
    priority_class: str
    preemptable: bool
    where: str


@dataclass
class TraceSpec:
    """A trace to replay, with its mapping options (see simulation/traces/)."""

    type: str
    path: Path
    options: dict[str, Any]
    where: str
