"""`diff`: one session under the current and under a proposed configuration, and what changes.

Both sessions run on the same cluster objects (loaded twice, so neither sees the other's decisions):
per queue the deserved share, realCapability and share the queue plugin reports; for each pending job
whether it starts (is bound), is pipelined (waits for evictions) or keeps waiting; and the running pods
the proposed configuration would evict (reclaim, preempt), with the reason: the eviction preview.
The current configuration is the one `apportion cycle` uses for the dump (its ConfigMap, else
Volcano's default); the proposal is another scheduler conf, or queue objects that replace the dump's
queues of the same name (and add new ones).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

from apportion.cluster.model import QueueInfo, TaskStatus
from apportion.cluster.snapshot import Snapshot
from apportion.engine import CycleResult, resolve_conf, run_cycle
from apportion.errors import InputError
from apportion.framework.conf import SchedulerConf
from apportion.kube import build_snapshot, read_documents
from apportion.lean_dataclass import dataclass

#: what `diff` compares for each queue (keys of the queue plugin's report)
QUEUE_FIELDS = ("deserved", "realCapability", "share")


@dataclass
class JobOutcome:
    """A pending job under both configurations: starts | pipelined | waits."""

    job: str
    queue: str
    current: str
    proposed: str

    @property
    def changed(self) -> bool:
        """Another outcome under the proposal."""
        return self.current != self.proposed


@dataclass
class Eviction:
    """A running pod the proposed configuration evicts."""

    pod: str
    job: str
    queue: str
    reason: str
    also_current: bool


@dataclass
class Diff:
    """What changes between the two sessions."""

    current_source: str
    proposed_source: str
    queues: list[dict[str, Any]]
    jobs: list[JobOutcome]
    evictions: list[Eviction]
    no_longer_evicted: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Anything changes: a queue, a job's outcome or an eviction."""
        return bool(self.queues or any(j.changed for j in self.jobs) or self.no_longer_evicted
                    or any(not e.also_current for e in self.evictions))

    def to_json(self) -> dict[str, Any]:
        """The JSON answer (`apportion diff -o json`)."""
        return {
            "current": self.current_source, "proposed": self.proposed_source, "changed": self.changed,
            "queues": self.queues,
            "jobs": [{"job": j.job, "queue": j.queue, "current": j.current, "proposed": j.proposed,
                      "changed": j.changed} for j in self.jobs],
            "evictions": [{"pod": e.pod, "job": e.job, "queue": e.queue, "reason": e.reason,
                           "alsoUnderCurrent": e.also_current} for e in self.evictions],
            "noLongerEvicted": self.no_longer_evicted,
            "warnings": self.warnings,
        }


def load_queue_file(path: str) -> dict[str, QueueInfo]:
    """Queue objects from a kubectl YAML file; anything else in it is an error naming the document."""
    docs = read_documents([path])
    for where, data in docs:
        if data.get("kind") != "Queue":
            raise InputError(f"expected only Queue objects, found kind {data.get('kind')!r}", where=where)
    if not docs:
        raise InputError("no Queue objects", where=path)
    return build_snapshot(docs).queues


def _pending_jobs(snap: Snapshot) -> dict[str, str]:
    """uid -> queue of the jobs with a waiting pod and none on a node."""
    out = {}
    for uid, j in snap.jobs.items():
        tasks = j.tasks.values()
        if any(t.status is TaskStatus.PENDING for t in tasks) and not any(
                t.node_name and t.status not in (TaskStatus.PENDING, TaskStatus.SUCCEEDED, TaskStatus.FAILED)
                for t in tasks):
            out[uid] = j.queue
    return out


def _outcome(result: CycleResult, snap: Snapshot, uid: str) -> str:
    job = snap.jobs.get(uid)
    if job is None:
        return "waits"
    keys = {t.key for t in job.tasks.values()}
    if keys & result.binds.keys():
        return "starts"
    if keys & result.pipelined.keys():
        return "pipelined"
    return "waits"


def _queue_changes(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name in sorted(set(a) | set(b)):
        qa, qb = a.get(name, {}), b.get(name, {})
        for f in QUEUE_FIELDS:
            va, vb = qa.get(f), qb.get(f)
            if va != vb:
                out.append({"queue": name, "field": f, "current": va, "proposed": vb})
    return out


def diff(load: Callable[[], Snapshot], *, conf: SchedulerConf | None = None,
         queues: dict[str, QueueInfo] | None = None, proposed_source: str = "") -> Diff:
    """Run the current and the proposed configuration over two fresh loads of the same cluster objects.

    `load` returns a new Snapshot on each call; `conf` and/or `queues` make up the proposal.
    """
    snap_a = load()
    snap_b = load()
    current = resolve_conf(snap_a, None)
    current_source = "the dump's ConfigMap" if snap_a.conf_text is not None else "Volcano's default conf"
    proposed = conf if conf is not None else current
    if queues:
        snap_b.queues.update(queues)
    pending = _pending_jobs(snap_a)
    res_a = run_cycle(snap_a, current)
    res_b = run_cycle(snap_b, proposed)
    jobs = [JobOutcome(uid, pending[uid], _outcome(res_a, snap_a, uid), _outcome(res_b, snap_b, uid))
            for uid in sorted(pending)]
    reasons = res_b.session.evict_reasons if res_b.session else {}
    task_job = {t.key: (j.uid, j.queue) for j in snap_b.jobs.values() for t in j.tasks.values()}
    ev_a = set(res_a.evictions)
    evictions = [Eviction(pod=k, job=task_job.get(k, ("", ""))[0], queue=task_job.get(k, ("", ""))[1],
                          reason=reasons.get(k, "evict"), also_current=k in ev_a) for k in sorted(res_b.evictions)]
    gone = sorted(ev_a - set(res_b.evictions))
    warnings = sorted(set(res_a.warnings) | set(res_b.warnings))
    return Diff(current_source=current_source, proposed_source=proposed_source or "the proposal",
                queues=_queue_changes(res_a.queues, res_b.queues), jobs=jobs, evictions=evictions,
                no_longer_evicted=gone, warnings=warnings)
