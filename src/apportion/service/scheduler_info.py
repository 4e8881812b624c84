"""`/ws/v1/cluster/scheduler`: Volcano's queue tree as YARN's CapacityScheduler info.

Each queue's numbers come from the last scheduling session's queue report (capacity or proportion
plugin), on memory as YARN's default resource calculator compares: `capacity` is the queue's
deserved share of its parent's (percent), `absoluteCapacity` of the cluster's; `maxCapacity` and
`absoluteMaxCapacity` come from its real capability; `usedCapacity` is allocated over deserved,
`absoluteUsedCapacity` allocated over the cluster. Reservation queues appear as children of their
reservable queue, as YARN's plan follower makes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apportion.resources import CPU, MEMORY
from apportion.service.reservations import MIB

if TYPE_CHECKING:
    from apportion.service.core import Service



def _mem(rep: dict[str, Any], key: str) -> float:
    return float((rep.get(key) or {}).get(MEMORY, 0.0))


def _pct(a: float, b: float) -> float:
    return round(100.0 * a / b, 4) if b > 0 else 0.0


def scheduler_info(svc: Service) -> dict[str, Any]:
    """The CapacityScheduler info of the current queue tree."""
    report, cluster, apps, parents = svc.queue_report()
    report = dict(report)
    total_mem = float(cluster.get(MEMORY))
    children: dict[str, list[str]] = {}
    for name, parent in parents.items():
        if name == "root":
            continue
        parent = parent or "root"
        children.setdefault(parent if parent in parents else "root", []).append(name)
        report.setdefault(name, {})

    def deserved(name: str) -> float:
        if name == "root":
            return total_mem
        rep = report.get(name, {})
        d = _mem(rep, "deserved")
        return d if d > 0 else _mem(rep, "guarantee")

    def node(name: str, parent: str) -> dict[str, Any]:
        rep = report.get(name, {})
        d = deserved(name)
        alloc = _mem(rep, "allocated")
        cap = _mem(rep, "realCapability") or _mem(rep, "capability") or total_mem
        parent_cap = total_mem if parent == "root" else (_mem(report.get(parent, {}), "realCapability") or total_mem)
        kids = sorted(children.get(name, []))
        used = rep.get("allocated") or {}
        out: dict[str, Any] = {
            "type": "capacitySchedulerLeafQueueInfo" if not kids else "capacitySchedulerQueueInfo",
            "queueName": name, "queuePath": f"root.{name}", "state": "RUNNING" if rep.get("state", "Open") == "Open"
            else "STOPPED",
            "capacity": _pct(d, deserved(parent)), "usedCapacity": _pct(alloc, d),
            "maxCapacity": min(100.0, _pct(cap, parent_cap)), "absoluteCapacity": _pct(d, total_mem),
            "absoluteMaxCapacity": min(100.0, _pct(cap, total_mem)), "absoluteUsedCapacity": _pct(alloc, total_mem),
            "numApplications": apps.get(name, 0),
            "resourcesUsed": {"memory": int(float(used.get(MEMORY, 0)) // MIB), "vCores": int(float(used.get(CPU, 0)))},
        }
        if kids:
            out["queues"] = {"queue": [node(k, name) for k in kids]}
        return out

    root_alloc = sum(_mem(report.get(n, {}), "allocated") for n in children.get("root", []))
    return {"scheduler": {"schedulerInfo": {
        "type": "capacityScheduler", "queueName": "root", "capacity": 100.0, "maxCapacity": 100.0,
        "usedCapacity": _pct(root_alloc, total_mem),
        "queues": {"queue": [node(n, "root") for n in sorted(children.get("root", []))]},
    }}}
