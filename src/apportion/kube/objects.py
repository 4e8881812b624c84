"""Cluster-level objects, each into its record: PriorityClasses, the scheduler ConfigMap (kept as raw
text), Nodes (with taints), Queues and PodGroups, per `shared/spec/snapshot-format.md`."""

from __future__ import annotations

from typing import Any

from apportion.cluster.model import PodGroupPhase, QueueInfo, Taint
from apportion.cluster.snapshot import DEFAULT_QUEUE
from apportion.errors import QuantityError, shown
from apportion.kube.conf import configmap_conf
from apportion.kube.fields import INT32_MAX, Fields, check_name, plain_strs
from apportion.kube.records import ConfMapSpec, NodeSpec, PodGroupSpec, PriorityClassSpec
from apportion.resources import CPU, MEMORY, Resource

_PHASES = {p.value: p for p in PodGroupPhase}

#: True: a Node or PodGroup whose fields read here are plain (mappings as dicts, strings as str, numbers
#: as int, nothing that needs a conversion or would be refused) is read from its dicts at once
#: (`plain_node`, `plain_podgroup`); False: every object is read through its field view (the reference
#: the tests compare with, and the path of every object the plain read declines)
PLAIN_READ = True


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
    if PLAIN_READ and type(o.data) is dict and not o.prefix:
        node = plain_node(o.data)
        if node is not None:
            return node
    return parse_node_reference(o)


def _plain_resources(raw: Any) -> Resource | None:
    """`Fields.resource` of a resource list that parses (None for anything it would refuse: the
    reference then reports it)."""
    if type(raw) is not dict:
        return None
    try:
        return Resource.from_resource_list(raw)
    except QuantityError:
        return None


def _plain_parts(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None,
                                                 dict[str, Any] | None, str] | None:
    """An object's metadata, spec, status and name when the three are objects (or absent) and the name
    a non-empty string; None for any other (the field view then reads it and says what is wrong)."""
    meta, spec, status = data.get("metadata"), data.get("spec"), data.get("status")
    if type(meta) is not dict or (spec is not None and type(spec) is not dict) or (
            status is not None and type(status) is not dict):
        return None
    name = meta.get("name")
    if type(name) is not str or not name:
        return None
    return meta, spec, status, name


def plain_node(data: dict[str, Any]) -> NodeSpec | None:
    """What `parse_node_reference` gives a Node whose fields are plain, with no taints; None for any
    other (the reference reads it, and reports what is wrong). A dump's Nodes are plain: this read skips
    a field view and a path walk per field."""
    parts = _plain_parts(data)
    if parts is None:
        return None
    meta, spec, status, name = parts
    raw = None if status is None else status.get("allocatable")
    alloc = Resource() if raw is None else _plain_resources(raw)
    if alloc is None:
        return None
    labels = plain_strs(meta.get("labels"))
    if labels is None:
        return None
    unsched = False
    if spec is not None:
        taints = spec.get("taints")
        if taints is not None and (type(taints) is not list or taints):
            return None
        unsched = spec.get("unschedulable", False)
        if unsched is None:
            unsched = False
        elif type(unsched) is not bool:
            return None
    labels.setdefault("kubernetes.io/hostname", name)
    return NodeSpec(name=name, allocatable=alloc, labels=labels, taints=(), unschedulable=unsched)


def parse_node_reference(o: Fields) -> NodeSpec:
    """`parse_node` through the field view: the reference the plain read is tested against."""
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
    if PLAIN_READ and type(o.data) is dict and not o.prefix:
        pg = plain_podgroup(o.data)
        if pg is not None:
            return pg
    return parse_podgroup_reference(o)


def _plain_str(d: dict[str, Any] | None, key: str, default: str) -> str | None:
    """`Fields.str_(key, default) or default` of a plain string or a missing one; None for anything
    else."""
    v = None if d is None else d.get(key)
    if v is None:
        return default
    if type(v) is not str:
        return None
    return v or default


def plain_podgroup(data: dict[str, Any]) -> PodGroupSpec | None:
    """What `parse_podgroup_reference` gives a PodGroup whose fields are plain, without minTaskMember;
    None for any other (the reference reads it, and reports what is wrong)."""
    parts = _plain_parts(data)
    if parts is None:
        return None
    meta, spec, status, name = parts
    ns = _plain_str(meta, "namespace", "default")
    creation = _plain_str(meta, "creationTimestamp", "")
    annotations = plain_strs(meta.get("annotations"))
    phase_s = _plain_str(status, "phase", "Pending")
    if ns is None or creation is None or annotations is None or phase_s not in _PHASES:
        return None
    min_member, min_resources = 1, None
    queue, pc_name = DEFAULT_QUEUE, ""
    if spec is not None:
        mm = spec.get("minMember")
        if mm is not None:
            if type(mm) is not int or not 0 <= mm <= INT32_MAX:
                return None
            min_member = mm
        mtm = spec.get("minTaskMember")
        if mtm is not None and (type(mtm) is not dict or mtm):
            return None
        raw = spec.get("minResources")
        if raw is not None and (min_resources := _plain_resources(raw)) is None:
            return None
        q, pc = _plain_str(spec, "queue", DEFAULT_QUEUE), _plain_str(spec, "priorityClassName", "")
        if q is None or pc is None:
            return None
        queue, pc_name = q, pc
    return PodGroupSpec(uid=f"{ns}/{name}", name=name, namespace=ns, queue=queue, min_available=min_member,
                        min_task_member={}, min_resources=min_resources, priority_class_name=pc_name,
                        phase=_PHASES[phase_s], creation=creation, annotations=annotations)


def parse_podgroup_reference(o: Fields) -> PodGroupSpec:
    """`parse_podgroup` through the field view: the reference the plain read is tested against."""
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
