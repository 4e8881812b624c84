"""Cluster-level objects, each into its record: PriorityClasses, the scheduler ConfigMap (kept as raw
text), Nodes (with taints), Queues and PodGroups, per `shared/spec/snapshot-format.md`."""

from __future__ import annotations

from apportion.cluster.model import PodGroupPhase, QueueInfo, Taint
from apportion.cluster.snapshot import DEFAULT_QUEUE
from apportion.errors import shown
from apportion.kube.conf import configmap_conf
from apportion.kube.fields import Fields, check_name
from apportion.kube.records import ConfMapSpec, NodeSpec, PodGroupSpec, PriorityClassSpec
from apportion.resources import CPU, MEMORY, Resource

_PHASES = {p.value: p for p in PodGroupPhase}


def parse_priority_class(o: Fields) -> PriorityClassSpec:
    """A PriorityClass object."""
    return PriorityClassSpec(name=check_name(o), value=o.int_("value", 0),
                             global_default=o.bool_("globalDefault", False))


def parse_conf_map(o: Fields) -> ConfMapSpec:
    """A ConfigMap: only its `volcano-scheduler.conf` is read, as text."""
    return ConfMapSpec(configmap_conf(o))


def _taints(o: Fields) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(o.list_("spec.taints")):
        to = Fields(t, o.where)
        if not isinstance(t, dict):
            raise o.fail(f"spec.taints[{i}]", "expected a mapping")
        effect = to.str_("effect", "NoSchedule")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise o.fail(f"spec.taints[{i}].effect", f"unknown taint effect {shown(effect)}")
        out.append(Taint(key=to.str_("key", required=True), value=to.str_("value", ""), effect=effect))
    return tuple(out)


def parse_node(o: Fields) -> NodeSpec:
    """A Node object."""
    name = check_name(o)
    alloc = o.resource("status.allocatable") or Resource()
    labels = o.str_map("metadata.labels")
    taints = _taints(o)
    unsched = o.bool_("spec.unschedulable", False)
    labels.setdefault("kubernetes.io/hostname", name)
    return NodeSpec(name=name, allocatable=alloc, labels=labels, taints=taints, unschedulable=unsched)


def parse_queue(o: Fields) -> QueueInfo:
    """A Volcano Queue. The QueueInfo is shared by every snapshot made from it: sessions only read it."""
    name = check_name(o)
    weight = o.int_("spec.weight", 1)
    if weight < 0:
        raise o.fail("spec.weight", f"must not be negative, got {weight}")
    cap_raw = o.map_("spec.capability")
    return QueueInfo(
        name=name,
        weight=weight,
        capability=o.resource("spec.capability") or Resource(),
        deserved=o.resource("spec.deserved") or Resource(),
        guarantee=o.resource("spec.guarantee.resource") or Resource(),
        capability_set=bool(cap_raw),
        deserved_set=bool(o.map_("spec.deserved")),
        parent=o.str_("spec.parent", ""),
        reclaimable=o.bool_("spec.reclaimable", True),
        priority=o.int_("spec.priority", 0),
        state=o.str_("status.state", "Open") or "Open",
        creation=o.str_("metadata.creationTimestamp", ""),
        annotations=o.str_map("metadata.annotations"),
        capability_names=frozenset(k for k in cap_raw if k in (CPU, MEMORY)),
    )


def parse_podgroup(o: Fields) -> PodGroupSpec:
    """A PodGroup (its pods join the job at assembly)."""
    name = check_name(o)
    ns = o.str_("metadata.namespace", "default") or "default"
    min_member = o.int_("spec.minMember", 1)
    if min_member < 0:
        raise o.fail("spec.minMember", f"must not be negative, got {min_member}")
    mtm: dict[str, int] = {}
    for role, v in o.map_("spec.minTaskMember").items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise o.fail(f"spec.minTaskMember.{role}", f"expected a non-negative integer, got {shown(v)}")
        mtm[str(role)] = o.int32(f"spec.minTaskMember.{role}", v)
    phase_s = o.str_("status.phase", "Pending") or "Pending"
    if phase_s not in _PHASES:
        raise o.fail("status.phase", f"unknown PodGroup phase {shown(phase_s)} (one of {', '.join(_PHASES)})")
    return PodGroupSpec(
        uid=f"{ns}/{name}",
        name=name,
        namespace=ns,
        queue=o.str_("spec.queue", DEFAULT_QUEUE) or DEFAULT_QUEUE,
        min_available=min_member,
        min_task_member=mtm,
        min_resources=o.resource("spec.minResources"),
        priority_class_name=o.str_("spec.priorityClassName", ""),
        phase=_PHASES[phase_s],
        creation=o.str_("metadata.creationTimestamp", ""),
        annotations=o.str_map("metadata.annotations"),
    )
