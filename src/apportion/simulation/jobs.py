"""The simulated workload's state: jobs (podgroups) and their tasks across attempts, and the event kinds.

The simulator (simulation/engine.py) owns these; the cache sees them only as Pods and PodGroups
(simulation/feed.py), and the metrics read them (simulation/metrics.py). A task's state is the model's
`TaskStatus`.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskStatus
from apportion.lean_dataclass import dataclass
from apportion.resources import GPU, Resource
from apportion.simulation.scenario import JobSpec

NAMESPACE = "sim"

# event kinds, in the order they are applied at the same instant: resources are freed before new
# demand arrives, and the cluster changes before either
EV_NODE = 0
EV_RELEASE = 1
EV_FINISH = 2
EV_RESERVATION = 3
EV_WAKE = 4
EV_ARRIVAL = 5


@dataclass
class SimTask:
    """One task (pod) of a job, across its attempts."""

    index: int
    name: str
    #: Pending, Running, Releasing (evicted, within the eviction grace) or Succeeded (over: done, or
    #: killed with its job); the Pod the cache is told has the same phase (Releasing: Running, deleted)
    status: TaskStatus = TaskStatus.PENDING
    node: str = ""
    start: float = 0.0
    attempt: int = 0


@dataclass
class SimJob:
    """A job (podgroup) and what happened to it."""

    spec: JobSpec
    uid: str
    queue: str
    creation: str
    priority: int
    resreq: Resource
    min_resources: Resource
    tasks: list[SimTask] = field(default_factory=list)
    phase: PodGroupPhase = PodGroupPhase.PENDING
    state: str = "waiting"  # waiting | active | held | done | rejected | killed
    reservation_id: str = ""
    first_start: float | None = None
    last_start: float | None = None
    finish: float | None = None
    evictions: int = 0
    lost_gpu_seconds: float = 0.0
    lost_cpu_seconds: float = 0.0
    message: str = ""
    done_tasks: int = 0
    #: free for a Simulator subclass that builds its own JobInfo (`SessionObjects.job_info`, simulation/start.py) to keep one
    info: JobInfo | None = field(default=None, repr=False, compare=False)
    info_of: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    #: bumped by every task status change (Simulator._set_status); a task's node changes only with it
    changes: int = 0

    @property
    def gpus_per_task(self) -> float:
        """GPUs each task asks for."""
        return self.resreq.get(GPU) / 1000.0
