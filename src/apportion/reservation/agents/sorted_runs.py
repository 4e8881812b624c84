"""A stage's runs in the order the low-cost aligned allocator takes them, made Python tuples lazily.

`ArrayWindows.runs` hands out thousands of runs on a long stage window; the stage usually takes
the first few, often only the first (a stage of one gang). Building the whole list of tuples cost
more than evaluating every run, and sorting them all a tenth of a service submit: the first entry
is found by a minimum, and the runs are sorted only when a later one is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np

#: a run as `Windows.runs` hands it out: (cost, end key, first position, end position, fit)
RunEntry = tuple[float, int, int, int, int]


class NoMoreRuns(IndexError):
    """Read past a stage's last run. The lazy orders (`SortedRuns`, `CheapestFirst`) raise this for
    their end and nothing else, so that an IndexError from a fault inside one (numpy indexing) is an
    error, not taken for the end of the candidates (`aligned._entry`)."""


class SortedRuns(Sequence[RunEntry]):
    """The runs that fit a gang in (cost, end key) order, as `ArrayWindows.runs` hands them out:
    the run's columns stay numpy arrays, each entry is made a Python tuple when first read, a
    chunk at a time (a stage usually reads the first few of thousands). `list(self)` is what the
    runs were before: every entry, in order."""

    __slots__ = ("_order", "_cols", "_done", "_n")

    def __init__(self, order: np.ndarray | None, *cols: np.ndarray) -> None:
        """`order` sorts the columns' rows; None: they are sorted by the first two columns (cost,
        end key; ties in row order, as `np.lexsort((key, cost))`), when a second entry is read."""
        self._order = order
        self._cols = cols
        self._done: list[RunEntry] = []
        self._n = len(cols[0]) if order is None else len(order)

    def __len__(self) -> int:
        return self._n

    def _first(self) -> int:
        """The row that sorts first: the least cost, then the least end key, then the first row."""
        cost, key = self._cols[0], self._cols[1]
        tied = np.flatnonzero(cost == cost.min())
        return int(tied[int(np.argmin(key.take(tied)))]) if len(tied) > 1 else int(tied[0])

    @overload
    def __getitem__(self, i: int) -> RunEntry: ...

    @overload
    def __getitem__(self, i: slice) -> list[RunEntry]: ...

    def __getitem__(self, i: int | slice) -> RunEntry | list[RunEntry]:
        n = self._n
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(n))]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise NoMoreRuns("run index out of range")
        done = self._done
        if not done and i == 0 and self._order is None:
            r = self._first()
            done.append(tuple(c[r].item() for c in self._cols))
            return done[0]
        if len(done) <= i:
            if self._order is None:
                self._order = np.lexsort((self._cols[1], self._cols[0]))
            order = self._order
            while len(done) <= i:
                a = len(done)
                # chunks that double: reading all of them converts each entry once
                idx = order[a:min(n, a + max(_CHUNK, a))]
                done.extend(zip(*(c[idx].tolist() for c in self._cols)))
        return done[i]


#: the first chunk of runs made Python tuples at once
_CHUNK = 32
