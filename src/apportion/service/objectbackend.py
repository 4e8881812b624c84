"""The Binder, Evictor and StatusUpdater of a service without a real backend (`ObjectBackend`): a
session's decisions edit copies of the stored objects, which the scheduling loop (loop.py) then
commits and sends to the cache; and the completion of pods whose `apportion.io/duration` elapsed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from datetime import UTC, datetime
from typing import Any

from apportion.errors import ApportionError
from apportion.lean_dataclass import dataclass
from apportion.quantity import parse_quantity_decimal
from apportion.service.objects import ObjectKey
from apportion.state.decisions import Condition, QueueReport
from apportion.state.memory import pod_group_status

DURATION_KEY = "apportion.io/duration"
STARTED_KEY = "apportion.io/started-at"


def start_time(now_ms: int) -> str:
    """A pod's `status.startTime`: RFC 3339 in UTC, whole seconds, as Kubernetes writes it."""
    return datetime.fromtimestamp(now_ms // 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def editable(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of a stored object whose `spec`, `status`, `metadata` and `metadata.annotations` are its own
    (the levels a Binder, Evictor or StatusUpdater edits; deeper values stay shared and are never edited
    in place). A deep copy of each pod bound or completed was a tenth of a tick at 10,000 pods."""
    out = dict(obj)
    for part in ("spec", "status"):
        out[part] = dict(obj.get(part) or {})
    meta = out["metadata"] = dict(obj.get("metadata") or {})
    meta["annotations"] = dict(meta.get("annotations") or {})
    return out


@dataclass
class ObjectBackend:
    """Binder, Evictor and StatusUpdater (state.decisions) of a service without a real backend: they
    edit copies of the stored objects, which the tick then commits and sends to the cache."""

    objects: dict[ObjectKey, dict[str, Any]]
    now_ms: int
    changed: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)
    evictions: list[tuple[str, str]] = field(default_factory=list)
    #: each running pod's end (ms; None: it has no duration), kept across ticks while the stored pod is
    #: the same object: reading 10,000 pods' annotations every tick was a tenth of it
    ends: dict[ObjectKey, tuple[dict[str, Any], float | None]] = field(default_factory=dict)

    def _edit(self, key: ObjectKey) -> dict[str, Any] | None:
        if key in self.changed:
            return self.changed[key]
        obj = self.objects.get(key)
        if obj is None:
            return None
        self.changed[key] = editable(obj)
        return self.changed[key]

    @staticmethod
    def _pod_key(pod: str) -> ObjectKey:
        ns, _, name = pod.partition("/")
        return ("Pod", ns, name)

    def bind(self, binds: Sequence[tuple[str, str]]) -> dict[str, str]:
        """Binder: each pod is on its node and Running from now; a pod or node that is gone fails."""
        errors: dict[str, str] = {}
        for pod, node in binds:
            key = self._pod_key(pod)
            obj = self._edit(key) if ("Node", "", node) in self.objects else None
            if obj is None:
                errors[pod] = f"pod {pod} or node {node} no longer exists"
                continue
            obj.setdefault("spec", {})["nodeName"] = node
            status = obj.setdefault("status", {})
            status["phase"] = "Running"
            # as the kubelet records it: what reclaim's minRuntime guard and a forecast's runtimes
            # count from (`apportion.io/started-at` keeps the milliseconds the completion needs)
            status["startTime"] = start_time(self.now_ms)
            obj.setdefault("metadata", {}).setdefault("annotations", {})[STARTED_KEY] = str(self.now_ms)
        return errors

    def evict(self, pod: str, reason: str) -> str | None:
        """Evictor: the pod goes back to Pending, off its node (nothing else would recreate it)."""
        obj = self._edit(self._pod_key(pod))
        if obj is None:
            return f"pod {pod} no longer exists"
        obj.get("spec", {}).pop("nodeName", None)
        status = obj.setdefault("status", {})
        status["phase"] = "Pending"
        status.pop("startTime", None)
        obj.get("metadata", {}).get("annotations", {}).pop(STARTED_KEY, None)
        self.evictions.append((pod, reason))
        return None

    def update_pod_group(self, key: str, phase: str, conditions: Sequence[Condition]) -> None:
        """StatusUpdater: the podgroup's phase and the conditions this session wrote."""
        ns, _, name = key.partition("/")
        okey: ObjectKey = ("PodGroup", ns, name)
        cur = self.objects.get(okey)
        if cur is None:
            return
        status = pod_group_status(cur, phase, conditions)
        if status is not None:
            obj = self._edit(okey)
            if obj is not None:
                obj["status"] = status

    def nominate(self, pod: str, node: str) -> None:
        """StatusUpdater: a pipelined pod's nominated node is not stored (the next session decides again)."""

    def update_queue(self, name: str, status: QueueReport) -> None:
        """StatusUpdater: queue status is served by /ws/v1/cluster/scheduler and /metrics, not stored
        (it would be a database write per queue per period)."""

    def complete_elapsed(self) -> None:
        """Running pods whose duration elapsed succeed."""
        ends = self.ends
        for key, obj in self.objects.items():
            if key[0] != "Pod":
                continue
            known = ends.get(key)
            if known is None or known[0] is not obj:
                known = ends[key] = (obj, _end_ms(obj))
            if known[1] is not None and known[1] <= self.now_ms:
                edited = self._edit(key)
                if edited is not None:
                    edited["status"]["phase"] = "Succeeded"
        for key in [k for k in ends if k not in self.objects]:
            del ends[key]


def _end_ms(obj: dict[str, Any]) -> float | None:
    """When a running pod with `apportion.io/duration` completes (ms), else None."""
    if (obj.get("status") or {}).get("phase") != "Running":
        return None
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    if DURATION_KEY not in ann or STARTED_KEY not in ann:
        return None
    try:
        return int(ann[STARTED_KEY]) + float(parse_quantity_decimal(str(ann[DURATION_KEY]).rstrip("s"))) * 1000
    except (ApportionError, ValueError):
        return None
