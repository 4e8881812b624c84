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
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any

import orjson

from apportion.cluster.model import JobInfo, NodeInfo, TaskStatus
from apportion.cluster.snapshot import JobDelta, Snapshot
from apportion.kube.build import (
    KNOWN_KINDS,
    SCHEDULER_NAMES,
    assemble,
    assemble_delta,
    assemble_indexed,
    object_key,
    parse_object,
    parse_objects,
)
from apportion.kube.fields import Fields
from apportion.kube.records import PodSpec, Records
from apportion.state.equality import same as same_record
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent

#: the anomaly counters, by name
MODIFIED_UNKNOWN = "modified-unknown"
DUPLICATE_ADDED = "duplicate-added"
DELETED_UNKNOWN = "deleted-unknown"
POD_NODE_MISSING = "pod-node-missing"
NODE_DELETED_WITH_PODS = "node-deleted-with-pods"
UNKNOWN_KIND = "unknown-kind"

_DONE = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
#: a job whose every task is in one of these is handed out again while nothing changed it: a session
#: changes no such task but by placing, evicting or pipelining it, which clears `allocated_as_added`
_KEPT_STATUSES = (TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.SUCCEEDED, TaskStatus.FAILED)


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


@dataclass
class _Last:
    """What the last snapshot taken with `keep=True` handed out, for the next one's delta."""

    number: int
    #: the jobs of the records' PodGroups, in the records' order (a copy: the snapshot's dict is the caller's)
    jobs: dict[str, JobInfo]
    #: uids of the jobs made for pods without a PodGroup (rebuilt by every snapshot)
    synthetic: set[str]
    #: uids of the PodGroups' jobs not kept (rebuilt by every snapshot)
    unkept: set[str]
    pc_version: int
    node_deletions: int
    queue_keys: int
    #: False when a job was dropped for a missing queue (such a job is looked at by every snapshot)
    ok: bool


def stderr_report(line: str) -> None:
    """The default report: one line on stderr."""
    sys.stderr.write(f"apportion: warning: {line}\n")


