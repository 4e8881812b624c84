"""The cluster objects the service holds (Nodes, Queues, PodGroups, Pods, PriorityClasses, the
scheduler ConfigMap), as kubectl JSON, validated together exactly as `apportion cycle` reads them.

An edit is checked by building a session snapshot from the whole set as it would be after the edit:
any error names the object and field (InputError), and then nothing changes. `as_list` exports the set
as a kubectl `List` that `apportion cycle` reads back.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import Snapshot
from apportion.engine import snapshot_conf
from apportion.errors import InputError
from apportion.kube.build import build_snapshot
from apportion.resources import Resource
from apportion.service.reservations import PLAN_KEY, RESERVABLE_KEY, PlanSettings, parse_plan_settings
from apportion.service.validate import Parsed, check_edit, is_reservable, key_where

ObjectKey = tuple[str, str, str]

#: kinds the service stores; cluster-scoped ones have the namespace ""
KINDS = {"Node": False, "Queue": False, "PriorityClass": False, "PodGroup": True, "Pod": True, "ConfigMap": True}
#: `get`/`delete` names for the kinds
PLURALS = {"nodes": "Node", "queues": "Queue", "priorityclasses": "PriorityClass", "jobs": "PodGroup",
           "podgroups": "PodGroup", "pods": "Pod", "configmaps": "ConfigMap"}


class ObjectNotFound(InputError):
    """A delete of an object that is not stored (answered 404)."""


def object_key(obj: Any, where: str) -> ObjectKey:
    """(kind, namespace, name) of a kubectl object; InputError naming what is wrong."""
    if not isinstance(obj, dict):
        raise InputError(f"expected a Kubernetes object (a mapping), got {type(obj).__name__}", where=where)
    kind = obj.get("kind")
    if kind not in KINDS:
        raise InputError(f"kind {kind!r} is not stored by apportion (one of {', '.join(KINDS)})", where=f"{where}: kind")
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise InputError("required field is missing", where=f"{where}: metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("required field is missing or not a string", where=f"{where}: metadata.name")
    ns = ""
    if KINDS[kind]:
        ns_v = meta.get("namespace") or "default"
        if not isinstance(ns_v, str):
            raise InputError("expected a string", where=f"{where}: metadata.namespace")
        ns = ns_v
    return (kind, ns, name)


class ClusterObjects:
    """The stored objects, by key, and the checks every edit passes."""

    def __init__(self, objects: dict[ObjectKey, dict[str, Any]] | None = None, valid: bool = False) -> None:
        self.objects: dict[ObjectKey, dict[str, Any]] = dict(objects or {})
        self.version = 0
        #: whether the stored set passes the whole check: then an edit is checked by what it changes
        #: (validate.py); otherwise (e.g. a stored conf that does not parse) by the whole check
        self.valid = valid
        self.parsed = Parsed()

    def snapshot(self, extra: list[tuple[str, dict[str, Any]]] | None = None) -> Snapshot:
        """A fresh session snapshot of the stored objects (plus `extra`, e.g. reservation queues)."""
        # the parsers only read: stored objects are never edited in place (edits replace them)
        docs = [(key_where(k), v) for k, v in sorted(self.objects.items())]
        return build_snapshot(docs + (extra or []))

    @staticmethod
    def check(objects: dict[ObjectKey, dict[str, Any]], where: dict[ObjectKey, str], *, conf: bool = True
              ) -> tuple[dict[str, PlanSettings], Snapshot]:
        """Validate a whole set as `cycle` would; the plan settings of the reservable queues, and the
        snapshot built on the way. `conf=False` leaves the ConfigMap's volcano-scheduler.conf unparsed
        (a database written before it was checked must still load, so the ConfigMap can be fixed)."""
        docs = [(where.get(k, key_where(k)), v) for k, v in sorted(objects.items())]
        snap = build_snapshot(docs)
        if conf:
            # every session parses it (engine.run_cache_session): a conf that does not parse would
            # fail every tick, so it is refused here, naming `data.volcano-scheduler.conf`
            snapshot_conf(snap)
        plans: dict[str, PlanSettings] = {}
        for (kind, _, name), obj in objects.items():
            if kind != "Queue" or not is_reservable(obj):
                continue
            w = where.get((kind, "", name), key_where((kind, "", name)))
            ann = (obj.get("metadata") or {}).get("annotations") or {}
            plans[name] = parse_plan_settings(str(ann.get(PLAN_KEY, "")), f"{w}: metadata.annotations.{PLAN_KEY}")
            if any(q.parent == name for q in snap.queues.values()):
                raise InputError("a reservable queue must be a leaf: the plan follower creates its children",
                                 where=f"{w}: metadata.annotations.{RESERVABLE_KEY}")
        return plans, snap

    def edited(self, puts: list[tuple[str, dict[str, Any]]], deletes: list[ObjectKey]
               ) -> tuple[dict[ObjectKey, dict[str, Any]], dict[str, PlanSettings], list[Resource], Mapping[str, QueueInfo]]:
        """The set after the edit, checked; InputError (nothing changed) when it is not valid. Also the
        reservable queues' plan settings, every node's allocatable and every queue (for the plans'
        capacities). A valid stored set is checked where the edit changes it (validate.py), with the
        whole check's answer; otherwise by the whole check."""
        new = dict(self.objects)
        where: dict[ObjectKey, str] = {}
        for w, obj in puts:
            key = object_key(obj, w)
            if key in where:
                raise InputError(f"{key_where(key)} appears twice in one request", where=w)
            where[key] = w
            new[key] = copy.deepcopy(obj)
        for key in deletes:
            if key not in new:
                raise ObjectNotFound("not found", where=key_where(key))
            del new[key]
        if self.valid:
            plans, nodes, queues = check_edit(self.objects, new, set(where) | set(deletes), where, self.parsed)
            return new, plans, nodes, queues
        plans, snap = self.check(new, where)
        return new, plans, [n.allocatable for n in snap.nodes], snap.queues

    def replace(self, new: dict[ObjectKey, dict[str, Any]]) -> None:
        """The edit was committed: `new` is the stored set, and it passes the whole check."""
        self.objects = new
        self.valid = True
        self.parsed.forget(new)

    def as_list(self) -> dict[str, Any]:
        """The objects as a kubectl List, in a stable order."""
        order = {k: i for i, k in enumerate(("PriorityClass", "ConfigMap", "Node", "Queue", "PodGroup", "Pod"))}
        items = [v for _, v in sorted(self.objects.items(), key=lambda kv: (order[kv[0][0]], kv[0]))]
        return {"apiVersion": "v1", "kind": "List", "items": items}
