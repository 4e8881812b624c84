"""Writing Kubernetes objects: the quantities of a Resource as a resource list, exact where the value
allows (what `Resource.from_resource_list` reads back to the same floats)."""

from __future__ import annotations

from apportion.cluster.model import NodeInfo, QueueInfo
from apportion.kube.records import NodeSpec
from apportion.resources import CPU, MEMORY, PODS, Resource


def resource_list(r: Resource, *, pods: bool = True, names: frozenset[str] | None = None) -> dict[str, str]:
    """cpu in millicores, memory in bytes (each only when non-zero, or when `names` lists it), every
    scalar present (pods unless `pods=False`), in natural units."""
    out: dict[str, str] = {}
    if r.cpu or (names is not None and CPU in names):
        out[CPU] = f"{r.cpu!r}m" if r.cpu != int(r.cpu) else f"{int(r.cpu)}m"
    if r.memory or (names is not None and MEMORY in names):
        out[MEMORY] = repr(r.memory) if r.memory != int(r.memory) else str(int(r.memory))
    for name, v in r.scalars.items():
        if name == PODS:
            if pods:
                out[name] = str(int(v)) if v == int(v) else repr(v)
            continue
        nat = v / 1000.0
        out[name] = str(int(nat)) if nat == int(nat) else repr(nat)
    return out


def queue_object(q: QueueInfo) -> dict[str, object]:
    """A Volcano Queue object for a QueueInfo (its JSON form; a record made in code may hold values a
    quantity cannot spell exactly, so producers send the QueueInfo with it)."""
    spec: dict[str, object] = {"weight": q.weight, "reclaimable": q.reclaimable, "priority": q.priority}
    if q.capability_set:
        spec["capability"] = resource_list(q.capability, names=q.capability_names)
    if q.deserved_set:
        spec["deserved"] = resource_list(q.deserved)
    if not q.guarantee.is_empty():
        spec["guarantee"] = {"resource": resource_list(q.guarantee)}
    if q.parent:
        spec["parent"] = q.parent
    meta: dict[str, object] = {"name": q.name}
    if q.creation:
        meta["creationTimestamp"] = q.creation
    if q.annotations:
        meta["annotations"] = dict(q.annotations)
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": meta, "spec": spec,
            "status": {"state": q.state}}


def node_object(n: NodeInfo) -> dict[str, object]:
    """A Node object for a NodeInfo (see queue_object on exactness: producers send the record too)."""
    spec: dict[str, object] = {}
    if n.taints:
        spec["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.taints]
    if n.unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name, "labels": dict(n.labels)},
            "spec": spec, "status": {"allocatable": resource_list(n.allocatable)}}


def node_spec(n: NodeInfo) -> NodeSpec:
    """The record a Node object for n parses into."""
    return NodeSpec(name=n.name, allocatable=n.allocatable, labels=n.labels, taints=n.taints,
                    unschedulable=n.unschedulable)
