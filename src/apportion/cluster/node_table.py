"""The numpy node table: allocatable/idle/used/releasing/pipelined per node and resource column.

Node fit is per task x per node, the hottest path of a session. Keeping node state in arrays (one
column per resource) lets a task be fitted against every node in one vectorised step.
"""

from __future__ import annotations

import numpy as np

from apportion.resources import CPU, MEMORY, MIN_RESOURCE, PODS, Resource


class NodeTable:
    """Resource state of every session node, one row per node (rows in node-name order)."""

    def __init__(self, names: list[str], allocatable: list[Resource], extra_columns: set[str]) -> None:
        cols = {CPU, MEMORY, PODS}
        for a in allocatable:
            cols.update(a.scalars)
        cols.update(extra_columns)
        scalars = sorted(cols - {CPU, MEMORY})
        self.columns: list[str] = [CPU, MEMORY, *scalars]
        self.col: dict[str, int] = {c: i for i, c in enumerate(self.columns)}
        self.names = names
        self.index = {n: i for i, n in enumerate(names)}
        n, c = len(names), len(self.columns)
        self.allocatable = np.zeros((n, c))
        for i, a in enumerate(allocatable):
            self.allocatable[i] = self.vector(a)
        self.idle = self.allocatable.copy()
        self.used = np.zeros((n, c))
        self.releasing = np.zeros((n, c))
        self.pipelined = np.zeros((n, c))
        #: FutureIdle = Idle + Releasing - Pipelined, kept current by add/remove (read-only for callers).
        self.future = self.idle.copy()
        #: pods in the node view (predicates' pod-count filter): every task placed on the node.
        self.pod_count = np.zeros(n, dtype=np.int64)
        self.max_pods = self.allocatable[:, self.col[PODS]].copy()
        #: every row changed by add/remove, in order: readers that cache per-node answers recompute only
        #: the rows touched since they last looked (see framework/placement.py).
        self.touched: list[int] = []

    # ------------------------------------------------------------ conversion
    def vector(self, r: Resource) -> np.ndarray:
        v = np.zeros(len(self.columns))
        v[0] = r.cpu
        v[1] = r.memory
        for name, val in r.scalars.items():
            j = self.col.get(name)
            if j is not None:
                v[j] = val
        return v

    def compare_columns(self, r: Resource) -> np.ndarray:
        """Rule (a) compares cpu, memory and the scalars of the request (not the node's other scalars)."""
        idx = [0, 1] + [self.col[n] for n in r.scalars if n in self.col]
        return np.array(sorted(set(idx)), dtype=np.int64)

    def resource(self, arr: np.ndarray) -> Resource:
        r = Resource(float(arr[0]), float(arr[1]))
        for j in range(2, len(self.columns)):
            r.scalars[self.columns[j]] = float(arr[j])
        return r

    # ------------------------------------------------------------ views
    def future_idle(self) -> np.ndarray:
        return self.future

    def fits(self, req: np.ndarray, cols: np.ndarray, avail: np.ndarray) -> np.ndarray:
        """Rule (a) with tolerance: req <= avail on the compared columns, for every row at once."""
        a = avail[:, cols]
        r = req[cols]
        return np.all((r < a) | (np.abs(r - a) < MIN_RESOURCE), axis=1)

    def fits_row(self, i: int, req: np.ndarray, cols: np.ndarray, future: bool) -> bool:
        a = (self.future if future else self.idle)[i, cols]
        r = req[cols]
        return bool(np.all((r < a) | (np.abs(r - a) < MIN_RESOURCE)))

    def future_idle_row(self, i: int) -> np.ndarray:
        return self.future[i].copy()

    # ------------------------------------------------------------ NodeInfo.AddTask / RemoveTask
    def add(self, i: int, req: np.ndarray, kind: str) -> None:
        """kind: 'releasing', 'pipelined' or 'used' (every other on-node status)."""
        if kind == "pipelined":
            self.pipelined[i] += req
            self.future[i] -= req
        else:
            self.idle[i] -= req
            self.used[i] += req
            if kind == "releasing":
                self.releasing[i] += req
            else:
                self.future[i] -= req
        self.pod_count[i] += 1
        self.touched.append(i)

    def add_many(self, rows: list[int], reqs: np.ndarray, kinds: list[str]) -> None:
        """`add` for many tasks at once, e.g. every task already on a node when a session opens.

        The sums are bit for bit those of `add` called in the same order: `ufunc.at` applies a row
        that repeats in sequence, and every array sees its rows in the order given."""
        if not rows:
            return
        r = np.asarray(rows, dtype=np.int64)
        pipelined = np.fromiter((k == "pipelined" for k in kinds), dtype=bool, count=len(kinds))
        releasing = np.fromiter((k == "releasing" for k in kinds), dtype=bool, count=len(kinds))
        on_node = ~pipelined
        if pipelined.any():
            np.add.at(self.pipelined, r[pipelined], reqs[pipelined])
        np.subtract.at(self.idle, r[on_node], reqs[on_node])
        np.add.at(self.used, r[on_node], reqs[on_node])
        if releasing.any():
            np.add.at(self.releasing, r[releasing], reqs[releasing])
        np.subtract.at(self.future, r[~releasing], reqs[~releasing])
        np.add.at(self.pod_count, r, 1)
        self.touched.extend(rows)

    def vectors(self, resources: list[Resource]) -> np.ndarray:
        """`vector` of each resource, as the rows of one array."""
        out = np.zeros((len(resources), len(self.columns)))
        out[:, 0] = [r.cpu for r in resources]
        out[:, 1] = [r.memory for r in resources]
        col = self.col
        for k, r in enumerate(resources):
            for name, val in r.scalars.items():
                j = col.get(name)
                if j is not None:
                    out[k, j] = val
        return out

    def remove(self, i: int, req: np.ndarray, kind: str) -> None:
        if kind == "pipelined":
            self.pipelined[i] -= req
            self.future[i] += req
        else:
            self.idle[i] += req
            self.used[i] -= req
            if kind == "releasing":
                self.releasing[i] -= req
            else:
                self.future[i] += req
        self.pod_count[i] -= 1
        self.touched.append(i)
