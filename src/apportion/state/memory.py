"""In-memory Binder, Evictor and StatusUpdater: each decision goes back into a SchedulerCache as a
MODIFIED event carrying the edited object, exactly as the API server would echo it to a watch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from apportion.state.cache import SchedulerCache
from apportion.state.decisions import Condition, QueueReport
from apportion.state.events import MODIFIED, WatchEvent


def _edit(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of obj with path set to value; only the mappings along the path are copied (the cache
    keeps the original, which nothing edits)."""
    out = dict(obj)
    cur = out
    for part in path[:-1]:
        nxt = cur.get(part)
        nxt = dict(nxt) if isinstance(nxt, dict) else {}
        cur[part] = nxt
        cur = nxt
    cur[path[-1]] = value
    return out


def pod_group_status(obj: dict[str, Any], phase: str, conditions: Sequence[Condition]) -> dict[str, Any] | None:
    """A PodGroup's status after a session: `phase`, and the session's conditions replacing the stored
    ones of the same type (the others kept); None when nothing would change (no write, no event). Every
    StatusUpdater that edits objects uses it (this cache's, the service's), so they merge alike."""
    status = dict(obj.get("status") or {})
    before = dict(status)
    status["phase"] = phase
    if conditions:
        types = {c.type for c in conditions}
        kept = [c for c in (status.get("conditions") or []) if c.get("type") not in types]
        status["conditions"] = kept + [c.to_json() for c in conditions]
    return status if status != before else None


class CacheBinder:
    """Binds by setting spec.nodeName. A bind fails when the pod or the node is gone, the pod is already
    bound elsewhere, or the node is in `fail_nodes` (a stand-in for an API server that refuses)."""

    def __init__(self, cache: SchedulerCache, *, source: str = "binder", fail_nodes: frozenset[str] = frozenset()) -> None:
        self.cache = cache
        self.source = source
        self.fail_nodes = fail_nodes

    def bind(self, binds: Sequence[tuple[str, str]]) -> dict[str, str]:
        """See Binder.bind."""
        errors: dict[str, str] = {}
        for key, node in binds:
            pod = self.cache.get("Pod", key)
            err = None
            if pod is None:
                err = f"pod {key} no longer exists"
            elif self.cache.get("Node", node) is None:
                err = f"node {node} no longer exists"
            elif node in self.fail_nodes:
                err = f"binding rejected by node {node}"
            else:
                bound = (pod.get("spec") or {}).get("nodeName")
                if bound and bound != node:
                    err = f"pod {key} is already bound to {bound}"
            if err is not None:
                errors[key] = err
                continue
            assert pod is not None
            self.cache.apply(WatchEvent(MODIFIED, _edit(pod, ("spec", "nodeName"), node), f"{self.source}: bind {key}"))
        # a failed pod stays as it was (pending); its error is kept until the pod changes
        self.cache.bind_errors.update(errors)
        return errors


class CacheEvictor:
    """Evicts by marking the pod as being deleted (its task becomes Releasing) with a DisruptionTarget
    condition carrying the reason, as the eviction API does; a later DELETED event removes it."""

    def __init__(self, cache: SchedulerCache, *, source: str = "evictor",
                 clock: Callable[[], str] = lambda: "1970-01-01T00:00:00Z") -> None:
        self.cache = cache
        self.source = source
        self.clock = clock
        #: (pod key, reason) for every eviction made, in order
        self.log: list[tuple[str, str]] = []

    def evict(self, pod: str, reason: str) -> str | None:
        """See Evictor.evict."""
        obj = self.cache.get("Pod", pod)
        if obj is None:
            return f"pod {pod} no longer exists"
        edited = _edit(obj, ("metadata", "deletionTimestamp"), self.clock())
        conds = [c for c in ((edited.get("status") or {}).get("conditions") or []) if c.get("type") != "DisruptionTarget"]
        conds.append({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                      "message": reason})
        edited = _edit(edited, ("status", "conditions"), conds)
        self.cache.apply(WatchEvent(MODIFIED, edited, f"{self.source}: evict {pod}"))
        self.log.append((pod, reason))
        return None


class CacheStatusUpdater:
    """Writes PodGroup phases and conditions, nominated nodes and Queue status into the cached objects;
    an object whose status would not change is left alone (no event)."""

    def __init__(self, cache: SchedulerCache, *, source: str = "status") -> None:
        self.cache = cache
        self.source = source

    def update_pod_group(self, key: str, phase: str, conditions: Sequence[Condition]) -> None:
        """See StatusUpdater.update_pod_group."""
        obj = self.cache.get("PodGroup", key)
        if obj is None:
            return  # a pod's own implicit group, or deleted meanwhile
        status = pod_group_status(obj, phase, conditions)
        if status is not None:
            self.cache.apply(WatchEvent(MODIFIED, _edit(obj, ("status",), status), f"{self.source}: podgroup {key}"))

    def nominate(self, pod: str, node: str) -> None:
        """See StatusUpdater.nominate."""
        obj = self.cache.get("Pod", pod)
        if obj is None or (obj.get("status") or {}).get("nominatedNodeName") == node:
            return
        self.cache.apply(WatchEvent(MODIFIED, _edit(obj, ("status", "nominatedNodeName"), node),
                                    f"{self.source}: nominate {pod}"))

    def update_queue(self, name: str, status: QueueReport) -> None:
        """See StatusUpdater.update_queue."""
        obj = self.cache.get("Queue", name)
        if obj is None:
            return  # default / root made up by the session
        merged = {**(obj.get("status") or {}), "allocated": status.allocated.to_natural()}
        if merged != obj.get("status"):
            self.cache.apply(WatchEvent(MODIFIED, _edit(obj, ("status",), merged), f"{self.source}: queue {name}"))
