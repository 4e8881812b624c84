"""Checking an edit of the stored objects by what it changes, with the answer of a whole check.

`ClusterObjects.check` validates a whole set as `apportion cycle` reads it (kube.build's strict
parse, then the scheduler conf, then the reservable queues' plans); at 1,000 nodes and 10,000 pods
that is seconds per apply. The stored set has passed that check, so an edit can only break it where
it changed something, or where something depends on what it changed. `check_edit` checks exactly
those objects, in the whole check's order (kinds in kube.build's order, keys sorted, then the conf,
then the reservable queues in the set's order), so it refuses what the whole check refuses, with the
same first error, and accepts the rest. What depends on what (read from kube/build.py and
ClusterObjects.check):

* a Pod on a node: a Pod whose `spec.nodeName` is not a stored Node is an error, so deleting a Node
  re-checks the pods on it; pod uids (`metadata.uid`, else namespace/name) must be unique;
* PriorityClasses: at most one `globalDefault` (all of them are re-read when one changes: they are few);
* ConfigMaps: every `volcano-scheduler.conf` they carry must agree, and it must parse (all re-read
  when one changes);
* reservable Queues: their `apportion.io/plan` annotation must parse, and none may have a child, so a
  queue whose parent changes re-checks the old and the new parent.

Nothing else in a session's build raises for one object because of another (a PodGroup naming a
missing queue, or a Pod naming a missing PodGroup, is left out of the session with a warning). The
property test compares both checks on random edits (tests/service/test_svc_validate.py).

When the stored set is not known to pass the whole check (a database written before the conf was
checked), the whole check runs instead, as before.
"""

from __future__ import annotations

from typing import Any

from apportion.engine import snapshot_conf
from apportion.errors import InputError
from apportion.kube.build import object_key as kube_key
from apportion.kube.build import parse_object
from apportion.kube.conf import CONF_KEY
from apportion.kube.fields import Fields, check_name
from apportion.kube.pods import parse_pod
from apportion.resources import Resource
from apportion.service.reservations import PLAN_KEY, RESERVABLE_KEY, PlanSettings, parse_plan_settings

ObjectKey = tuple[str, str, str]
Objects = dict[ObjectKey, dict[str, Any]]

#: kube.build's parse order
KIND_ORDER = ("PriorityClass", "ConfigMap", "Node", "Queue", "PodGroup", "Pod")


def key_where(key: ObjectKey) -> str:
    """How an error names a stored object (the whole check's name for it)."""
    kind, ns, name = key
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def is_reservable(queue: dict[str, Any]) -> bool:
    """A Queue annotated `apportion.io/reservable: "true"`."""
    ann = (queue.get("metadata") or {}).get("annotations") or {}
    return str(ann.get(RESERVABLE_KEY, "")).lower() == "true"


class Parsed:
    """Each stored object's parsed record, kept while the stored object is the same object (stored
    objects are replaced, never edited in place): nodes and queues are read on every edit."""

    def __init__(self) -> None:
        self._records: dict[ObjectKey, tuple[dict[str, Any], Any]] = {}

    def record(self, key: ObjectKey, obj: dict[str, Any]) -> Any:
        """The record of a stored object (it parsed when it was stored)."""
        got = self._records.get(key)
        if got is not None and got[0] is obj:
            return got[1]
        rec = parse_object(key[0], Fields(obj, key_where(key)))
        self._records[key] = (obj, rec)
        return rec

    def forget(self, keep: Objects) -> None:
        """Drop the records of objects no longer stored."""
        for key in [k for k in self._records if k not in keep]:
            del self._records[key]


def _pod_uid(key: ObjectKey, obj: dict[str, Any]) -> str:
    uid = (obj.get("metadata") or {}).get("uid")
    return str(uid) if uid not in (None, "") else f"{key[1]}/{key[2]}"


def _pod_node(obj: dict[str, Any]) -> str:
    node = (obj.get("spec") or {}).get("nodeName")
    return str(node) if node not in (None, "") else ""


