"""SchedulerCache: nodes, pods, podgroups, queues, priority classes and the scheduler ConfigMap, keyed as
Kubernetes keys them and changed only by watch events (Volcano's `pkg/scheduler/cache`).

Each object is kept twice: as received (its JSON form, which outcomes edit and send back as events) and
parsed into a record (`kube.records`: NodeSpec, PodSpec, ...), so a session's snapshot is assembled
without parsing anything. An event is parsed before anything changes: a malformed object raises
InputError and leaves the cache as it was.

Events a live stream may legitimately contain but that do not fit the cache (MODIFIED of an unknown
object, a duplicate ADDED, DELETED of an unknown object, a pod on a node the cache does not hold, a kind
apportion does not read) are handled as an informer would, counted in `anomalies`, and reported in one
line each through `report`.

Snapshots are taken by the part of the class in state/snapshots.py (`SnapshotKeeping`).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from apportion.cluster.model import JobInfo, NodeInfo, TaskStatus
from apportion.kube.build import (
    KNOWN_KINDS,
    SCHEDULER_NAMES,
    object_key,
    parse_object,
    parse_objects,
)
from apportion.kube.fields import Fields
from apportion.kube.records import PodSpec, Records
from apportion.state.equality import same as same_record
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.snapshots import SnapshotKeeping

#: the anomaly counters, by name
MODIFIED_UNKNOWN = "modified-unknown"
DUPLICATE_ADDED = "duplicate-added"
DELETED_UNKNOWN = "deleted-unknown"
POD_NODE_MISSING = "pod-node-missing"
NODE_DELETED_WITH_PODS = "node-deleted-with-pods"
UNKNOWN_KIND = "unknown-kind"

_DONE = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)


#: the metadata a pod's record is parsed from (kube.pods.parse_pod); of its status, phase and startTime
_POD_METADATA = ("name", "namespace", "uid", "deletionTimestamp", "annotations", "labels", "creationTimestamp")


def pod_inputs(obj: dict[str, Any]) -> bytes | None:
    """Everything `parse_pod` reads of a pod, as bytes that differ whenever any of it does (orjson keeps
    1, 1.0 and true apart, which `==` does not, and parsing does not either); None when the object is
    not of the plain shape this can tell (then it is parsed)."""
    meta, status = obj.get("metadata"), obj.get("status")
    if type(meta) is not dict or (status is not None and type(status) is not dict):
        return None
    st = status or {}
    try:
        return orjson.dumps((obj.get("spec"), [meta.get(k) for k in _POD_METADATA],
                             st.get("phase"), st.get("startTime")))
    except TypeError:  # a key that is not a string, an integer past 64 bits: leave it to the parser
        return None



def stderr_report(line: str) -> None:
    """The default report: one line on stderr."""
    sys.stderr.write(f"apportion: warning: {line}\n")


class SchedulerCache(SnapshotKeeping):
    """Cluster state between sessions. Change it with `apply` (or `load` for a whole dump); read it with
    `snapshot`."""

    #: False: every snapshot is assembled in full and says nothing about what changed (the reference
    #: the property tests compare the jobs' delta with, docs/semantics.md K17)
    job_deltas = True

    def __init__(self, *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES,
                 report: Callable[[str], None] | None = None) -> None:
        self.scheduler_names = scheduler_names
        self.report = report if report is not None else stderr_report
        self.records = Records()
        #: the objects as received, by kind and key, in the order they were first added
        self.raw: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in KNOWN_KINDS}
        #: keys whose record came with their event (not parsed here), by kind
        self.supplied: dict[str, set[str]] = {k: set() for k in KNOWN_KINDS}
        #: node name -> keys of the pods on it that still occupy it (for reporting and the self-check)
        self.pods_by_node: dict[str, set[str]] = {}
        self.anomalies: Counter[str] = Counter()
        #: pod key -> the error of its last failed bind (kept until the pod changes)
        self.bind_errors: dict[str, str] = {}
        #: bumped by every event applied
        self.version = 0
        #: bumped by every event that changed what a snapshot is assembled from (a record, a key, a
        #: location): while it stays, a snapshot is what the last one was (`engine.run_cache_session`)
        self.changes = 0
        #: the last session over this cache, for a session that opens on nothing new (set by the engine)
        self.last_session: Any = None
        #: what plugins carry from one session over this cache to the next (Snapshot.memo): the cache
        #: replaces a record that changes and never edits one in place, as a memo's snapshots must
        self.memo: dict[str, Any] = {}
        #: per PodGroup key, the version of the last event that touched it or one of its pods
        self._stamp: dict[str, int] = {}
        #: bumped by every PriorityClass event (a job's priority comes from one)
        self._pc_version = 0
        #: pod key -> what its parse read of the object last parsed here (`pod_inputs`)
        self._pod_marks: dict[str, bytes] = {}
        #: jobs kept from the last snapshot (see `snapshot(keep=True)`): uid -> (job, stamp, pc version,
        #: node deletions)
        self._kept: dict[str, tuple[JobInfo, int, int, int]] = {}
        #: bumped by every Node deleted (a kept job is checked against the nodes only after one)
        self._node_deletions = 0
        #: the uids `_reuse` handed out again in the snapshot being assembled
        self._hits: list[str] = []
        #: bumped by every change to a Node record (added, changed, deleted): with this cache's own
        #: token, the snapshots' `nodes_key`
        self._node_version = 0
        self._token = object()
        #: the NodeInfo objects of the last session-after-session snapshot, with the node version they
        #: were built at: handed out again while no Node changed
        self._node_infos: tuple[int, list[NodeInfo]] | None = None
        #: the pods' index for `assemble_indexed`: per pod its arrival number (the order a full assembly
        #: visits pods in), the pods of this scheduler by the PodGroup they name, the other pods, and
        #: how many pods carry each uid (a shared uid needs `assemble`'s warnings)
        self._pod_seq: dict[str, int] = {}
        self._next_seq = 0
        self._group_pods: dict[str, dict[str, int]] = {}
        self._loose: dict[str, int] = {}
        self._uids: Counter[str] = Counter()
        self._shared_uids = 0
        #: the log every job handed out with `keep=True` shares (JobInfo.log), drained by each snapshot,
        #: and the jobs sessions wrote notes on (JobInfo.notes)
        self._log: set[str] = set()
        self._notes: set[str] = set()
        #: since the last snapshot: the PodGroup keys an event touched (the group or one of its pods),
        #: the keys added to the PodGroup table and those removed from it (docs/semantics.md K17)
        self._touched_groups: set[str] = set()
        self._pg_added: set[str] = set()
        self._pg_removed: set[str] = set()
        #: bumped by every Queue added or removed (a job whose queue is missing leaves the session)
        self._queue_keys = 0
        #: bumped by every change to a Queue record; the records' queues by name at that count
        self._queue_version = 0
        self._queues: tuple[int, dict[str, Any]] | None = None
        #: PodGroup keys that pods of this scheduler name but the records lack (their pods are loose)
        self._groupless: set[str] = set()
        self._last = None
        self._snapshots = 0
        #: the self-check's record of a snapshot's jobs (state/check.py): its number, and per uid the
        #: job, its version and phase as handed out
        self.handed: tuple[int, dict[str, tuple[JobInfo, int, Any]]] | None = None
        self.last_drained: set[str] = set()

    # ================================================================= filling
    @classmethod
    def from_objects(cls, objects: Iterable[tuple[str, dict[str, Any]]], **kw: Any) -> SchedulerCache:
        """A cache holding these objects, fed as ADDED events in order."""
        cache = cls(**kw)
        for where, obj in objects:
            cache.apply(WatchEvent(ADDED, obj, where))
        return cache

    def load(self, objects: list[tuple[str, Any]]) -> None:
        """Load a whole dump into this (empty) cache, checked as a dump: duplicates, pods on nodes the
        dump lacks and the like are errors (InputError), as `cycle` has always reported them."""
        if self.version:
            raise ValueError("load() fills an empty cache")
        rec = parse_objects(objects)
        self.records = rec
        by_where = dict(objects)
        for kind in KNOWN_KINDS:
            table = rec.table(kind)
            self.raw[kind] = {key: by_where[where] for key, (where, _) in table.items()}
        for key, (_, ps) in rec.pods.items():
            self._pod_seq[key] = self._next_seq
            self._next_seq += 1
            self._index_pod(key, ps)
        self.version += 1
        self.changes += 1
        self._node_version += 1
        self._queue_version += 1

    # ================================================================= events
    def apply(self, ev: WatchEvent) -> None:
        """Apply one event. Raises InputError (cache unchanged) when the object is malformed."""
        kind = ev.kind
        where = ev.where or "event"
        if kind not in KNOWN_KINDS:
            self._anomaly(UNKNOWN_KIND, f"{where}: kind {kind or '(none)'} is not read by apportion; skipped")
            return
        o = Fields(ev.object, where)
        key = object_key(kind, o)
        table = self.records.table(kind)
        if ev.type == DELETED:
            if key not in table:
                self._anomaly(DELETED_UNKNOWN, f"{where}: DELETED {kind} {key}, which the cache does not hold; ignored")
                return
            self._remove(kind, key, where)
            self.version += 1
            self.changes += 1
            return
        same = False
        if ev.record is not None:
            record = ev.record
        elif kind == "Pod":
            # most MODIFIED pods of a live watch change what parsing ignores (resourceVersion, status
            # conditions): the record held is then the one a parse would give
            mark = pod_inputs(ev.object)
            held = table.get(key)
            if mark is not None and held is not None and self._pod_marks.get(key) == mark:
                record, same = held[1], True
            else:
                record = parse_object(kind, o)
            if mark is None:
                self._pod_marks.pop(key, None)
            else:
                self._pod_marks[key] = mark
        else:
            record = parse_object(kind, o)
            held = table.get(key)
            # a status write that changes nothing the record holds (a PodGroup's conditions, a Queue's
            # status) leaves the record, and what sessions read, as it was
            if held is not None and ev.type != ADDED and key not in self.supplied[kind] and same_record(held[1], record):
                record, same = held[1], True
        if not same:
            self._touch(kind, key, record)
        if key not in table:
            if kind == "PodGroup":
                self._pg_added.add(key)
                self._groupless.discard(key)
            elif kind == "Queue":
                self._queue_keys += 1
        if ev.type == ADDED and key in table:
            self._anomaly(DUPLICATE_ADDED, f"{where}: ADDED {kind} {key}, which the cache already holds; "
                                           "treated as MODIFIED")
        elif ev.type == MODIFIED and key not in table:
            self._anomaly(MODIFIED_UNKNOWN, f"{where}: MODIFIED {kind} {key} before it was ADDED; treated as ADDED")
        if kind == "Pod":
            if key not in table:
                self._pod_seq[key] = self._next_seq
                self._next_seq += 1
            node = record.task.node_name
            if node and node not in self.records.nodes and record.task.status not in _DONE:
                self._anomaly(POD_NODE_MISSING, f"{where}: pod {key} is on node {node!r}, which the cache does "
                                                "not hold; left out of sessions until the node is added")
            if not same:
                self._unindex_pod(key)
                self._index_pod(key, record)
            self.bind_errors.pop(key, None)
        if not same or table[key][0] != where:
            self.changes += 1
        table[key] = (where, record)
        self.raw[kind][key] = ev.object
        if ev.record is not None:
            self.supplied[kind].add(key)
            self._pod_marks.pop(key, None)
        else:
            self.supplied[kind].discard(key)
        self.version += 1

    def _touch(self, kind: str, key: str, record: Any) -> None:
        """Mark what a change to this object may change in the jobs a snapshot holds."""
        v = self.version + 1
        if kind == "Pod":
            for ps in (self.records.pods.get(key, (None, None))[1], record):
                if ps is not None and ps.group:
                    group = f"{ps.task.namespace}/{ps.group}"
                    self._stamp[group] = v
                    self._touched_groups.add(group)
        elif kind == "PodGroup":
            self._stamp[key] = v
            self._touched_groups.add(key)
        elif kind == "PriorityClass":
            self._pc_version += 1
        elif kind == "Node":
            self._node_version += 1
        elif kind == "Queue":
            self._queue_version += 1

    def _remove(self, kind: str, key: str, where: str) -> None:
        self._touch(kind, key, None)
        if kind == "Pod":
            self._unindex_pod(key)
            self.bind_errors.pop(key, None)
            self._pod_marks.pop(key, None)
            del self._pod_seq[key]
        elif kind == "PodGroup":
            self._pg_removed.add(key)
            self._pg_added.discard(key)
            if key in self._group_pods:
                self._groupless.add(key)
        elif kind == "Queue":
            self._queue_keys += 1
        elif kind == "Node":
            self._node_deletions += 1
            on = self.pods_by_node.get(key)
            if on:
                self._anomaly(NODE_DELETED_WITH_PODS,
                              f"{where}: node {key} deleted with {len(on)} pod(s) on it "
                              f"({', '.join(sorted(on)[:3])}{', ...' if len(on) > 3 else ''}); "
                              "they are left out of sessions until they move or are deleted")
        del self.records.table(kind)[key]
        del self.raw[kind][key]
        self.supplied[kind].discard(key)

    def _group_of(self, ps: PodSpec) -> str | None:
        # the PodGroup a full assembly would join this pod to, if it exists
        if ps.group and (ps.scheduler or self.scheduler_names[0]) in self.scheduler_names:
            return f"{ps.task.namespace}/{ps.group}"
        return None

    def _index_pod(self, key: str, ps: PodSpec) -> None:
        node = ps.task.node_name
        if node and ps.task.status not in _DONE:
            self.pods_by_node.setdefault(node, set()).add(key)
        group = self._group_of(ps)
        seq = self._pod_seq[key]
        if group is None:
            self._loose[key] = seq
        else:
            self._group_pods.setdefault(group, {})[key] = seq
            if group not in self.records.podgroups:
                self._groupless.add(group)
        n = self._uids[ps.task.uid] = self._uids[ps.task.uid] + 1
        if n == 2:
            self._shared_uids += 1

    def _unindex_pod(self, key: str) -> None:
        old = self.records.pods.get(key)
        if old is None:
            return
        ps = old[1]
        node = ps.task.node_name
        on = self.pods_by_node.get(node)
        if on is not None:
            on.discard(key)
            if not on:
                del self.pods_by_node[node]
        group = self._group_of(ps)
        if group is None:
            del self._loose[key]
        else:
            members = self._group_pods[group]
            del members[key]
            if not members:
                del self._group_pods[group]
                self._groupless.discard(group)
        n = self._uids[ps.task.uid] - 1
        if n == 1:
            self._shared_uids -= 1
        if n:
            self._uids[ps.task.uid] = n
        else:
            del self._uids[ps.task.uid]

    def _anomaly(self, name: str, line: str) -> None:
        self.anomalies[name] += 1
        self.report(line)

    # ================================================================= reading
    # ================================================================= reading (snapshots: state/snapshots.py)
    def pod_index(self) -> tuple[dict[str, list[str]], list[str], dict[str, int], int]:
        """The pods' index in a comparable form (the self-check): per PodGroup its pods in arrival
        order, the other pods in arrival order, the pods per uid, the uids more than one pod carries."""
        def ordered(d: dict[str, int]) -> list[str]:
            return sorted(d, key=d.__getitem__)
        return ({g: ordered(m) for g, m in sorted(self._group_pods.items())}, ordered(self._loose),
                dict(sorted(self._uids.items())), self._shared_uids)

    def objects(self) -> list[tuple[str, dict[str, Any]]]:
        """(location, object) for every object held, kind by kind, each kind in arrival order."""
        out: list[tuple[str, dict[str, Any]]] = []
        for kind in KNOWN_KINDS:
            table = self.records.table(kind)
            out.extend((table[key][0], obj) for key, obj in self.raw[kind].items())
        return out

    def events(self, *, reparse: bool = False) -> list[WatchEvent]:
        """ADDED events that rebuild this cache's objects from nothing, kind by kind, in arrival order
        (with the records that came with their events, unless `reparse`)."""
        out: list[WatchEvent] = []
        for kind in KNOWN_KINDS:
            table, supplied = self.records.table(kind), self.supplied[kind]
            for key, obj in self.raw[kind].items():
                where, rec = table[key]
                out.append(WatchEvent(ADDED, obj, where, rec if key in supplied and not reparse else None))
        return out

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """The object of that kind and key as last received, or None."""
        return self.raw[kind].get(key)

    def __len__(self) -> int:
        return sum(len(t) for t in self.raw.values())
