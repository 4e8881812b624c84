"""A session's queues kept to tell whether a later session has the same ones (docs/semantics.md K55).

What carries a session's queue-keyed answers on to the next (enqueue's backlog, capacity's bucket plans)
holds while the later session's queues (`Snapshot.queues`) are the kept ones: the same names and the same
QueueInfo objects, in the same order (`cluster.snapshot.same_queues`, the reference). `KeptQueues` keeps
the names and the objects in two lists, so the comparison runs in C over both (an identity test per
object, an equality test per name) rather than a Python call per queue.
"""

from __future__ import annotations

from operator import eq, is_

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import same_queues

#: tests switch this off: the kept queues are compared item by item (`same_queues`, the reference)
lean_compare = True


class KeptQueues:
    """The queues of one session (names and QueueInfo objects, in order)."""

    __slots__ = ("names", "objects")

    def __init__(self, known: dict[str, QueueInfo]) -> None:
        self.names = list(known)
        self.objects = list(known.values())

    def same(self, known: dict[str, QueueInfo]) -> bool:
        """Whether `known` holds the same names and the same objects, in the same order."""
        if not lean_compare:
            return same_queues(list(zip(self.names, self.objects)), known)
        # the lengths are equal first, so neither map stops at the shorter
        return (len(self.names) == len(known) and all(map(is_, self.objects, known.values()))
                and all(map(eq, self.names, known)))

    def items(self) -> list[tuple[str, QueueInfo]]:
        """The kept (name, QueueInfo) pairs, in order."""
        return list(zip(self.names, self.objects))

