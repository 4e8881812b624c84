"""The live cluster state the sessions read: a `state.SchedulerCache` fed with events.

The database holds the objects as users applied them (with the nodes, phases and statuses the
scheduling loop wrote back); the cache holds them as the scheduler must see them, and every change
reaches it as a watch event (ADDED, MODIFIED, DELETED), so a session's snapshot is assembled without
parsing anything again. What differs between the two:

* the plan followers' queues: each active reservation is a child queue of its reservable queue, and
  `<queue>-default` holds the rest of the plan (events as the followers' state changes);
* a PodGroup in a reservable queue runs in its reservation's queue (`apportion.io/reservation`) while
  the reservation is active, in `<queue>-default` without one or once its reservation has ended
  (moveOnExpiry); a job that has not started while its reservation is not active is left out of the
  cache with its pods (YARN rejects such an application), and `hidden` says why;
* when the conf is not hierarchical, every queue is a peer in the session: the reservable queue's own
  guarantee is left out, as its children carry it (otherwise the plan would be guaranteed twice).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from apportion.cluster.model import QueueInfo
from apportion.kube.fields import Fields
from apportion.kube.objects import parse_queue
from apportion.reservation.follower import FollowerState
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent

log = logging.getLogger(__name__)

ObjectKey = tuple[str, str, str]
RESERVATION_KEY = "apportion.io/reservation"
GROUP_KEY = "scheduling.k8s.io/group-name"
#: the order in which kinds are added (deleted in reverse): what an object refers to comes first
KIND_ORDER = ("PriorityClass", "ConfigMap", "Node", "Queue", "PodGroup", "Pod")


def cache_key(key: ObjectKey) -> str:
    """The cache's key of a stored object: `name`, or `namespace/name`."""
    _, ns, name = key
    return f"{ns}/{name}" if ns else name


def _order(key: ObjectKey) -> tuple[int, ObjectKey]:
    return (KIND_ORDER.index(key[0]), key)


class QueueRecords:
    """The records of the followers' queue objects, each spec parsed once.

    A tick adds a queue per reservation that starts (hundreds a second at the benchmark's rate), and
    parsing each object the publisher made back into its QueueInfo was most of the tick's publish
    part. The reservations' queues differ mostly by name only: an object of the publisher's shape
    (kind, a name, a spec; nothing else) whose spec was parsed before gets that record with its own
    name and its own copies of the mutable fields. `parse_queue` is the reference (a property test
    compares them; `APPORTION_CHECK_STATE`'s reparse too)."""

    #: distinct specs kept (then forgotten all at once): a plan's reservations share a few
    LIMIT = 4096

    def __init__(self) -> None:
        self._by_spec: dict[str, QueueInfo] = {}

    def record(self, obj: dict[str, Any], where: str) -> QueueInfo:
        """What `parse_queue` gives for the object (raises as it does)."""
        meta, spec = obj.get("metadata"), obj.get("spec")
        if not (len(obj) == 3 and isinstance(meta, dict) and len(meta) == 1 and isinstance(spec, dict)):
            return parse_queue(Fields(obj, where))
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return parse_queue(Fields(obj, where))
        key = repr(spec)
        held = self._by_spec.get(key)
        if held is None:
            held = parse_queue(Fields(obj, where))
            if len(self._by_spec) >= self.LIMIT:
                self._by_spec.clear()
            self._by_spec[key] = held
        # the cache gets a copy: what it holds is never the memo's (`dataclasses.replace` with these
        # fields, which calls the plain __init__ again: twice the time, hundreds of times a tick)
        out = QueueInfo.__new__(QueueInfo)
        out.__dict__.update(held.__dict__)
        out.name = name
        out.capability = held.capability.clone()
        out.deserved = held.deserved.clone()
        out.guarantee = held.guarantee.clone()
        out.annotations = dict(held.annotations)
        return out


