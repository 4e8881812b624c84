"""The numpy node table: allocatable/idle/used/releasing/pipelined per node and resource column.

Node fit is per task x per node, the hottest path of a session. Keeping node state in arrays (one
column per resource) lets a task be fitted against every node in one vectorised step.
"""

from __future__ import annotations

import numpy as np

from apportion.resources import CPU, MEMORY, MIN_RESOURCE, PODS, Resource

#: tests switch this off: `add` and `remove` then store every row they change back into its array
#: (`a[row] -= req`), the reference of stepping the row's view in place (docs/semantics.md K56)
IN_ROW_VIEWS = True
#: tests switch this off: a new table then makes each node's allocatable row on its own (`vector`),
#: the reference of making them all as the rows of one array (`vectors`)
ROWS_AT_ONCE = True


class NodeTable:
    """Resource state of every session node, one row per node (rows in node-name order)."""

    def __init__(self, names: list[str], allocatable: list[Resource], extra_columns: set[str]) -> None:
        names_seen = {CPU, MEMORY, PODS}
        for node_alloc in allocatable:
            names_seen.update(node_alloc.scalars)
        names_seen.update(extra_columns)
        scalars = sorted(names_seen - {CPU, MEMORY})
        self.columns: list[str] = [CPU, MEMORY, *scalars]
        self.col: dict[str, int] = {c: i for i, c in enumerate(self.columns)}
        self.names = names
        self.index = {name: row for row, name in enumerate(names)}
        shape = (len(names), len(self.columns))
        if ROWS_AT_ONCE:
            # `vector` of every node's allocatable, made as the rows of one array (the same amounts in
            # the same places: `vectors` is `vector` row by row)
            self.allocatable = self.vectors(allocatable) if names else np.zeros(shape)
        else:
            self.allocatable = np.zeros(shape)
            for row, node_alloc in enumerate(allocatable):
                self.allocatable[row] = self.vector(node_alloc)
        self.idle = self.allocatable.copy()
        self.used = np.zeros(shape)
        self.releasing = np.zeros(shape)
        self.pipelined = np.zeros(shape)
        #: FutureIdle = Idle + Releasing - Pipelined, kept current by add/remove (read-only for callers).
        self.future = self.idle.copy()
        #: pods in the node view (predicates' pod-count filter): every task placed on the node.
        self.pod_count = np.zeros(len(names), dtype=np.int64)
        self.max_pods = self.allocatable[:, self.col[PODS]].copy()
        #: every row changed by add/remove, in order: readers that cache per-node answers recompute only
        #: the rows touched since they last looked (see framework/placement.py).
        self.touched: list[int] = []
        #: compare_columns by the request's scalar names
        self._compare_memo: dict[tuple[str, ...], np.ndarray] = {}

    # ------------------------------------------------------------ conversion
    def vector(self, r: Resource) -> np.ndarray:
        """The resource as a row of the table (its columns; names the table has no column for drop)."""
        v = np.zeros(len(self.columns))
        v[0] = r.cpu
        v[1] = r.memory
        for name, amount in r.scalars.items():
            column = self.col.get(name)
            if column is not None:
                v[column] = amount
        return v

    def compare_columns(self, r: Resource) -> np.ndarray:
        """Rule (a) compares cpu, memory and the scalars of the request (not the node's other scalars)."""
        # they depend only on the request's scalar names: one array per set of names, shared (read-only)
        names = tuple(r.scalars)
        try:
            memo = self._compare_memo
        except AttributeError:  # a table assembled field by field (framework/open_state.py)
            memo = self._compare_memo = {}
        cols = memo.get(names)
        if cols is None:
            idx = [0, 1] + [self.col[n] for n in names if n in self.col]
            cols = memo[names] = np.array(sorted(set(idx)), dtype=np.int64)
            cols.flags.writeable = False
        return cols

    def resource(self, arr: np.ndarray) -> Resource:
        """A row of the table back as a Resource (every scalar column, zeros included)."""
        r = Resource(float(arr[0]), float(arr[1]))
        for column in range(2, len(self.columns)):
            r.scalars[self.columns[column]] = float(arr[column])
        return r

    # ------------------------------------------------------------ views
    def future_idle(self) -> np.ndarray:
        """FutureIdle of every node (the table's own array: read, never write)."""
        return self.future

    def fits(self, req: np.ndarray, cols: np.ndarray, avail: np.ndarray) -> np.ndarray:
        """Rule (a) with tolerance: req <= avail on the compared columns, for every row at once."""
        available = avail[:, cols]
        request = req[cols]
        return np.all((request < available) | (np.abs(request - available) < MIN_RESOURCE), axis=1)

    def fits_row(self, row: int, req: np.ndarray, cols: np.ndarray, future: bool) -> bool:
        """`fits` for one node, against its FutureIdle (`future`) or its Idle."""
        available = (self.future if future else self.idle)[row, cols]
        request = req[cols]
        return bool(np.all((request < available) | (np.abs(request - available) < MIN_RESOURCE)))

    def future_idle_row(self, row: int) -> np.ndarray:
        """A copy of one node's FutureIdle."""
        return self.future[row].copy()

    # ------------------------------------------------------------ NodeInfo.AddTask / RemoveTask
    def add(self, row: int, req: np.ndarray, kind: str) -> None:
        """NodeInfo.AddTask on the row; kind: 'releasing', 'pipelined' or 'used' (every other on-node status)."""
        if not IN_ROW_VIEWS:
            self._add_reference(row, req, kind)
            return
        # `a[row] -= req` is the row view's in-place step and then a store of the view onto itself:
        # the step alone on the view (the same ufunc on the same memory) leaves the same amounts
        if kind == "pipelined":
            v = self.pipelined[row]
            v += req
            v = self.future[row]
            v -= req
        else:
            v = self.idle[row]
            v -= req
            v = self.used[row]
            v += req
            if kind == "releasing":
                v = self.releasing[row]
                v += req
            else:
                v = self.future[row]
                v -= req
        self.pod_count[row] += 1
        self.touched.append(row)

    def _add_reference(self, row: int, req: np.ndarray, kind: str) -> None:
        """`add` storing every row back (the reference of the in-view steps)."""
        if kind == "pipelined":
            self.pipelined[row] += req
            self.future[row] -= req
        else:
            self.idle[row] -= req
            self.used[row] += req
            if kind == "releasing":
                self.releasing[row] += req
            else:
                self.future[row] -= req
        self.pod_count[row] += 1
        self.touched.append(row)

    def add_many(self, rows: list[int], reqs: np.ndarray, kinds: list[str]) -> None:
        """`add` for many tasks at once, e.g. every task already on a node when a session opens.

        The sums are bit for bit those of `add` called in the same order: `ufunc.at` applies a row
        that repeats in sequence, and every array sees its rows in the order given."""
        if not rows:
            return
        self.apply_placements(np.asarray(rows, dtype=np.int64), reqs, kinds, 1)
        self.touched.extend(rows)

    def apply_placements(self, at: np.ndarray, reqs: np.ndarray, kinds: list[str], sign: int | np.ndarray) -> None:
        """The sums of `add_many` (sign 1, `reqs` as given) or of their undoing (sign -1, `reqs`
        already negated), without recording the rows as touched (a session open that carries the last
        open's table applies what changed since); `sign` may also give each placement its own."""
        pipelined = np.fromiter((kind == "pipelined" for kind in kinds), dtype=bool, count=len(kinds))
        releasing = np.fromiter((kind == "releasing" for kind in kinds), dtype=bool, count=len(kinds))
        on_node = ~pipelined
        if pipelined.any():
            np.add.at(self.pipelined, at[pipelined], reqs[pipelined])
        np.subtract.at(self.idle, at[on_node], reqs[on_node])
        np.add.at(self.used, at[on_node], reqs[on_node])
        if releasing.any():
            np.add.at(self.releasing, at[releasing], reqs[releasing])
        np.subtract.at(self.future, at[~releasing], reqs[~releasing])
        np.add.at(self.pod_count, at, sign)

    def vectors(self, resources: list[Resource]) -> np.ndarray:
        """`vector` of each resource, as the rows of one array."""
        out = np.zeros((len(resources), len(self.columns)))
        out[:, 0] = [r.cpu for r in resources]
        out[:, 1] = [r.memory for r in resources]
        column_of = self.col
        for out_row, r in enumerate(resources):
            for name, amount in r.scalars.items():
                column = column_of.get(name)
                if column is not None:
                    out[out_row, column] = amount
        return out

    def remove(self, row: int, req: np.ndarray, kind: str) -> None:
        """NodeInfo.RemoveTask: `add` undone, with the same kind."""
        if not IN_ROW_VIEWS:
            self._remove_reference(row, req, kind)
            return
        # the row views' in-place steps, as in `add`
        if kind == "pipelined":
            v = self.pipelined[row]
            v -= req
            v = self.future[row]
            v += req
        else:
            v = self.idle[row]
            v += req
            v = self.used[row]
            v -= req
            if kind == "releasing":
                v = self.releasing[row]
                v -= req
            else:
                v = self.future[row]
                v += req
        self.pod_count[row] -= 1
        self.touched.append(row)

    def _remove_reference(self, row: int, req: np.ndarray, kind: str) -> None:
        """`remove` storing every row back (the reference of the in-view steps)."""
        if kind == "pipelined":
            self.pipelined[row] -= req
            self.future[row] += req
        else:
            self.idle[row] += req
            self.used[row] -= req
            if kind == "releasing":
                self.releasing[row] -= req
            else:
                self.future[row] += req
        self.pod_count[row] -= 1
        self.touched.append(row)
