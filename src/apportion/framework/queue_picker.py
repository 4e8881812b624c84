"""Picking the next queue: enqueue and allocate pop the best queue, work on it, and push it back.

Volcano keeps the queues in a heap whose keys go stale as shares move; apportion picks the true best at
every pop (semantics guide §4.4, a deviation for determinism). The reference is `ScanPicker`: a scan
of the queues in list order that keeps the first one no other beats, with the popped queue pushed
back at the end. A queue-order plugin may offer a faster picker for its own order; it must pick what
the scan picks, and fall back to the scan whenever it cannot be sure (see the capacity plugin's tree
picker).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

from apportion.cluster.model import QueueInfo

T = TypeVar("T")


def pop_best_index(items: Sequence[T], compare: Callable[[T, T], int]) -> int:
    """The index of the first item no later item beats (a left-to-right scan): the one scan behind every
    best-first pop (queues here and in capacity's picker, jobs in the actions' pop_best)."""
    best_i = 0
    for i in range(1, len(items)):
        if compare(items[i], items[best_i]) < 0:
            best_i = i
    return best_i


class QueuePicker(Protocol):
    """The queues still to visit, best first under the session's queue order."""

    def pop(self) -> QueueInfo:
        """Remove and return the best queue."""
        ...

    def push(self, queue: QueueInfo) -> None:
        """Put a popped queue back, to be ordered again."""
        ...

    def __len__(self) -> int: ...

    def drain_order(self, has_work: Callable[[str], bool]) -> Iterator[QueueInfo] | None:
        """For a caller that pops a queue, works on it if `has_work(name)` (one step, which moves no
        share: enqueue admitting a job) and pushes it back, and drops it otherwise: the queues it would
        work on, one per step, skipping the pops of queues without work. None when the picker cannot
        tell. The picker is spent afterwards."""
        ...


class ScanPicker:
    """The reference picker: a scan in list order; a pushed queue goes to the end."""

    def __init__(self, queues: Iterable[QueueInfo], compare: Callable[[QueueInfo, QueueInfo], int]) -> None:
        self.items = list(queues)
        self.compare = compare

    def pop(self) -> QueueInfo:
        """Remove and return the first queue no later one beats."""
        return self.items.pop(pop_best_index(self.items, self.compare))

    def push(self, queue: QueueInfo) -> None:
        """Append the queue at the end of the scan."""
        self.items.append(queue)

    def __len__(self) -> int:
        return len(self.items)

    def drain_order(self, has_work: Callable[[str], bool]) -> Iterator[QueueInfo] | None:
        """None: the reference leaves the caller to pop."""
        return None


#: a plugin's picker factory: (queues in list order, the session's full comparison) -> picker
PickerFactory = Callable[[Iterable[QueueInfo], Callable[[QueueInfo, QueueInfo], int]], QueuePicker]