class LiveView:
    """The cache, and how stored objects and follower states become its events."""

    def __init__(self, hierarchical: bool) -> None:
        self.hierarchical = hierarchical
        self.cache = SchedulerCache(report=lambda line: log.warning("%s", line))
        #: names of the reservable queues (those with a plan)
        self.reservable: set[str] = set()
        #: each plan's default queue, from its follower's last state (the states themselves are not
        #: kept: a follower makes what it published whole only while someone holds it, published.py)
        self.defaults: dict[str, str] = {}
        self.active: set[str] = set()
        #: names of the queues the followers made
        self.generated: set[str] = set()
        #: podgroup `ns/name` -> why it is left out (its reservation is not active)
        self.hidden: dict[str, str] = {}
        self.queue_records = QueueRecords()
        #: every stored podgroup of a reservable queue -> the reservation it names (or None)
        self.groups: dict[ObjectKey, str | None] = {}
        #: bumped by every `load` (a fresh cache holds none of the followers' queues)
        self.loads = 0

    # -- what the scheduler sees of one stored object ----------------------------------------------
    def view(self, key: ObjectKey, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The object as the cache holds it, or None when it is left out."""
        kind, ns, name = key
        if kind == "Queue" and name in self.reservable and not self.hierarchical:
            out = copy.deepcopy(obj)
            out.get("spec", {}).pop("guarantee", None)
            out.get("spec", {}).pop("deserved", None)
            return out
        if kind == "PodGroup":
            q = (obj.get("spec") or {}).get("queue")
            default = self.defaults.get(q) if isinstance(q, str) else None
            self.hidden.pop(f"{ns}/{name}", None)
            if default is None:
                return obj
            rid = ((obj.get("metadata") or {}).get("annotations") or {}).get(RESERVATION_KEY)
            started = (obj.get("status") or {}).get("phase") in ("Running", "Completed")
            if rid and rid not in self.active and not started:
                self.hidden[f"{ns}/{name}"] = f"submitted to a reservation which is not currently active: {rid}"
                return None
            out = copy.deepcopy(obj)
            # a job whose reservation ended (expired, deleted) moves to the default queue, as the
            # follower moves an expired reservation queue's applications (moveOnExpiry)
            out["spec"]["queue"] = rid if rid and rid in self.active else default
            return out
        if kind == "Pod":
            group = ((obj.get("metadata") or {}).get("annotations") or {}).get(GROUP_KEY)
            if group and f"{ns}/{group}" in self.hidden:
                return None
        return obj

    # -- events ------------------------------------------------------------------------------------
    def _sync(self, kind: str, ckey: str, desired: dict[str, Any] | None, where: str,
              records: QueueRecords | None = None) -> None:
        cur = self.cache.get(kind, ckey)
        if desired is None:
            if cur is not None:
                self.cache.apply(WatchEvent(DELETED, cur, where))
        elif cur is None:
            # a queue of the followers comes with its record, new or changed (the cache never keeps the
            # record of a queue whose record was given, so a changed one is a new record either way)
            record = records.record(desired, where) if records is not None else None
            self.cache.apply(WatchEvent(ADDED, desired, where, record))
        elif cur != desired:
            record = records.record(desired, where) if records is not None else None
            self.cache.apply(WatchEvent(MODIFIED, desired, where, record))

    def load(self, objects: dict[ObjectKey, dict[str, Any]], reservable: set[str]) -> None:
        """A fresh cache holding the stored objects (checked as a dump)."""
        self.cache = SchedulerCache(report=self.cache.report)
        self.reservable = set(reservable)
        self.defaults, self.active, self.generated, self.hidden = {}, set(), set(), {}
        self.loads += 1
        self._index_groups(objects, None)
        docs = []
        for key in sorted(objects, key=_order):
            v = self.view(key, objects[key])
            if v is not None:
                docs.append((f"{key[0]} {cache_key(key)}", v))
        self.cache.load(docs)

    def changed(self, objects: dict[ObjectKey, dict[str, Any]], keys: list[ObjectKey], reservable: set[str]) -> None:
        """Send the events of stored objects that changed or went (keys absent from `objects`)."""
        if reservable != self.reservable:
            self.reservable = set(reservable)
            keys = keys + [k for k in objects if k[0] == "Queue"]
            self._index_groups(objects, None)
        else:
            self._index_groups(objects, keys)
        gone = sorted((k for k in set(keys) if k not in objects), key=_order, reverse=True)
        for key in gone:
            self._sync(key[0], cache_key(key), None, f"delete {key[0]} {cache_key(key)}")
        for key in sorted({k for k in keys if k in objects}, key=_order):
            self._sync(key[0], cache_key(key), self.view(key, objects[key]), f"apply {key[0]} {cache_key(key)}")

    def set_hierarchical(self, hierarchical: bool, objects: dict[ObjectKey, dict[str, Any]]) -> None:
        """The conf's enableHierarchy changed (or not): the reservable queues are sent again as they
        must now be seen (with or without their own guarantee)."""
        if hierarchical == self.hierarchical:
            return
        self.hierarchical = hierarchical
        keys = [("Queue", "", name) for name in sorted(self.reservable) if ("Queue", "", name) in objects]
        self.changed(objects, keys, self.reservable)

    def queue_events(self, changed: dict[str, dict[str, Any] | None]) -> list[tuple[str, dict[str, Any] | None]]:
        """The followers' queue events `follow` would send for `changed`, in its order: the queues gone
        (None), then those made or changed, each by name."""
        gone = sorted((n, None) for n, q in changed.items() if q is None and n in self.generated)
        held = self.cache.get
        made = sorted((n, q) for n, q in changed.items() if q is not None and held("Queue", n) is not q)
        return [*gone, *made]

    def send_queues(self, events: list[tuple[str, dict[str, Any] | None]], loads: int) -> None:
        """Some of `queue_events`' events, sent ahead of `follow` (which then skips them): nothing else
        changes, so only what reads the cache's queues (a session) sees them. Events for a cache that
        was since loaded afresh (`loads` differs) are dropped: `follow` sends everything again."""
        if loads != self.loads:
            return
        held = self.cache.get
        for name, q in events:
            if q is None:
                if name in self.generated:
                    self._sync("Queue", name, None, f"plan follower: {name} expired")
                    self.generated.discard(name)
            elif held("Queue", name) is not q:
                self._sync("Queue", name, q, f"plan follower: {name}", self.queue_records)
                self.generated.add(name)

    def follow(self, objects: dict[ObjectKey, dict[str, Any]], states: dict[str, FollowerState],
               active: set[str], changed: dict[str, dict[str, Any] | None], flipped: set[str] | None) -> None:
        """The followers' new state: the queues that changed since the last call (made or, None, gone;
        publish.QueuePublisher says which), and the routing of the podgroups of reservable queues:
        those whose reservation became or stopped being active (`flipped`), or all of them (None)."""
        if set(states) != set(self.defaults):
            flipped = None  # a plan came or went: every podgroup of a reservable queue is routed again
        self.defaults, self.active = {name: st.default_queue for name, st in states.items()}, active
        gone = sorted(n for n, q in changed.items() if q is None and n in self.generated)
        for name in gone:
            self._sync("Queue", name, None, f"plan follower: {name} expired")
        # a reservation queue unchanged since the last tick is the very object the cache holds
        # (publish.QueuePublisher keeps them): only the others are compared and sent, in name order
        held = self.cache.get
        made = sorted((n, q) for n, q in changed.items() if q is not None)
        for name, q in made:
            if held("Queue", name) is not q:
                self._sync("Queue", name, q, f"plan follower: {name}", self.queue_records)
        self.generated.difference_update(gone)
        self.generated.update(n for n, _ in made)
        if flipped is None:
            groups = list(self.groups)
        elif flipped:
            groups = [k for k, rid in self.groups.items() if rid in flipped]
        else:
            return
        before = dict(self.hidden)
        views = {k: self.view(k, objects[k]) for k in groups}
        flips = {g for g in set(before) ^ set(self.hidden)}
        pods = [k for k, o in objects.items() if k[0] == "Pod" and flips
                and f"{k[1]}/{((o.get('metadata') or {}).get('annotations') or {}).get(GROUP_KEY)}" in flips]
        for k in pods:  # pods of a group being hidden leave before it
            if f"{k[1]}/{((objects[k].get('metadata') or {}).get('annotations') or {}).get(GROUP_KEY)}" in self.hidden:
                self._sync("Pod", cache_key(k), None, f"hide {cache_key(k)}")
        for k in sorted(groups):
            self._sync("PodGroup", cache_key(k), views[k], f"route {cache_key(k)}")
        for k in pods:  # and come back after it
            self._sync("Pod", cache_key(k), self.view(k, objects[k]), f"show {cache_key(k)}")

    def _index_groups(self, objects: dict[ObjectKey, dict[str, Any]], keys: list[ObjectKey] | None) -> None:
        """Keep `groups` (the podgroups of reservable queues, with the reservation each names) for the
        podgroups among `keys`, or for every stored one (None)."""
        if keys is None:
            self.groups = {}
            keys = [k for k in objects if k[0] == "PodGroup"]
        for k in keys:
            if k[0] != "PodGroup":
                continue
            o = objects.get(k)
            if o is None or (o.get("spec") or {}).get("queue") not in self.reservable:
                self.groups.pop(k, None)
            else:
                self.groups[k] = ((o.get("metadata") or {}).get("annotations") or {}).get(RESERVATION_KEY)
