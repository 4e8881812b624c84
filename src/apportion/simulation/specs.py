"""What a scenario is made of, as the loaders produce it: the workload (jobs, synthetic generators,
traces), the reservation plans and submissions, node events, run settings, and the Scenario itself.

The scenario loader (`scenario.py`), the generators (`workload.py`) and the trace loaders (`traces/`)
all build these, so they live apart from the scenario file's loader, which calls the other two. The
fields follow docs/scenario.md.
"""

from __future__ import annotations

import copy
from dataclasses import field
from typing import TYPE_CHECKING, Any

from apportion.cluster.model import NodeInfo, QueueInfo
from apportion.framework.conf import SchedulerConf
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource

if TYPE_CHECKING:  # (annotations only)
    from pathlib import Path


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


@dataclass
class PlanSpec:
    """Settings of the plan owned by a reservable queue."""

    policy: str = "CapacityOverTime"
    instantaneous: float = 1.0
    average: float = 1.0
    window: float = 86400.0
    step: float | None = None
    move_on_expiry: bool = True
    overuse: bool = True
    replanner: bool = True
    enforcement_window: float = 3600.0
    #: the planning agent (apportion.reservation.agents), YARN trunk's default
    agent: str = "aligned-left"
    #: YARN's resource calculator: "dominant" compares every resource type (GPUs included)
    calculator: str = "dominant"


@dataclass
class StageSpec:
    """One stage of a reservation request: `num_containers` of `resources` for `duration` seconds,
    in gangs of `concurrency` containers placed together (None: all of them, one gang)."""

    resources: Resource
    num_containers: int
    duration: float
    concurrency: int | None = None


@dataclass
class ReservationSpec:
    """A reservation submission (YARN's reservation-definition, in Volcano resources)."""

    name: str
    queue: str
    user: str
    submit_at: float
    arrival: float
    deadline: float
    interpreter: str
    gang: bool
    stages: list[StageSpec]


@dataclass
class NodeEvent:
    """A change of the cluster at `at`: nodes that fail, recover, or join (`type` names which)."""

    at: float
    type: str
    nodes: list[str] = field(default_factory=list)
    new_nodes: list[NodeInfo] = field(default_factory=list)
    #: the Node objects of `new_nodes`, as (location, object): what the simulator feeds its cache
    new_node_objects: list[tuple[str, Any]] = field(default_factory=list)


@dataclass
class RunSpec:
    """The run settings: horizon, session period, seed, eviction grace, sampling, and whether to drain."""

    horizon: float | None = None
    period: float = 1.0
    seed: int = 0
    eviction_grace: float = 0.0
    sample_every: float | None = None
    drain: bool = True


@dataclass
class Scenario:
    """A loaded, validated scenario. Node and queue objects are templates: the simulator copies them."""

    name: str
    source: str
    base: Path
    nodes: list[NodeInfo]
    queues: dict[str, QueueInfo]
    priority_classes: dict[str, int]
    conf: SchedulerConf
    conf_text: str
    jobs: list[JobSpec]
    generators: list[GeneratorSpec]
    traces: list[TraceSpec]
    plans: dict[str, PlanSpec]
    reservations: list[ReservationSpec]
    node_events: list[NodeEvent]
    run: RunSpec
    warnings: list[str] = field(default_factory=list)
    #: the Node, Queue and PriorityClass objects the cluster was read from, as (location, object): what
    #: the simulator feeds its cache
    objects: list[tuple[str, Any]] = field(default_factory=list)

    def reservable(self, queue: str) -> bool:
        """Whether the queue owns a reservation plan."""
        return queue in self.plans

    def clone(self) -> Scenario:
        """A deep copy, for a run that must not change this one's templates."""
        return copy.deepcopy(self)
