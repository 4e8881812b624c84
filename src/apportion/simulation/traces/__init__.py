"""Trace loaders: real workloads mapped to jobs, queues and (optionally) a cluster.

Each loader documents its mapping in its module docstring and in docs/scenario.md.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from apportion.errors import InputError
from apportion.lean_dataclass import dataclass
from apportion.simulation.specs import JobSpec, TraceSpec

#: Where the shared traces live, relative to the repository root.
SHARED_TRACES = "../shared/traces"


@dataclass
class LoadedTrace:
    """What a trace contributes to a scenario."""

    jobs: list[JobSpec]
    #: Volcano Queue objects (dicts), one per tenant of the trace
    queues: list[dict[str, Any]] = field(default_factory=list)
    #: Node objects (dicts) when the trace options ask for a generated cluster
    nodes: list[dict[str, Any]] = field(default_factory=list)
    #: priority classes the mapping refers to
    priority_classes: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def load_trace(spec: TraceSpec) -> LoadedTrace:
    """Dispatch on the trace type."""
    if not spec.path.exists():
        raise InputError(f"trace folder {spec.path} does not exist", where=f"{spec.where}.path")
    if spec.type == "philly":
        from apportion.simulation.traces.philly import load_philly

        return load_philly(spec)
    if spec.type == "alibaba":
        from apportion.simulation.traces.alibaba import load_alibaba

        return load_alibaba(spec)
    raise InputError(f"unknown trace type {spec.type!r}", where=f"{spec.where}.type")


def queue_object(name: str, *, deserved: dict[str, Any] | None = None, weight: int = 1,
                 priority: int = 0, reclaimable: bool = True) -> dict[str, Any]:
    """A Volcano Queue object as a dict."""
    spec: dict[str, Any] = {"weight": max(1, weight), "reclaimable": reclaimable}
    if deserved:
        spec["deserved"] = deserved
    if priority:
        spec["priority"] = priority
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": spec, "status": {"state": "Open"}}


def node_objects(prefix: str, count: int, allocatable: dict[str, Any]) -> list[dict[str, Any]]:
    """`count` identical Node objects (dicts) named `prefix-00`, `prefix-01`, ... (110 pods unless given)."""
    width = max(2, len(str(count - 1)))
    alloc = {k: str(v) for k, v in allocatable.items()}
    alloc.setdefault("pods", "110")
    return [{"kind": "Node", "metadata": {"name": f"{prefix}-{i:0{width}d}"}, "status": {"allocatable": alloc}}
            for i in range(count)]
