"""A stage's runs in the order the low-cost aligned allocator takes them, made Python tuples lazily.

`ArrayWindows.runs` sorts thousands of runs in numpy on a long stage window; the stage usually
takes the first few. Building the whole list of tuples cost more than evaluating every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np

#: a run as `Windows.runs` hands it out: (cost, end key, first position, end position, fit)
RunEntry = tuple[float, int, int, int, int]


class SortedRuns(Sequence[RunEntry]):
    """The runs that fit a gang in (cost, end key) order, as `ArrayWindows.runs` hands them out:
    the run's columns stay numpy arrays, each entry is made a Python tuple when first read, a
    chunk at a time (a stage usually reads the first few of thousands). `list(self)` is what the
    runs were before: every entry, in order."""

    __slots__ = ("_order", "_cols", "_done")

    def __init__(self, order: np.ndarray, *cols: np.ndarray) -> None:
        self._order = order
        self._cols = cols
        self._done: list[RunEntry] = []

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, i: int) -> RunEntry: ...

    @overload
    def __getitem__(self, i: slice) -> list[RunEntry]: ...

    def __getitem__(self, i: int | slice) -> RunEntry | list[RunEntry]:
        n = len(self._order)
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(n))]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("run index out of range")
        done = self._done
        while len(done) <= i:
            a = len(done)
            # chunks that double: reading all of them converts each entry once
            idx = self._order[a:min(n, a + max(_CHUNK, a))]
            done.extend(zip(*(c[idx].tolist() for c in self._cols)))
        return done[i]


#: the first chunk of runs made Python tuples at once
_CHUNK = 32