class SchedulerCache:
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
        self._last: _Last | None = None
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
    def snapshot(self, *, copy: bool = True, keep: bool = False) -> Snapshot:
        """A Snapshot for one session. The session may change its tasks and jobs freely: they are copies
        (`copy=False` hands over the cache's own tasks, for a caller that discards the cache after one
        session).

        `keep=True` (a caller that runs session after session) hands out again the job objects of the
        last snapshot whose every task runs, waits or has finished, when nothing about them changed
        since: no event touched the PodGroup, its pods or the PriorityClasses, the last session changed
        no task status (`allocated_as_added` holds) and left the phase as the PodGroup has it, and every
        node they run on is still there. What a session records for itself on such a job (conditions,
        fit errors) is cleared first; the tasks' node-table rows stay (session open clears them when the
        table's columns change), and what plugins derived from it (`JobInfo.derive`) stays valid. At full
        load nine running jobs in ten qualify, and so does a backlog that waits session after session;
        building them was most of a snapshot's cost.
        """
        rec = self.records
        self._hits = []
        indexed = False
        built: list[str] | None = None
        # a snapshot without `keep` hands nothing out again and leaves the delta's records as they are
        last: _Last | None = None
        drained: set[str] = set()
        noted: set[str] = set()
        if keep:
            last, self._last = self._last, None
            drained = set(self._log)
            self._log.clear()
            noted = set(self._notes)
            self._notes.clear()
        if keep and copy and not self._shared_uids and not (self.pods_by_node.keys() - rec.nodes.keys()):
            indexed = True
            # only the pods of jobs that are not kept are visited (the pods' index above)
            loose = list(self._loose.items())
            for group in self._groupless:
                loose.extend(self._group_pods[group].items())
            loose.sort(key=lambda kv: kv[1])
            held = self._node_infos
            nodes = held[1] if held is not None and held[0] == self._node_version else None
            step = (self._assemble_delta(last, drained | noted, [k for k, _ in loose], nodes)
                    if last is not None else None)
            if step is not None:
                snap, built = step
            else:
                self._hits = []
                snap = assemble_indexed(rec, self._group_pods, [k for k, _ in loose],
                                        scheduler_names=self.scheduler_names, reuse=self._reuse, nodes=nodes)
            self._node_infos = (self._node_version, snap.nodes)
        else:
            snap = assemble(rec, scheduler_names=self.scheduler_names, copy=copy, strict=False,
                            reuse=self._reuse if keep else None)
        snap.nodes_key = (self._token, self._node_version)
        if keep:
            self._snapshots += 1
            self._keep(snap, last, drained, built, self._snapshots, indexed)
            self._touched_groups.clear()
            self._pg_added.clear()
            self._pg_removed.clear()
        return snap

    def _assemble_delta(self, last: _Last, drained: set[str], loose: list[str],
                        nodes: list[Any] | None) -> tuple[Snapshot, list[str]] | None:
        """The snapshot assembled from the last one's jobs, visiting only the PodGroups that an event
        touched, that the sessions since changed (`drained`: the jobs' log), that were not kept, or that
        came or went; None when that cannot be the full assembly's outcome (then it is done in full)."""
        if not (self.job_deltas and last.ok and last.pc_version == self._pc_version and last.node_deletions == self._node_deletions
                and last.queue_keys == self._queue_keys):
            return None
        podgroups = self.records.podgroups
        visit = self._touched_groups | drained | last.unkept | self._pg_removed  # (drained: log and notes)
        added = {k for k in self._pg_added if k in podgroups}
        # keys added to a dict come last in it, in the order they were added
        tail = list(islice(reversed(podgroups), len(added)))[::-1] if added else []
        if len(added) != len(tail) or not added.issuperset(tail):
            return None
        held = self._queues
        if held is None or held[0] != self._queue_version:
            held = self._queues = (self._queue_version, {name: q for name, (_, q) in self.records.queues.items()})
        snap, built = assemble_delta(self.records, self._group_pods, loose, scheduler_names=self.scheduler_names,
                                     reuse=self._reuse, nodes=nodes, base=last.jobs, visit=visit, tail=tail,
                                     queues=held[1])
        queues = snap.queues
        if any(snap.jobs[uid].queue not in queues for uid in built):
            return None  # a job that leaves the session (`_drop_missing_queues`): the full assembly warns
        return snap, built

    def _keep(self, snap: Snapshot, last: _Last | None, drained: set[str], built: list[str] | None, number: int,
              indexed: bool) -> None:
        """Record which jobs the next snapshot may hand out again (`_kept`) and what this one handed
        out (`_last`), and give the snapshot its delta from the last one (`Snapshot.jobs_delta`)."""
        rec = self.records
        jobs = snap.jobs
        podgroups = rec.podgroups
        n_synthetic = len(jobs) - len(podgroups)
        log, notes = self._log, self._notes
        if built is not None:
            assert last is not None
            # the delta: only the PodGroups visited changed what `_kept` holds
            kept = self._kept
            for uid in self._pg_removed:
                kept.pop(uid, None)
            candidates: Iterable[str] = built
            for uid in built:
                kept.pop(uid, None)
            unkept: set[str] = set()
        elif indexed:
            # a job handed out again still qualifies (its task statuses are those it was built
            # with, its phase the PodGroup's: `_reuse` checked), with the entry it had; only the
            # jobs built now are tested
            prev = self._kept
            kept = {uid: prev[uid] for uid in self._hits if uid in jobs}
            candidates = jobs.keys() - kept.keys()
            unkept = set()
        else:
            kept = {}
            candidates = jobs.keys()
            unkept = set()
        group_pods = self._group_pods
        running, pending, succeeded, failed = _KEPT_STATUSES
        for uid in candidates:
            ji = jobs[uid]
            ji.log, ji.notes = log, notes
            pg = podgroups.get(uid)
            if pg is None:
                continue
            counts = ji.counts
            # a job that left a pod of its group out (on a node the cache lacks, a repeated uid)
            # would have to take it in once that changes, which no stamp records
            if (ji.tasks and ji.phase is pg[1].phase
                    and counts.get(running, 0) + counts.get(pending, 0) + counts.get(succeeded, 0)
                    + counts.get(failed, 0) == len(ji.tasks) == len(group_pods.get(uid, ()))):
                kept[uid] = (ji, self._stamp.get(uid, 0), self._pc_version, self._node_deletions)
            else:
                unkept.add(uid)
        self._kept = kept
        if built is not None:
            # no job left for a missing queue (`_assemble_delta`): the jobs for pods without a
            # PodGroup are the last ones
            synthetic = set(islice(reversed(jobs), n_synthetic)) if n_synthetic > 0 else set()
        else:
            synthetic = {uid for uid in jobs if uid not in podgroups}
        for uid in synthetic:
            jobs[uid].log, jobs[uid].notes = log, notes
        pg_jobs = dict(jobs)
        for uid in synthetic:
            del pg_jobs[uid]
        ok = len(pg_jobs) == len(podgroups)
        if built is not None and self.job_deltas:
            assert last is not None
            changed = set(built) | drained | synthetic | log
            # (a PodGroup added and removed again since the last snapshot was never handed out)
            gone = {uid for uid in self._pg_removed if uid in last.jobs and uid not in jobs}
            gone.update(uid for uid in last.synthetic if uid not in jobs)
            snap.jobs_delta = JobDelta(number, last.number, changed, gone, log, notes)
        else:
            snap.jobs_delta = JobDelta(number, None, set(), set(), log, notes)
        log.clear()
        self._last = _Last(number, pg_jobs, synthetic, unkept, self._pc_version, self._node_deletions,
                           self._queue_keys, ok)
        #: what the self-check reads (state/check.py): the uids this snapshot drained from the log
        self.last_drained = drained

    def _reuse(self, uid: str, nodes: frozenset[str]) -> JobInfo | None:
        hit = self._kept.get(uid)
        if hit is None:
            return None
        ji, stamp, pcv, removed = hit
        if stamp != self._stamp.get(uid, 0) or pcv != self._pc_version or not ji.allocated_as_added:
            return None
        rec = self.records.podgroups.get(uid)
        if rec is None or ji.phase is not rec[1].phase:
            return None
        if self._shared_uids and any(self._uids[t.uid] > 1 for t in ji.tasks.values()):
            return None  # a pod that arrived since with one of its uids may come first in a full assembly
        if removed != self._node_deletions:
            for t in ji.tasks.values():
                if t.node_name not in nodes:
                    return None
            self._kept[uid] = (ji, stamp, pcv, self._node_deletions)
        ji.conditions.clear()
        ji.nodes_fit_errors.clear()
        ji.failed_roles.clear()
        ji.job_fit_errors = ""
        self._hits.append(uid)
        # A session fills in vec and initial_status at open for every task that holds a node, and vec
        # and cols lazily for a task it compares: both follow from the request and the node table's
        # columns, and session open clears them when the columns are not the last session's
        # (framework/open_state.place_full). The rest a session writes to a task belongs to tasks it
        # placed, evicted or pipelined, which would have cleared allocated_as_added.
        return ji

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
