"""Records: each Kubernetes object parsed on its own, before it joins a Snapshot.

A Snapshot is assembled from records (`kube.build.assemble`). `build_snapshot` parses a whole dump and
assembles it once; the cache (`apportion.state`) keeps records between sessions and re-parses only the
object an event changes.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from apportion.cluster.model import PodGroupPhase, QueueInfo, Taint, TaskInfo
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource


@dataclass(slots=True)
class PriorityClassSpec:
    """A PriorityClass: its value and whether it is the cluster's global default."""

    name: str
    value: int
    global_default: bool


@dataclass(slots=True)
class ConfMapSpec:
    """A ConfigMap: the scheduler conf text it carries (None when it carries none)."""

    text: str | None


@dataclass(slots=True)
class NodeSpec:
    """A Node as read; NodeInfo objects (with their per-session task maps) are made from it."""

    name: str
    allocatable: Resource
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool


@dataclass(slots=True)
class PodGroupSpec:
    """A PodGroup as read; the priority is resolved against the PriorityClasses at assembly."""

    uid: str
    name: str
    namespace: str
    queue: str
    min_available: int
    min_task_member: dict[str, int]
    min_resources: Resource | None
    priority_class_name: str
    phase: PodGroupPhase
    creation: str
    annotations: dict[str, str]


@dataclass(slots=True)
class PodSpec:
    """A Pod as read: the task (a template, copied into each snapshot that may change it) and how it
    joins a job."""

    key: str
    task: TaskInfo
    scheduler: str
    #: the scheduling.k8s.io/group-name annotation ("" when the pod names no PodGroup)
    group: str


#: kind -> whether its objects are namespaced (keyed namespace/name) or cluster-scoped (keyed name)
NAMESPACED = {"Node": False, "Queue": False, "PriorityClass": False, "PodGroup": True, "Pod": True,
              "ConfigMap": True}


@dataclass
class Records:
    """Parsed objects by kind, each keyed as Kubernetes keys it, as (location, record), in arrival order."""

    priority_classes: dict[str, tuple[str, PriorityClassSpec]] = field(default_factory=dict)
    configmaps: dict[str, tuple[str, ConfMapSpec]] = field(default_factory=dict)
    nodes: dict[str, tuple[str, NodeSpec]] = field(default_factory=dict)
    queues: dict[str, tuple[str, QueueInfo]] = field(default_factory=dict)
    podgroups: dict[str, tuple[str, PodGroupSpec]] = field(default_factory=dict)
    pods: dict[str, tuple[str, PodSpec]] = field(default_factory=dict)
    #: warnings about the objects read (kinds apportion does not read)
    warnings: list[str] = field(default_factory=list)

    def table(self, kind: str) -> dict[str, tuple[str, Any]]:
        """The records of one kind."""
        return {  # type: ignore[return-value]
            "PriorityClass": self.priority_classes, "ConfigMap": self.configmaps, "Node": self.nodes,
            "Queue": self.queues, "PodGroup": self.podgroups, "Pod": self.pods,
        }[kind]
