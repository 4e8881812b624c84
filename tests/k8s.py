"""Builders for Kubernetes objects used by the engine tests (plain dicts, as kubectl prints them)."""

from __future__ import annotations

from typing import Any

from apportion.cluster.snapshot import Snapshot
from apportion.engine import CycleResult, open_session, run_cycle
from apportion.framework.conf import SchedulerConf, build_conf, parse_conf
from apportion.framework.session import Session
from apportion.kube import build_snapshot


def node(name: str, cpu: str | int = 8, memory: str = "16Gi", pods: int = 110, **extra: Any) -> dict:
    alloc: dict[str, Any] = {"cpu": str(cpu), "memory": memory, "pods": str(pods)}
    alloc.update(extra.pop("scalars", {}))
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": extra.pop("labels", {})},
                           "spec": {}, "status": {"allocatable": alloc}}
    if "taints" in extra:
        obj["spec"]["taints"] = extra.pop("taints")
    if extra.pop("unschedulable", False):
        obj["spec"]["unschedulable"] = True
    return obj


def queue(name: str, weight: int = 1, **spec: Any) -> dict:
    s: dict[str, Any] = {"weight": weight}
    for k in ("capability", "deserved", "parent", "reclaimable", "priority"):
        if k in spec:
            s[k] = spec[k]
    if "guarantee" in spec:
        s["guarantee"] = {"resource": spec["guarantee"]}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": s, "status": {"state": spec.get("state", "Open")}}


def podgroup(name: str, queue: str = "default", min_member: int = 1, phase: str = "Inqueue", ns: str = "ns",
             min_resources: dict | None = None, priority_class: str = "", created: str = "") -> dict:
    spec: dict[str, Any] = {"queue": queue, "minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta,
            "spec": spec, "status": {"phase": phase}}


def pod(name: str, group: str | None, cpu: str | int = 1, memory: str = "1Gi", node_name: str = "",
        phase: str | None = None, ns: str = "ns", priority: int | None = None, deleting: bool = False,
        annotations: dict | None = None, **extra: Any) -> dict:
    ann = dict(annotations or {})
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    requests: dict[str, Any] = {}
    if cpu not in (None, 0, "0"):
        requests["cpu"] = str(cpu)
    if memory:
        requests["memory"] = memory
    requests.update(extra.pop("scalars", {}))
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    spec.update(extra)
    meta: dict[str, Any] = {"name": name, "namespace": ns, "annotations": ann}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if phase is None:
        phase = "Running" if node_name else "Pending"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def priority_class(name: str, value: int, global_default: bool = False) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": global_default}


def snapshot(*objs: dict) -> Snapshot:
    return build_snapshot([(f"test: document {i}", o) for i, o in enumerate(objs)])


def conf(actions: str, *tiers: list[Any]) -> SchedulerConf:
    return build_conf(actions, [list(t) for t in tiers])


def cycle(objs: list[dict], cfg: SchedulerConf | str | None = None) -> CycleResult:
    if isinstance(cfg, str):
        cfg = parse_conf(cfg)
    return run_cycle(snapshot(*objs), cfg)


def session(objs: list[dict], cfg: SchedulerConf | None = None) -> Session:
    return open_session(snapshot(*objs), cfg)


def first_fit(free: list[int], size: int, cpu: int) -> list[int] | None:
    """Node indices for `size` pods of `cpu` each, first fit on the free cpu left (taken from `free`),
    or None (and `free` as it was) when they do not all fit: a running gang a real cluster could hold."""
    spots: list[int] = []
    for _ in range(size):
        at = next((i for i in range(len(free)) if free[i] >= cpu), None)
        if at is None:
            for i in spots:
                free[i] += cpu
            return None
        free[at] -= cpu
        spots.append(at)
    return spots
