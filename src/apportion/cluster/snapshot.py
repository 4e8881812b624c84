"""The snapshot: everything one scheduling session reads about the cluster, as model objects.

The readers of outside formats (`apportion.kube`) build it; the engine opens sessions over it. The
scheduler configuration a cluster carries (Volcano's ConfigMap) stays raw text here: parsing it is the
framework's job (`framework.conf`), and the model does not depend on the framework.
"""

from __future__ import annotations

from dataclasses import field
from datetime import datetime
from typing import Any

from apportion.cluster.model import JobInfo, NodeInfo, QueueInfo, TaskInfo
from apportion.durations import newest
from apportion.lean_dataclass import dataclass

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"


@dataclass
class ConfText:
    """The text of a `volcano-scheduler.conf` found in the snapshot, where it was, and where in the
    snapshot's warnings the configuration's own warnings belong once it is parsed (the ConfigMap's place
    among the documents, so every warning reads in input order)."""

    text: str
    where: str
    warnings_at: int = 0
    #: set once the parsed configuration's warnings have joined the snapshot's (they join once).
    warnings_merged: bool = False


@dataclass
class JobDelta:
    """Which jobs of a snapshot are not as the last snapshot over the same cache handed them out
    (docs/semantics.md, cluster state K17). A job of this snapshot whose uid is in neither `changed`
    nor `log` is the last snapshot's JobInfo object, and nothing changed it since that snapshot was
    taken: its task statuses (`version`), its phase and the notes a session writes on a job
    (conditions, fit errors) are what they were then. So a pass that kept, per job of the last
    snapshot, what it found then needs to look again only at `changed`, `gone` and the uids logged
    since (`log`, which the jobs fill in as they change: `JobInfo.log`)."""

    #: this snapshot's number, and the number of the one before it over the same cache (None: there
    #: was none, or this snapshot was assembled in full and says nothing about what changed)
    snapshot: int
    since: int | None
    #: uids of this snapshot's jobs that are not handed out as they were (new objects, or changed since)
    changed: set[str] = field(default_factory=set)
    #: uids of the last snapshot's jobs that this one does not hold
    gone: set[str] = field(default_factory=set)
    #: the live log: uids of this snapshot's jobs changed since it was taken (`JobInfo.log`)
    log: set[str] = field(default_factory=set)
    #: the live set of uids of this snapshot's jobs a session wrote notes on since it was taken
    #: (`JobInfo.notes`: conditions, fit errors; the next snapshot clears them, and a job noted only is
    #: not in the next delta's `changed`)
    notes: set[str] = field(default_factory=set)

    def since_last(self, at: int | None) -> set[str] | None:
        """The uids to look at again for a pass that last looked at every job of snapshot `at`:
        `changed`, `gone` and the uids logged so far; None when that was not the last snapshot (then
        every job must be looked at)."""
        if at is None or self.since != at:
            return None
        return self.changed | self.gone | self.log


@dataclass
class Snapshot:
    """Everything one session needs, built from Kubernetes objects."""

    nodes: list[NodeInfo] = field(default_factory=list)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    #: tasks that hold node capacity but belong to no session job (other schedulers, dropped jobs).
    orphan_tasks: list[TaskInfo] = field(default_factory=list)
    #: the scheduler configuration a ConfigMap in the input carries, unparsed (None: none was given).
    conf_text: ConfText | None = None
    warnings: list[str] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    #: values derived from the snapshot that a caller carries from one snapshot to the next (the
    #: simulator does); each user keys its entry by the inputs it was computed from, so none goes stale.
    #: A caller that passes a memo replaces a QueueInfo that changes and never edits one in place:
    #: entries may be keyed by the object itself.
    memo: dict[str, Any] | None = None
    #: with a memo: a value equal to the last snapshot's while the nodes (names, allocatable, labels,
    #: taints, schedulability) are those of the last snapshot over the memo; None: unknown. Whoever
    #: changes `nodes` after the snapshot was taken sets it to None.
    nodes_key: Any = None
    #: with a memo: which jobs changed since the last snapshot over the same cache (see JobDelta);
    #: None: unknown. The delta speaks of `jobs`' uids and objects, not of their order: whoever
    #: replaces or adds a job object after the snapshot was taken sets it to None.
    jobs_delta: JobDelta | None = None
    #: with a memo: True when the snapshot's maker wrote no node's task map, so a node that is an object
    #: the last session over the memo opened with holds the map that session left it; session open then
    #: writes only the maps it or that session replaced (docs/semantics.md K46). Whoever writes a node's
    #: task map after the snapshot was taken sets it False.
    node_maps_as_left: bool = False

    def newest_time(self) -> datetime | None:
        """The newest creation or start time among the objects: the clock of a dump, which has none."""
        stamps: list[str] = [q.creation for q in self.queues.values()]
        for j in self.jobs.values():
            stamps.append(j.creation)
            for task in j.tasks.values():
                stamps.extend((task.creation, task.start_time))
        for o in self.orphan_tasks:
            stamps.extend((o.creation, o.start_time))
        return newest(stamps)

    def ensure_queue(self, name: str) -> None:
        """Add an empty queue of that name unless it exists (`root` is never reclaimable)."""
        if name not in self.queues:
            self.queues[name] = QueueInfo(name=name, reclaimable=name != ROOT_QUEUE)


def _same_item(a: tuple[str, QueueInfo], b: tuple[str, QueueInfo]) -> bool:
    return a[0] == b[0] and a[1] is b[1]


def same_queues(kept: list[tuple[str, QueueInfo]], known: dict[str, QueueInfo]) -> bool:
    """Whether a session's queues (`Snapshot.queues`) are the ones kept from an earlier session: the same
    names and the same objects, in the same order (what carries a session's queue-keyed answers on)."""
    return len(kept) == len(known) and all(map(_same_item, kept, known.items()))
