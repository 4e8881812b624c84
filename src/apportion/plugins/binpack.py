"""binpack: prefer the node that the task fills most (semantics guide §6.7, `plugins/binpack/binpack.go`).

Extension point: node order, registered only when `binpack.weight` is not 0.

For every dimension of the task's request (value >= 0.1) that has a configured weight (cpu, memory and
the names listed in `binpack.resources`; `pods` only if listed):

    dimension score = (request + node Used) / node allocatable x weight   (0 if allocatable or weight is 0)

and every such dimension adds its weight to the weight sum, even with 0 allocatable. If any dimension
overflows (request + Used > allocatable) the node's whole score is 0. The node score is
Σ dimension scores / Σ weights x 100 x binpack.weight, a float. `Used` includes releasing tasks and
excludes pipelined ones: it is the node table's `used`.
"""

from __future__ import annotations

import numpy as np

from apportion.cluster.model import TaskInfo
from apportion.framework import extension as ep
from apportion.framework.arguments import Arguments
from apportion.framework.interface import Plugin
from apportion.framework.placement_carry import row_state
from apportion.framework.session import Session
from apportion.plugins.k8s_matching import take_rows
from apportion.resources import CPU, MEMORY, MIN_RESOURCE

MAX_NODE_SCORE = 100


def binpack_weights(args: Arguments) -> tuple[int, dict[str, int]]:
    """calculateWeight: (binpack.weight, per-resource weights); negative resource weights become 1.

    cpu and memory are set after the `binpack.resources` list, so `binpack.cpu`/`binpack.memory` win
    over a `binpack.resources.cpu` entry, as in Volcano.
    """
    weight = args.get_int("binpack.weight", 1)
    cpu = args.get_int("binpack.cpu", 1)
    memory = args.get_int("binpack.memory", 1)
    resources: dict[str, int] = {}
    raw = args.raw.get("binpack.resources", "")
    listed = raw if isinstance(raw, str) else ""
    for name in (s.strip() for s in listed.split(",")):
        if not name:
            continue
        w = args.get_int(f"binpack.resources.{name}", 1)
        resources[name] = 1 if w < 0 else w
    resources[CPU] = 1 if cpu < 0 else cpu
    resources[MEMORY] = 1 if memory < 0 else memory
    return weight, resources


class BinpackPlugin(Plugin):
    """Volcano's binpack (`plugins/binpack/binpack.go`): node order that favours nodes the task fills most."""

    name = "binpack"

    def on_session_open(self, ssn: Session) -> None:
        """Read the weights and register the node-order score."""
        self.ssn = ssn
        self.weight, self.resources = binpack_weights(self.arguments)
        self._dims: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}
        if self.weight == 0:
            # Volcano: "binpack.weight is 0, binpack plugin is disabled" - no function registered.
            return
        ssn.add_fn(ep.NODE_ORDER, self.name, self.node_order)
        ssn.add_node_local_key(self.name, self.placement_key)
        # the score reads of a node its used amounts besides its allocatable (fixed for the nodes)
        row_state(ssn.placement, self.name, (ssn.table.used,))

    def _dimensions(self, task: TaskInfo) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The task's weighted dimensions, in ResourceNames order: (columns, requests, weights, Σ weights).

        Dimensions with weight 0 or without a table column (0 allocatable) add their weight to the sum
        but no score, so only the others are returned as arrays. Cached per task: requests do not change.
        """
        dims = self._dims.get(task.uid)
        if dims is not None:
            return dims
        table = self.ssn.table
        req = task.resreq
        names: list[tuple[str, float]] = []
        if req.cpu >= MIN_RESOURCE:
            names.append((CPU, req.cpu))
        if req.memory >= MIN_RESOURCE:
            names.append((MEMORY, req.memory))
        # Go iterates the scalar map in random order; sorting only fixes float summation order.
        names.extend((n, v) for n, v in sorted(req.scalars.items()) if v >= MIN_RESOURCE)
        cols: list[int] = []
        values: list[float] = []
        weights: list[float] = []
        weight_sum = 0
        for name, value in names:
            w = self.resources.get(name)
            if w is None:
                continue
            weight_sum += w
            col = table.col.get(name)
            if col is None or w == 0:
                continue
            cols.append(col)
            values.append(value)
            weights.append(float(w))
        dims = (np.array(cols, dtype=np.int64), np.array(values), np.array(weights), weight_sum)
        self._dims[task.uid] = dims
        return dims

    def placement_key(self, task: TaskInfo) -> tuple[bytes, bytes, int]:
        """The score of a node reads that node's row and the task's weighted dimensions only."""
        cols, request, _weights, weight_sum = self._dimensions(task)
        return cols.tobytes(), request.tobytes(), weight_sum

    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """NodeOrderFn (BinPackingScore) over the candidate rows."""
        table = self.ssn.table
        cols, request, weights, weight_sum = self._dimensions(task)
        if len(cols) == 0 or len(rows) == 0:
            return np.zeros(len(rows))
        capacity = take_rows(table.allocatable, rows)[:, cols]
        used_finally = take_rows(table.used, rows)[:, cols] + request
        has = capacity != 0
        # Any dimension over the node's allocatable makes the whole score 0 (ResourceBinPackingScore errs).
        overflow = np.any(has & (used_finally > capacity), axis=1)
        per_dim = np.where(has, used_finally * weights / np.where(has, capacity, 1.0), 0.0)
        score = per_dim.sum(axis=1)
        if weight_sum > 0:
            score /= float(weight_sum)
        score *= float(MAX_NODE_SCORE * self.weight)
        score[overflow] = 0.0
        return score
