"""Cluster-level objects into the model: PriorityClasses, the scheduler ConfigMap (kept as raw text),
Nodes (with taints), Queues and PodGroups, per `shared/spec/snapshot-format.md`."""

from __future__ import annotations

from apportion.cluster.model import JobInfo, NodeInfo, PodGroupPhase, QueueInfo, Taint
from apportion.cluster.snapshot import DEFAULT_QUEUE, ConfText, Snapshot
from apportion.errors import InputError
from apportion.kube.fields import Fields, check_name
from apportion.resources import CPU, MEMORY, Resource

CONF_KEY = "volcano-scheduler.conf"
_PHASES = {p.value: p for p in PodGroupPhase}


def priority_classes(snap: Snapshot, objs: list[Fields]) -> None:
    """PriorityClass values by name; the globalDefault one's value is kept under a private key."""
    defaults: list[str] = []
    for o in objs:
        name = check_name(o)
        if name in snap.priority_classes:
            raise o.fail("metadata.name", f"duplicate PriorityClass {name!r}")
        value = o.int_("value", 0)
        snap.priority_classes[name] = value
        if o.bool_("globalDefault", False):
            defaults.append(name)
            snap.priority_classes["\x00global"] = value
    if len(defaults) > 1:
        raise InputError(
            f"several PriorityClasses are globalDefault ({', '.join(defaults)}); Kubernetes allows one",
            where=objs[0].where,
        )


def conf_text(snap: Snapshot, objs: list[Fields]) -> None:
    """The `volcano-scheduler.conf` of the ConfigMaps, as text (several must agree)."""
    found: list[tuple[str, str]] = []
    for o in objs:
        data = o.map_("data")
        if CONF_KEY in data:
            text = data[CONF_KEY]
            if not isinstance(text, str):
                raise o.fail(f"data.{CONF_KEY}", "expected a string")
            found.append((o.where, text))
    if not found:
        return
    if len({t for _, t in found}) > 1:
        raise InputError(
            "several ConfigMaps carry different volcano-scheduler.conf; keep one", where=found[-1][0]
        )
    where, text = found[0]
    snap.conf_text = ConfText(text=text, where=f"{where}: data.{CONF_KEY}", warnings_at=len(snap.warnings))


def _taints(o: Fields) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(o.list_("spec.taints")):
        to = Fields(t, o.where)
        if not isinstance(t, dict):
            raise o.fail(f"spec.taints[{i}]", "expected a mapping")
        effect = to.str_("effect", "NoSchedule")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise o.fail(f"spec.taints[{i}].effect", f"unknown taint effect {effect!r}")
        out.append(Taint(key=to.str_("key", required=True), value=to.str_("value", ""), effect=effect))
    return tuple(out)


def nodes(snap: Snapshot, objs: list[Fields]) -> set[str]:
    """Nodes in name order (their index is their place in that order); returns the names."""
    specs = []
    seen: set[str] = set()
    for o in objs:
        name = check_name(o)
        if name in seen:
            raise o.fail("metadata.name", f"duplicate Node {name!r}")
        seen.add(name)
        alloc = o.resource("status.allocatable") or Resource()
        specs.append(
            (name, alloc, o.str_map("metadata.labels"), _taints(o), o.bool_("spec.unschedulable", False))
        )
    specs.sort(key=lambda s: s[0])
    for i, (name, alloc, labels, taints, unsched) in enumerate(specs):
        labels.setdefault("kubernetes.io/hostname", name)
        snap.nodes.append(NodeInfo(name=name, index=i, allocatable=alloc, labels=labels, taints=taints,
                                   unschedulable=unsched))
    return seen


def queues(snap: Snapshot, objs: list[Fields]) -> None:
    """Volcano Queues (and the `default` queue, which always exists)."""
    for o in objs:
        name = check_name(o)
        if name in snap.queues:
            raise o.fail("metadata.name", f"duplicate Queue {name!r}")
        weight = o.int_("spec.weight", 1)
        if weight < 0:
            raise o.fail("spec.weight", f"must not be negative, got {weight}")
        cap_raw = o.map_("spec.capability")
        q = QueueInfo(
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
        snap.queues[name] = q
    snap.ensure_queue(DEFAULT_QUEUE)


def podgroups(snap: Snapshot, objs: list[Fields], global_default: int | None) -> None:
    """PodGroups into jobs (their pods join them later, in `pods`)."""
    for o in objs:
        name = check_name(o)
        ns = o.str_("metadata.namespace", "default") or "default"
        uid = f"{ns}/{name}"
        if uid in snap.jobs:
            raise o.fail("metadata.name", f"duplicate PodGroup {uid!r}")
        min_member = o.int_("spec.minMember", 1)
        if min_member < 0:
            raise o.fail("spec.minMember", f"must not be negative, got {min_member}")
        mtm: dict[str, int] = {}
        for role, v in o.map_("spec.minTaskMember").items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise o.fail(f"spec.minTaskMember.{role}", f"expected a non-negative integer, got {v!r}")
            mtm[str(role)] = v
        phase_s = o.str_("status.phase", "Pending") or "Pending"
        if phase_s not in _PHASES:
            raise o.fail("status.phase", f"unknown PodGroup phase {phase_s!r} (one of {', '.join(_PHASES)})")
        pcn = o.str_("spec.priorityClassName", "")
        if pcn in snap.priority_classes:
            prio = snap.priority_classes[pcn]
        else:
            prio = global_default if global_default is not None else 0
        queue = o.str_("spec.queue", DEFAULT_QUEUE) or DEFAULT_QUEUE
        snap.jobs[uid] = JobInfo(
            uid=uid,
            name=name,
            namespace=ns,
            queue=queue,
            min_available=min_member,
            min_task_member=mtm,
            min_resources=o.resource("spec.minResources"),
            priority=prio,
            priority_class_name=pcn,
            phase=_PHASES[phase_s],
            creation=o.str_("metadata.creationTimestamp", ""),
            annotations=o.str_map("metadata.annotations"),
        )