def check_edit(old: Objects, new: Objects, changed: set[ObjectKey], where: dict[ObjectKey, str],
               parsed: Parsed) -> tuple[dict[str, PlanSettings], list[Resource], dict[str, Any]]:
    """Check `new` (= `old`, which passed the whole check, with the keys in `changed` put or deleted);
    InputError as the whole check would raise it. Returns the reservable queues' plan settings, every
    node's allocatable and every queue's record (what the plans' capacities are computed from)."""
    def w(key: ObjectKey) -> str:
        return where.get(key, key_where(key))

    kinds = {k[0] for k in changed}
    # -- PriorityClass and ConfigMap: few, re-read whole when one changed ----------------------------
    if "PriorityClass" in kinds:
        pcs = sorted(k for k in new if k[0] == "PriorityClass")
        defaults = []
        for k in pcs:
            rec = parse_object("PriorityClass", Fields(new[k], w(k)))
            if rec.global_default:
                defaults.append(rec.name)
        if len(defaults) > 1:
            raise InputError(f"several PriorityClasses are globalDefault ({', '.join(defaults)}); Kubernetes allows one",
                             where=w(pcs[0]))
    conf_where: str | None = None
    conf_text: str | None = None
    if "ConfigMap" in kinds:
        texts: list[tuple[str, str]] = []
        for k in sorted(k for k in new if k[0] == "ConfigMap"):
            o = Fields(new[k], w(k))
            kube_key("ConfigMap", o)
            cm = parse_object("ConfigMap", o)
            if cm.text is not None:
                texts.append((w(k), cm.text))
        if len({t for _, t in texts}) > 1:
            raise InputError("several ConfigMaps carry different volcano-scheduler.conf; keep one", where=texts[-1][0])
        if texts:
            conf_where, conf_text = texts[0]
    # -- Nodes, Queues, PodGroups: each changed one on its own ----------------------------------------
    for kind in ("Node", "Queue", "PodGroup"):
        for k in sorted(k for k in changed if k[0] == kind and k in new):
            o = Fields(new[k], w(k))
            if kind == "PodGroup":
                kube_key("PodGroup", o)
            else:
                check_name(o)
            parse_object(kind, o)
    # -- Pods: the changed ones, those on a node that went, and repeated uids --------------------------
    pod_changes = {k for k in changed if k[0] == "Pod" and k in new}
    gone_nodes = {k[2] for k in changed if k[0] == "Node" and k not in new}
    node_names = {k[2] for k in new if k[0] == "Node"}
    by_uid: dict[str, list[ObjectKey]] = {}
    check = set(pod_changes)
    for k, obj in new.items():
        if k[0] != "Pod":
            continue
        if k not in pod_changes:
            by_uid.setdefault(_pod_uid(k, obj), []).append(k)
            if gone_nodes and _pod_node(obj) in gone_nodes:
                check.add(k)
    for k in pod_changes:
        try:
            uid = Fields(new[k], w(k)).str_("metadata.uid", "") or f"{k[1]}/{k[2]}"
        except InputError:
            continue  # raised below, in its place
        by_uid.setdefault(uid, []).append(k)
    # a uid held by several pods is an error at each of them but the first, in key order
    seconds = {k for keys in by_uid.values() if len(keys) > 1 for k in sorted(keys)[1:]}
    for k in sorted(check | seconds):
        o = Fields(new[k], w(k))
        kube_key("Pod", o)
        uid = o.str_("metadata.uid", "") or f"{k[1]}/{k[2]}"
        if k in seconds:
            raise o.fail("metadata.uid", f"duplicate pod uid {uid!r}")
        parse_pod(o, node_names)
    # -- the scheduler conf -------------------------------------------------------------------------
    if conf_text is not None and conf_where is not None:
        from apportion.cluster.snapshot import ConfText, Snapshot

        snap = Snapshot()
        snap.conf_text = ConfText(text=conf_text, where=f"{conf_where}: data.{CONF_KEY}", warnings_at=0)
        snapshot_conf(snap)
    # -- reservable queues: their plan settings, and no children --------------------------------------
    queues = {k[2]: parsed.record(k, obj) if k not in where else parse_object("Queue", Fields(obj, w(k)))
              for k, obj in new.items() if k[0] == "Queue"}
    parents = {name: q.parent for name, q in queues.items()}
    touched_parents = {parents[k[2]] for k in changed if k[0] == "Queue" and k[2] in parents}
    touched_parents |= {p for k in changed if k[0] == "Queue" and k in old
                        for p in [str(((old[k].get("spec") or {}).get("parent")) or "")]}
    plans: dict[str, PlanSettings] = {}
    for (kind, _, name), obj in new.items():
        if kind != "Queue" or not is_reservable(obj):
            continue
        k = (kind, "", name)
        ann = (obj.get("metadata") or {}).get("annotations") or {}
        plans[name] = parse_plan_settings(str(ann.get(PLAN_KEY, "")), f"{w(k)}: metadata.annotations.{PLAN_KEY}")
        if (k in changed or name in touched_parents) and any(p == name for p in parents.values()):
            raise InputError("a reservable queue must be a leaf: the plan follower creates its children",
                             where=f"{w(k)}: metadata.annotations.{RESERVABLE_KEY}")
    nodes = [parsed.record(k, obj).allocatable if k not in where else
             parse_object("Node", Fields(obj, w(k))).allocatable for k, obj in new.items() if k[0] == "Node"]
    return plans, nodes, queues
