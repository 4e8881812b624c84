"""What session open's node side is made of (framework/open_state.py keeps it between sessions,
framework/open_reference.py rebuilds it in full for the self-check): the session members it reads, a
placement entry, the base kept from the last open and the delta handed to the plugins' node views, and
the helpers both the kept and the full placement use."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import field
from typing import Any, Protocol

import numpy as np

from apportion.cluster.model import (
    ON_NODE_STATUSES,
    PIPELINED,
    RELEASING,
    JobInfo,
    NodeInfo,
    PodGroupPhase,
    TaskInfo,
    TaskStatus,
)
from apportion.cluster.node_table import NodeTable
from apportion.cluster.snapshot import Snapshot
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource


class Session(Protocol):
    """What the open state reads and sets on the session being opened (the session implements it;
    naming the members here rather than importing the session keeps the framework free of import
    cycles, as `placement.PlacementSession` does)."""

    snapshot: Snapshot
    jobs: dict[str, JobInfo]
    nodes: list[NodeInfo]
    node_by_name: dict[str, NodeInfo]
    memo: dict[str, Any] | None
    table: NodeTable
    total_resource: Resource
    shared_node_tasks: bool
    open_generation: int | None
    #: the rows whose task map the session replaced by a copy of its own (filled in as it goes)
    _own_rows: set[int]


#: one placement: (row, task, kind, vector, job uid or None for an orphan, position of the task in its
#: job or among the orphans)
Entry = tuple[int, TaskInfo, str, np.ndarray, str | None, int]


#: what the base holds of one job: the job, its version, its placements, its scalar names, its phase
Held = tuple[JobInfo, int, list[Entry], frozenset[str], PodGroupPhase]


def node_kind(status: TaskStatus) -> str | None:
    """How a task of this status occupies a node's row: releasing, pipelined, used, or not at all."""
    if status is RELEASING:
        return "releasing"
    if status is PIPELINED:
        return "pipelined"
    if status in ON_NODE_STATUSES:
        return "used"
    return None


#: `node_kind` of every status, for the loops over tasks at open
KIND_OF = {st: node_kind(st) for st in TaskStatus}


@dataclass
class OpenDelta:
    """What changed between the last open (`since`) and this one: placements gone and placements new.
    Per-node views kept by plugins apply it to their own state of generation `since`."""

    since: int
    generation: int
    #: the placements the node table took out and put in
    removed: list[Entry]
    added: list[Entry]
    #: uids of the jobs of the last open that are not handed out unchanged (gone or changed), and of
    #: this open's jobs that are new or changed; every other job is the last open's object, with the
    #: task statuses (`JobInfo.version`) and phase it had then
    gone: list[str]
    changed: list[str]
    #: (last open's placement, this open's) of a changed job's task held again as another TaskInfo with
    #: the same key, row, kind, position and request (so the same table row): neither in `removed` nor
    #: in `added`, the node table is not touched by them (docs/semantics.md K31)
    replaced: list[tuple[Entry, Entry]] = field(default_factory=list)
    #: the rows and signs (-1 taken out, 1 put in) of `removed + added`, in that order, as the node
    #: table took them (None: it took none); never written to
    moves: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class OpenBase:
    """The node side of the last open, before its session changed anything (never edited by the
    session: the next open builds new arrays and new task maps for the rows it changes; the job map
    and the lists of rows and task maps, which only the next open reads, are handed on to the next
    base and updated there)."""

    nodes_key: Any
    columns: tuple[str, ...]
    generation: int
    table: NodeTable
    total: Resource
    #: the scalar names the nodes' allocatable lists (the columns are these, the jobs' and cpu, memory)
    node_scalars: frozenset[str]
    #: per row, the placements in the full order, and the task map built from them
    rows: list[list[Entry]]
    node_tasks: list[dict[str, TaskInfo]]
    #: per job uid: the job, its version and phase at open, its placements and its scalar names
    jobs: dict[str, Held]
    orphans: list[Entry]
    #: how many jobs list each scalar name
    scalar_counts: Counter[str]
    #: the job uids in the order of that open
    order: list[str]
    #: the snapshot that open was over (`JobDelta.snapshot`; None: unknown): the next open may look at
    #: the jobs its delta names only (docs/semantics.md K17)
    snapshot: int | None = None
    #: a bound on every amount of the table's arrays (a base's amounts are integers): while the bound
    #: plus what the next open adds and takes out stays below 2**52, that open's sums are exact
    #: without looking at the table (docs/semantics.md K18)
    bound: float = float(2**53)
    #: each job uid's position in `order` (made when first needed, handed on with an unchanged order)
    positions: dict[str, int] | None = None
    #: the rows whose task map that open made anew (an incremental open's; a full one made every row's)
    remapped: list[int] = field(default_factory=list)
    #: the session's map of nodes by name at that open (`Session.node_by_name`): a later session given
    #: the same object has the same node objects in the same order (session.py `_node_by_name`)
    node_map: dict[str, NodeInfo] | None = None
    #: the rows whose task map that open's session replaced (`Session._own_rows`, filled in as it goes;
    #: None: unknown)
    written: set[int] | None = None
    #: that open's number among the opens that handed out maps (open_rows.py `MapTurns`)
    map_turn: int = 0


