"""`/ws/v1/cluster/scheduler`: Volcano's queue tree as YARN's CapacityScheduler info.

Each queue's numbers come from the last scheduling session's queue report (capacity or proportion
plugin), on memory as YARN's default resource calculator compares: `capacity` is the queue's
deserved share of its parent's (percent), `absoluteCapacity` of the cluster's; `maxCapacity` and
`absoluteMaxCapacity` come from its real capability; `usedCapacity` is allocated over deserved,
`absoluteUsedCapacity` allocated over the cluster. A queue the session did not report (no job in
it) shows its configuration instead, as YARN shows an idle queue's configured capacity: the larger of
its deserved and guarantee, and its capability. Reservation queues appear as children of their
reservable queue, as YARN's plan follower makes them, and `queuePath` is the full dotted path
(`root.dedicated.reservation_...`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apportion.resources import CPU, MEMORY
from apportion.service.reservations import MIB

if TYPE_CHECKING:
    from apportion.cluster.model import QueueInfo
    from apportion.service.core import Service



def _mem(rep: dict[str, Any], key: str) -> float:
    return float((rep.get(key) or {}).get(MEMORY, 0.0))


def _pct(a: float, b: float) -> float:
    return round(100.0 * a / b, 4) if b > 0 else 0.0


def _configured(spec: QueueInfo | None) -> dict[str, Any]:
    """The report entry of a queue the session did not report, from its spec: what it would be
    guaranteed and capped at, with nothing allocated."""
    if spec is None:
        return {}
    out: dict[str, Any] = {"state": spec.state}
    deserved = max(float(spec.deserved.get(MEMORY)), float(spec.guarantee.get(MEMORY)))
    if deserved > 0:
        out["deserved"] = {MEMORY: deserved}
    if spec.capability_set and float(spec.capability.get(MEMORY)) > 0:
        out["capability"] = {MEMORY: float(spec.capability.get(MEMORY))}
    return out


def scheduler_info(svc: Service) -> dict[str, Any]:
    """The CapacityScheduler info of the current queue tree."""
    report, cluster, apps, parents = svc.queue_report()
    specs = svc.queue_specs()
    report = dict(report)
    total_mem = float(cluster.get(MEMORY))
    children: dict[str, list[str]] = {}
    for name, parent in parents.items():
        if name == "root":
            continue
        parent = parent or "root"
        children.setdefault(parent if parent in parents else "root", []).append(name)
        if name not in report:
            report[name] = _configured(specs.get(name))

    def deserved(name: str) -> float:
        if name == "root":
            return total_mem
        rep = report.get(name, {})
        d = _mem(rep, "deserved")
        return d if d > 0 else _mem(rep, "guarantee")

    def cap_of(name: str) -> float:
        if name == "root":
            return total_mem
        rep = report.get(name, {})
        return _mem(rep, "realCapability") or _mem(rep, "capability") or total_mem

    def node(name: str, parent: str, parent_path: str) -> dict[str, Any]:
        rep = report.get(name, {})
        d = deserved(name)
        alloc = _mem(rep, "allocated")
        cap = cap_of(name)
        parent_cap = cap_of(parent)
        kids = sorted(children.get(name, []))
        used = rep.get("allocated") or {}
        out: dict[str, Any] = {
            "type": "capacitySchedulerLeafQueueInfo" if not kids else "capacitySchedulerQueueInfo",
            "queueName": name, "queuePath": f"{parent_path}.{name}", "state": "RUNNING" if rep.get("state", "Open") == "Open"
            else "STOPPED",
            "capacity": _pct(d, deserved(parent)), "usedCapacity": _pct(alloc, d),
            "maxCapacity": min(100.0, _pct(cap, parent_cap)), "absoluteCapacity": _pct(d, total_mem),
            "absoluteMaxCapacity": min(100.0, _pct(cap, total_mem)), "absoluteUsedCapacity": _pct(alloc, total_mem),
            "numApplications": apps.get(name, 0),
            "resourcesUsed": {"memory": int(float(used.get(MEMORY, 0)) // MIB), "vCores": int(float(used.get(CPU, 0)))},
        }
        if kids:
            out["queues"] = {"queue": [node(k, name, f"{parent_path}.{name}") for k in kids]}
        return out

    root_alloc = sum(_mem(report.get(n, {}), "allocated") for n in children.get("root", []))
    return {"scheduler": {"schedulerInfo": {
        "type": "capacityScheduler", "queueName": "root", "capacity": 100.0, "maxCapacity": 100.0,
        "usedCapacity": _pct(root_alloc, total_mem),
        "queues": {"queue": [node(n, "root", "root") for n in sorted(children.get("root", []))]},
    }}}
