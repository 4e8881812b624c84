"""allocate's bound (`places_at_most`, semantics F1 (c)) kept over a FutureIdle that moves a row at a time.

The early quiet test (forecast/quiet_early.py, F3) asks the bound of each request key at every
session it decides, over its copy of FutureIdle, and between two of them only the rows of the tasks
that left a node or came to one moved (one or two of 1,000). `KeptBound` keeps, per key, the bound's
count per node row and their sum, and works out again only the rows it was told moved. A row's count
is the same elementwise arithmetic `places_at_most` does on that row, so it is that function's value
for the row bit for bit; the counts are whole numbers of at most 2**40, so their sum as a Python int
is exact, and equals `places_at_most`'s float sum while that is below 2**53 (above, the bound is
worked out in full). The rows of the requests it reads are made once per request amounts (`RowsMade`).
"""

from __future__ import annotations

import math

import numpy as np

from apportion.cluster.node_table import NodeTable
from apportion.forecast.quiet import places_at_most
from apportion.resources import MIN_RESOURCE, Resource

#: where a float sum of whole counts may start to round
_EXACT_SUM = 2**53
#: the most a row counts (`places_at_most` clips there)
_MOST = float(1 << 40)
#: what `places_at_most` adds to FutureIdle before dividing (the table's tolerance, twice)
_SLACK = 2 * MIN_RESOURCE
#: the most keys kept: a key is a job's smallest request, and jobs of a forecast share few
_MOST_KEYS = 64


def row_counts(future: np.ndarray, least: np.ndarray) -> list[int]:
    """Per row of `future`, how many tasks requesting `least` `places_at_most` counts there (`least`
    requests something), as `places_at_most` works them out over every row."""
    dims = np.nonzero(least > 0)[0]
    per_node = np.floor((future[:, dims] + 2 * MIN_RESOURCE) / least[dims]).min(axis=1)
    return [int(c) for c in np.clip(per_node, 0, 1 << 40)]


def row_count(row: list[float], dims: list[tuple[int, float]]) -> int | None:
    """`row_counts` for one row (a list of floats; `dims`: the requested columns and amounts), in
    Python floats, which are the same IEEE doubles with the same rounding as numpy's; None when an
    amount is not a number (`places_at_most` then raises, and is asked)."""
    fewest = _MOST
    for d, amount in dims:
        q = (row[d] + 2 * MIN_RESOURCE) / amount
        if q != q:
            return None
        if q < fewest:
            fewest = q
    if fewest < 0:
        return 0
    # floor of the least quotient (capped at 2**40, a whole number) is the least of the floors
    return max(0, math.floor(fewest))


class KeptBound:
    """`places_at_most(future, least)` per request key over the one array `future`, which changes
    only on the rows added to `stale` before the next ask."""

    def __init__(self, future: np.ndarray) -> None:
        self.future = future
        #: key -> (the requested columns and amounts, the per-row counts, their sum)
        self._kept: dict[bytes, tuple[list[tuple[int, float]], list[int], int]] = {}
        #: rows of `future` changed since the last count: whoever moves a row adds it here
        self.stale: set[int] = set()
        #: rows worked out again, and bounds worked out over every row (for the benchmark's reading)
        self.patched = 0
        self.full = 0

    def places_at_most(self, key: bytes, least: np.ndarray) -> int:
        """`places_at_most(self.future, least)`, where `key` is `least.tobytes()`."""
        if self.stale:
            self._catch_up()
        got = self._kept.get(key)
        if got is not None:
            return got[2]
        dims = [(int(d), float(least[d])) for d in np.nonzero(least > 0)[0]]
        if not dims or not np.isfinite(self.future).all():
            return places_at_most(self.future, least)
        self.full += 1
        counts = row_counts(self.future, least)
        total = sum(counts)
        if total >= _EXACT_SUM:
            return places_at_most(self.future, least)  # whose float sum may round
        if len(self._kept) >= _MOST_KEYS:
            self._kept.clear()
        self._kept[key] = (dims, counts, total)
        return total

    def _catch_up(self) -> None:
        """Work the moved rows out again for every key kept."""
        stale, self.stale = self.stale, set()
        if not self._kept:
            return
        future = self.future
        rows = [(r, future[r].tolist()) for r in stale]
        for key in list(self._kept):
            dims, counts, total = self._kept[key]
            for r, row in rows:
                # `row_count(row, dims)` written out (once per row moved, per key, at every early test)
                fewest = _MOST
                for d, amount in dims:
                    q = (row[d] + _SLACK) / amount
                    if q != q:
                        self._kept.clear()  # not a number: `places_at_most` raises, and is asked
                        return
                    if q < fewest:
                        fewest = q
                new = 0 if fewest < 0 else max(0, math.floor(fewest))
                total += new - counts[r]
                counts[r] = new
            self.patched += len(rows)
            if total < _EXACT_SUM:
                self._kept[key] = (dims, counts, total)
            else:
                del self._kept[key]


#: the most request objects `RowsMade` keeps rows for: every task of the dump's templates has its own
#: (10,000 in the benchmark's forecast), and they live as long as the forecast
_MOST_REQUESTS = 1 << 16


class RowsMade:
    """Requests as rows of a node table (`NodeTable.vector`), read-only, since tasks share them: kept
    per request object (with it, so its id is not reused), per amounts (the dump's every task has its
    own request object, most of them equal), and one array per value, bit for bit: with one array for
    a gang's equal requests `least_request` takes it as their minimum instead of stacking their rows."""

    __slots__ = ("by_request", "by_amounts", "by_value")

    def __init__(self) -> None:
        self.by_request: dict[int, tuple[Resource, np.ndarray]] = {}
        self.by_amounts: dict[tuple[object, ...], np.ndarray] = {}
        self.by_value: dict[bytes, np.ndarray] = {}

    def row(self, table: NodeTable, r: Resource) -> np.ndarray:
        """`table.vector(r)` (the table's columns are those the rows were made for)."""
        hit = self.by_request.get(id(r))
        if hit is not None:
            return hit[1]
        if len(self.by_request) >= _MOST_REQUESTS:
            self.by_request.clear()
            self.by_amounts.clear()
            self.by_value.clear()
        # equal amounts make equal rows, bit for bit, but for a zero (0.0 equals -0.0) or a NaN
        by_amounts = all(v and v == v for v in (r.cpu, r.memory, *r.scalars.values()))
        amounts = (r.cpu, r.memory, *r.scalars.items())
        vec = self.by_amounts.get(amounts) if by_amounts else None
        if vec is None:
            vec = table.vector(r)
            vec = self.by_value.setdefault(vec.tobytes(), vec)
            vec.flags.writeable = False
            if by_amounts:
                self.by_amounts[amounts] = vec
        self.by_request[id(r)] = (r, vec)
        return vec
