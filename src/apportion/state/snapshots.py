"""How the scheduler cache hands a session its snapshot: assembled in full, or, for a caller that runs
session after session (`keep=True`), from the last snapshot's jobs, visiting only what changed since,
with the jobs' delta the session's passes read (docs/semantics.md K17).

`SnapshotKeeping` is a part of `SchedulerCache` (state/cache.py), which holds the state these methods
read; it lives apart so that the cache's module stays about events and this one about snapshots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import islice
from typing import Any

from apportion.cluster.model import JobInfo, NodeInfo, TaskStatus
from apportion.cluster.snapshot import JobDelta, Snapshot
from apportion.kube.build import assemble, assemble_delta, assemble_indexed
from apportion.kube.records import Records
from apportion.lean_dataclass import dataclass

#: a job whose every task is in one of these is handed out again while nothing changed it: a session
#: changes no such task but by placing, evicting or pipelining it, which clears `allocated_as_added`
_KEPT_STATUSES = (TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.SUCCEEDED, TaskStatus.FAILED)


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



class SnapshotKeeping:
    """The snapshot side of `SchedulerCache`: `snapshot` and what it keeps from one to the next."""

    # the cache's state these methods read and write (set in SchedulerCache.__init__)
    job_deltas: bool
    scheduler_names: tuple[str, ...]
    records: Records
    pods_by_node: dict[str, set[str]]
    last_drained: set[str]
    _stamp: dict[str, int]
    _pc_version: int
    _kept: dict[str, tuple[JobInfo, int, int, int]]
    _node_deletions: int
    _hits: list[str]
    _node_version: int
    _token: object
    _node_infos: tuple[int, list[NodeInfo]] | None
    _group_pods: dict[str, dict[str, int]]
    _loose: dict[str, int]
    _uids: Counter[str]
    _shared_uids: int
    _log: set[str]
    _notes: set[str]
    _touched_groups: set[str]
    _pg_added: set[str]
    _pg_removed: set[str]
    _queue_keys: int
    _queue_version: int
    _queues: tuple[int, dict[str, Any]] | None
    _groupless: set[str]
    _last: _Last | None
    _snapshots: int
    #: the node list of the last snapshot when its caller said no session saw it (`nodes_unseen`)
    _unseen: list[NodeInfo] | None = None

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
        unseen, self._unseen = self._unseen, None
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
        # (`<=` looks at the nodes that hold pods alone, not at every node as a difference would)
        if keep and copy and not self._shared_uids and self.pods_by_node.keys() <= rec.nodes.keys():
            indexed = True
            # only the pods of jobs that are not kept are visited (the pods' index above)
            loose = list(self._loose.items())
            for group in self._groupless:
                loose.extend(self._group_pods[group].items())
            loose.sort(key=lambda kv: kv[1])
            held = self._node_infos
            nodes = held[1] if held is not None and held[0] == self._node_version else None
            as_is = nodes is not None and nodes is unseen
            step = (self._assemble_delta(last, drained | noted, [k for k, _ in loose], nodes, as_is)
                    if last is not None else None)
            if step is not None:
                snap, built = step
            else:
                self._hits = []
                snap = assemble_indexed(rec, self._group_pods, [k for k, _ in loose],
                                        scheduler_names=self.scheduler_names, reuse=self._reuse, nodes=nodes,
                                        unseen=as_is)
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

    def nodes_unseen(self, nodes: list[NodeInfo]) -> None:
        """Say that no session saw `nodes`, the node list of the snapshot just taken with `keep=True`
        (its caller put nodes of its own in their place: a simulation whose start state gives them).
        While the nodes stay, the next snapshot hands that list out again as it is, rather than
        emptying each node's task map; it must then be handed to no one else."""
        held = self._node_infos
        self._unseen = nodes if held is not None and held[1] is nodes else None

    def _assemble_delta(self, last: _Last, drained: set[str], loose: list[str],
                        nodes: list[Any] | None, unseen: bool = False) -> tuple[Snapshot, list[str]] | None:
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
                                     queues=held[1], unseen=unseen)
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

