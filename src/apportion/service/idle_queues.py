"""Queues a session keeps no attributes for, and what the service shows for them.

In flat mode Volcano's queue plugins (proportion, capacity) give attributes only to the queues with a
job in the session, so the queue report leaves the others out. Their metrics still record such a
queue: allocated (and request) 0, and capacity also its spec's deserved. The service does the same for
a queue with no job of the session, and only when one of those plugins runs: without one, or for a
queue that has jobs, an absent report says nothing about its numbers.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from apportion.cluster.model import QueueInfo
from apportion.framework.conf import SchedulerConf

#: the plugins that keep queue attributes (and report queues)
QUEUE_PLUGINS = ("proportion", "capacity")


def queue_plugin(conf: SchedulerConf) -> str | None:
    """The queue plugin the conf runs (the first of proportion and capacity it lists), None without one."""
    for name in conf.plugin_names():
        if name in QUEUE_PLUGINS:
            return name
    return None


def job_less(queues: Mapping[str, QueueInfo], busy: Collection[str], reported: Collection[str]) -> list[str]:
    """The queues that the report leaves out and under which no job runs or waits: `busy` names the
    queues holding jobs, and their ancestors (by `QueueInfo.parent`, root above a queue without one)
    are not job-less either, as a parent's numbers are its subtree's."""
    held: set[str] = set()
    for name in busy:
        seen: set[str] = set()
        while name and name not in held and name not in seen:
            held.add(name)
            seen.add(name)
            q = queues.get(name)
            name = (q.parent or "root") if q is not None and name != "root" else ""
    return [q for q in queues if q not in reported and q not in held]


def configured_numbers(spec: QueueInfo | None, plugin: str) -> dict[str, Any]:
    """A job-less queue's entry in the report's form (natural units): nothing allocated, its spec's
    guarantee and capability, and its spec's deserved under capacity (proportion ignores
    `spec.deserved` and computes deserved itself, which it does not for such a queue: unknown)."""
    if spec is None:
        return {}
    out: dict[str, Any] = {"allocated": {}, "state": spec.state}
    if plugin == "capacity" and spec.deserved_set:
        out["deserved"] = spec.deserved.to_natural()
    if spec.guarantee.names():
        out["guarantee"] = spec.guarantee.to_natural()
    if spec.capability_set:
        out["capability"] = spec.capability.to_natural()
    return out


__all__ = ["QUEUE_PLUGINS", "configured_numbers", "job_less", "queue_plugin"]
