"""kube-scheduler's per-node pod view for the `predicates` and `nodeorder` plugins, and the session's
shared node index, both carried between sessions over a memo.

`NodeView` is the per-node pod view kube-scheduler's plugins read (`GenerateNodeMapAndSlice`, semantics
guide §6.5): every task on the node, updated by the session's allocate/deallocate events, so a pod
evicted in the session stops counting and a pipelined one counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field

import numpy as np

from apportion.cluster.model import NodeInfo, TaskInfo
from apportion.framework.session import EventHandler, Session
from apportion.lean_dataclass import dataclass
from apportion.plugins.k8s_matching import NodeIndex
from apportion.resources import GPU
from apportion.state import check

#: tests switch this off: an event's requests are then added to the node's sums and the row stored
#: back (`sums[row] += v`), the reference of stepping the row's view in place (docs/semantics.md K56)
IN_ROW_VIEW = True
#: columns of NodeView.sums
NZ_CPU, NZ_MEM, REQ_CPU, REQ_MEM, REQ_GPU = range(5)
#: a pod's (non-zero cpu, non-zero memory, cpu, memory, gpu), as `pod_requests` gives them
Requests = tuple[float, float, float, float, float]


@dataclass
class NodeView:
    """kube-scheduler's per-node pod view: pod count and requested sums, kept current by session events.

    `sums` holds, per node, what kube-scheduler's NodeInfo keeps: the non-zero requests (NonZeroRequested,
    for LeastAllocated/MostAllocated: columns NZ_CPU, NZ_MEM) and the actual requests (Requested, for
    BalancedAllocation: REQ_CPU, REQ_MEM, REQ_GPU). cpu is in millicores and memory in bytes, rounded up
    to integers per pod as resource.Quantity's MilliValue/Value do; the GPU sum stays in Volcano's
    milli-units (only ratios of it are used). One matrix so a score call gathers its rows in one step.
    The sums are float64 holding integers: exact up to 2**53 (8 PiB of memory), and an absurd snapshot
    quantity cannot overflow them as it would an int64.
    """

    nodes: list[NodeInfo]
    count: np.ndarray = field(init=False)
    sums: np.ndarray = field(init=False)
    _row_of: dict[str, int] = field(init=False)
    _placed: dict[str, int] = field(init=False)
    _vectors: dict[str, np.ndarray] = field(init=False)

    #: the node's rows by name, when the caller has them already (the node table's index)
    row_of: dict[str, int] | None = None
    #: (count, sums) to start from instead of adding up every node's tasks (see `session_node_view`)
    start: tuple[np.ndarray, np.ndarray] | None = None

    def __post_init__(self) -> None:
        n = len(self.nodes)
        self._row_of = self.row_of if self.row_of is not None else {node.name: i for i, node in enumerate(self.nodes)}
        self._placed = {}
        self._vectors = {}
        if self.start is not None:
            self.count, self.sums = self.start
            self.start = None
            return
        self.count = np.zeros(n, dtype=np.int64)
        self.sums = np.zeros((n, 5))
        # what _apply(i, t, 1) does task by task, in one step (add.at sums a repeated row in order)
        rows = [i for i, node in enumerate(self.nodes) for _ in node.tasks]
        if rows:
            tasks = [t for node in self.nodes for t in node.tasks.values()]
            reqs = requests_of(tasks) if VECTOR_REQUESTS else np.array([self.requests(t) for t in tasks])
            np.add.at(self.count, rows, 1)
            np.add.at(self.sums, rows, reqs)

    def requests(self, t: TaskInfo) -> tuple[float, float, float, float, float]:
        """pod_requests(t), computed once per task (kept on it: a task's requests never change)."""
        return task_requests(t)

    def _apply(self, row: int, t: TaskInfo, sign: int) -> None:
        self.count[row] += sign
        v = self._vectors.get(t.uid)
        if v is None:
            v = self._vectors[t.uid] = np.array(self.requests(t))
        # x - v is x + (-v) in IEEE arithmetic: the same sums as adding v * sign, without the product
        if not IN_ROW_VIEW:
            if sign > 0:
                self.sums[row] += v
            else:
                self.sums[row] -= v
            return
        # the row's view stepped in place: `sums[row] += v` is that step and then a store of the view
        # onto itself, which leaves the same amounts
        at = self.sums[row]
        if sign > 0:
            at += v
        else:
            at -= v

    def on_allocate(self, task: TaskInfo) -> None:
        """AllocateFunc: the pod joins its node's view (allocate, pipeline, undone eviction)."""
        row = self._row_of.get(task.node_name)
        if row is None:
            return
        self._placed[task.uid] = row
        self._apply(row, task, 1)

    def on_deallocate(self, task: TaskInfo) -> None:
        """DeallocateFunc: the pod leaves its node's view (eviction, undone allocation).

        The row is remembered from the allocate event because an undone allocation has already cleared
        `task.node_name` when the event fires; tasks placed before the session use their node name.
        """
        row = self._placed.pop(task.uid, None)
        if row is None:
            row = self._row_of.get(task.node_name)
        if row is None:
            return
        self._apply(row, task, -1)


#: the memo's entries: the last open's node view (`_CarriedView`) and node index (nodes key, index)
VIEW_MEMO = "k8s.node-view"
INDEX_MEMO = "k8s.node-index"
_EXACT = float(2**53)


@dataclass
class _CarriedView:
    """A node view as a session opened with it, before any event changed it: the session works on
    copies, and only the next open edits these arrays (in place, `UPDATE_IN_PLACE`)."""

    generation: int
    count: np.ndarray
    sums: np.ndarray
    #: a bound on every sum's magnitude (the sums are integers): while the bound plus what the next
    #: open adds and takes out stays below 2**52, that open's sums are integers below 2**53 without
    #: looking at them (as session open's node table, K18)
    bound: float = _EXACT


#: the bound below which sums of integers are exact (room for the rounding of the bound's own sum)
_BOUND = float(2**52)
#: tests switch this off: an open then copies the carried view's arrays before bringing them up to date,
#: and carries copies of the session's view as it opened (the reference of updating them in place, K41)
UPDATE_IN_PLACE = True


def _exact(arr: np.ndarray) -> bool:
    return bool(np.all(np.abs(arr) < _EXACT) and np.all(arr == np.floor(arr)))


def _bound(arr: np.ndarray) -> float:
    return float(np.abs(arr).max()) if arr.size else 0.0


def _same_requests(old: TaskInfo, new: TaskInfo, requests: Callable[[TaskInfo], Requests], checking: bool) -> bool:
    """Whether two tasks' kube requests are equal. A task that has not worked its requests out yet and
    holds the other's request object and non-zero amounts, all `pod_requests` reads, is given the
    other's (a task's requests never change)."""
    if (new.kube_requests is None and new.resreq is old.resreq and new.nonzero_cpu == old.nonzero_cpu
            and new.nonzero_memory == old.nonzero_memory):
        new.kube_requests = requests(old)
        if checking and new.kube_requests != pod_requests(new):
            raise check.StateCheckError(f"{check.ENV}: task {new.key} took requests of {old.key} that are not its own")
        return True
    return requests(old) == requests(new)


#: tests switch this off: the carried view is then brought up to date with rows and signs of its own
#: rather than the ones the node table took the same placements with (`OpenDelta.moves`, K46)
SHARE_MOVES = True
#: tests switch this off: a view added up in full then asks `pod_requests` of every task, one at a time
#: (the reference of `requests_of`)
VECTOR_REQUESTS = True


def requests_of(tasks: list[TaskInfo]) -> np.ndarray:
    """`np.array([pod_requests(t) for t in tasks])` in one step over the tasks' amounts (a view added up
    in full reads every placed task: 6,210 of them at a forecast's first session): cpu and memory
    rounded up by `np.ceil`, which is `math.ceil` for every finite float (an integer's float is exact
    below 2**53, and a float from 2**52 up is an integer already), with `+ 0.0` turning the `-0.0` that
    `np.ceil` gives for an amount in (-1, 0] into the `0.0` of `float(math.ceil(x))`; the GPU amounts
    as they are. A NaN or infinite amount goes to `pod_requests` task by task, which refuses it as
    before. The tasks' `kube_requests` are left unset (`task_requests` makes them when asked)."""
    raw = np.array([(t.nonzero_cpu, t.nonzero_memory, (r := t.resreq).cpu, r.memory, r.scalars.get(GPU, 0.0))
                    for t in tasks], dtype=np.float64)
    head = raw[:, :4]
    if not np.isfinite(head).all():
        return np.array([pod_requests(t) for t in tasks])
    raw[:, :4] = np.ceil(head) + 0.0
    if check.enabled():
        want = np.array([pod_requests(t) for t in tasks])
        if raw.dtype != want.dtype or raw.shape != want.shape or raw.tobytes() != want.tobytes():
            raise check.StateCheckError(f"{check.ENV}: the node view's requests made in one step differ from "
                                        "every task's pod_requests")
    return raw


def task_requests(t: TaskInfo) -> Requests:
    """pod_requests(t), computed once per task (kept on it: a task's requests never change)."""
    r = t.kube_requests
    if r is None:
        r = t.kube_requests = pod_requests(t)
    return r


def _view_start(ssn: Session) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The last open's view updated by the placements that changed since (`Session.open_delta`), with
    a bound on its sums, or None when it cannot be exact: no carried view of the open the delta starts
    from, a request that is not an integer below 2**53, or a node whose task map holds fewer tasks
    than were placed on it (two tasks with one key: the map keeps one)."""
    delta = ssn.open_delta
    memo = ssn.memo
    held = memo.get(VIEW_MEMO) if memo is not None else None
    if delta is None or not isinstance(held, _CarriedView) or held.generation != delta.since:
        return None
    # only this open reads the carried view (the next one carries its own, `session_node_view`): its
    # arrays are brought up to date where they are and carried on, the session's view is given copies
    count, sums = (held.count, held.sums) if UPDATE_IN_PLACE else (held.count.copy(), held.sums.copy())
    held.generation = -1  # (no later open may start from arrays this one may have changed)
    bound = held.bound
    removed, added = delta.removed, delta.added
    # the rows and signs the node table took `removed + added` with (none moved below: the same lists)
    moves = delta.moves if SHARE_MOVES else None
    req = task_requests
    if delta.replaced:
        # a task placed again as another object is in the table's row as before; the view counts it
        # again only if its kube requests moved
        checking = check.enabled()
        moved = [(o, n) for o, n in delta.replaced if not _same_requests(o[1], n[1], req, checking)]
        if moved:
            removed = removed + [o for o, _ in moved]
            added = added + [n for _, n in moved]
            moves = None
    if removed or added:
        # every request read and checked in one step; what left is taken out first, then what came
        both = removed + added
        if moves is not None and len(moves[0]) == len(both):
            rows, signs = moves
        else:
            rows = np.fromiter([e[0] for e in both], dtype=np.int64, count=len(both))
            signs = np.ones(len(both), dtype=np.int64)
            signs[:len(removed)] = -1
        reqs = np.array([req(e[1]) for e in both])
        largest = np.abs(reqs).max(axis=1)
        # `_exact(reqs)`: magnitudes below 2**53 (a NaN fails the comparison) and integers
        if not (largest.max() < _EXACT and (reqs == np.floor(reqs)).all()):
            return None
        cut = len(removed)
        # `ufunc.at` adds in the order given: the removed (negated, x - v being x + (-v)) and then the
        # added in one call each, the very additions of one call for each part. `reqs` is this step's
        # own: the removed rows are negated where they are (`x * -1.0`, what `reqs * signs[:, None]`
        # makes of them)
        np.add.at(count, rows, signs)
        if cut:
            reqs[:cut] *= -1
        np.add.at(sums, rows, reqs)
        # (one sum for both parts: a bound, as the two sums' total is; only whether it stays below
        # 2**52 is read, and the sums are looked at when it does not)
        bound += float(largest.sum())
    # `np.array_equal` of two arrays of one shape and dtype (the table's and the view's node rows)
    pods = ssn.table.pod_count
    if not (count.shape == pods.shape and bool((count == pods).all())):
        return None
    return count, sums, bound


def session_node_view(ssn: Session) -> NodeView:
    """The session's one NodeView, shared by predicates and nodeorder and kept current by one handler.

    A caller that carries a memo keeps the view as each session opened it; the next session starts
    from it and the placements that changed (docs/semantics.md, cluster-state K10). The sums are
    integers below 2**53, so their order cannot matter; anything else is added up in full. Under
    `APPORTION_CHECK_STATE=1` a view so started is compared with one added up in full."""
    view = ssn.shared.get("node_view")
    if view is None:
        started = _view_start(ssn)
        start, bound = (started[:2], started[2]) if started is not None else (None, _EXACT)
        # the carried arrays (updated in place) go on to the next open as they are: the session's view,
        # which its events change, works on copies
        keep = start if start is not None and UPDATE_IN_PLACE else None
        if keep is not None:
            start = (keep[0].copy(), keep[1].copy())
        view = NodeView(ssn.nodes, row_of=ssn.table.index, start=start)
        if start is not None and check.enabled():
            full = NodeView(ssn.nodes)
            if not (np.array_equal(full.count, view.count) and np.array_equal(full.sums, view.sums)):
                raise check.StateCheckError(f"{check.ENV}: a node view carried from the last session differs "
                                            "from one added up in full")
        generation = ssn.open_generation
        if ssn.memo is not None:
            # a view carried within the bound is exact as it stands; any other is looked at
            if generation is not None and not bound < _BOUND and _exact(view.sums):
                bound = _bound(view.sums)
            if generation is not None and bound < _BOUND:
                carried = keep if keep is not None else (view.count.copy(), view.sums.copy())
                ssn.memo[VIEW_MEMO] = _CarriedView(generation, carried[0], carried[1], bound)
            else:
                ssn.memo.pop(VIEW_MEMO, None)
            if bound < _BOUND and check.enabled() and not _exact(view.sums):
                raise check.StateCheckError(f"{check.ENV}: the node view's bound {bound} holds but its sums "
                                            "are not exact")
        ssn.shared["node_view"] = view
        ssn.add_event_handler(EventHandler(allocate=view.on_allocate, deallocate=view.on_deallocate))
    assert isinstance(view, NodeView)
    return view


def session_node_index(ssn: Session) -> NodeIndex:
    """The session's NodeIndex, shared by predicates and nodeorder; a caller that carries a memo keeps
    it while the nodes are those of the last snapshot (`Snapshot.nodes_key`): it reads only the nodes'
    names, labels, taints and schedulability, and the masks it caches are never written to."""
    index = ssn.shared.get("node_index")
    if index is None:
        key = ssn.snapshot.nodes_key if ssn.memo is not None else None
        held = ssn.memo.get(INDEX_MEMO) if ssn.memo is not None and key is not None else None
        if held is not None and held[0] == key:
            index = held[1]
            if check.enabled() and not index.same_nodes(ssn.nodes):
                raise check.StateCheckError(f"{check.ENV}: a node index carried from the last session reads "
                                            "other nodes than this session's")
        else:
            index = NodeIndex(ssn.nodes)
            if ssn.memo is not None:
                if key is not None:
                    ssn.memo[INDEX_MEMO] = (key, index)
                else:
                    ssn.memo.pop(INDEX_MEMO, None)
        ssn.shared["node_index"] = index
    assert isinstance(index, NodeIndex)
    return index


def pod_requests(t: TaskInfo) -> tuple[float, float, float, float, float]:
    """(non-zero cpu, non-zero memory, cpu, memory, gpu) of a pod, in kube-scheduler's integer units.

    cpu and memory are rounded up as MilliValue/Value round a quantity; they are returned as floats
    holding integers (see NodeView).
    """
    return (
        float(math.ceil(t.nonzero_cpu)),
        float(math.ceil(t.nonzero_memory)),
        float(math.ceil(t.resreq.cpu)),
        float(math.ceil(t.resreq.memory)),
        float(t.resreq.scalars.get(GPU, 0.0)),
    )


__all__ = [
    "NZ_CPU",
    "NZ_MEM",
    "REQ_CPU",
    "REQ_GPU",
    "REQ_MEM",
    "NodeView",
    "pod_requests",
    "requests_of",
    "session_node_index",
    "session_node_view",
]