def scalar_names(job: JobInfo) -> frozenset[str]:
    """The scalar names the job's tasks request, counted afresh (`job_scalar_names` keeps them)."""
    # kept on the job (JobInfo.derive): its tasks' requests do not change while it is kept
    return frozenset(n for t in job.tasks.values() for n in t.resreq.scalars)


def job_scalar_names(job: JobInfo) -> frozenset[str]:
    """The scalar names the job's tasks request (derived once per job version)."""
    return job.derive("scalar-names", None, lambda: scalar_names(job))


def table_for(ssn: Session, node_scalars: frozenset[str], extra: Iterable[str]) -> NodeTable:
    """An empty node table over the session's nodes, with a column per scalar name given."""
    return NodeTable([n.name for n in ssn.nodes], [n.allocatable for n in ssn.nodes], set(extra) | node_scalars)


def nodes_scalar_names(nodes: list[NodeInfo]) -> frozenset[str]:
    """The scalar names the nodes' allocatable lists."""
    return frozenset(n for node in nodes for n in node.allocatable.scalars)


def fork_table(base: NodeTable) -> NodeTable:
    """A table for one session: the base's state, in arrays of its own (the static ones shared)."""
    t = NodeTable.__new__(NodeTable)
    t.columns = base.columns
    t.col = base.col
    t.names = base.names
    t.index = base.index
    t.allocatable = base.allocatable
    t.max_pods = base.max_pods
    t.idle = base.idle.copy()
    t.used = base.used.copy()
    t.releasing = base.releasing.copy()
    t.pipelined = base.pipelined.copy()
    t.future = base.future.copy()
    t.pod_count = base.pod_count.copy()
    t.touched = []
    return t


def snapshot_number(ssn: Session) -> int | None:
    """The snapshot the session is over (`JobDelta.snapshot`), or None when unknown."""
    delta = ssn.snapshot.jobs_delta
    return delta.snapshot if delta is not None else None


def table_columns(node_scalars: frozenset[str], extra: set[str]) -> tuple[str, ...]:
    """NodeTable's columns for these names: cpu, memory, then the scalars sorted (pods always listed)."""
    scalars = sorted((set(node_scalars) | extra | {"pods"}) - {"cpu", "memory"})
    return ("cpu", "memory", *scalars)


__all__: list[str] = ["Entry", "Held", "KIND_OF", "OpenBase", "OpenDelta", "Session", "fork_table", "job_scalar_names", "node_kind",
                      "nodes_scalar_names", "scalar_names", "snapshot_number", "table_columns", "table_for"]
