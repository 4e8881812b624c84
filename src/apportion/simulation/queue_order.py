"""The queues a simulated session sees, in the order sessions have always seen them (`Simulator._snapshot`):
the scenario's in its order, then the plan follower's children, then root, then the cache's others in
its order.

Worked out name by name at every snapshot, that order cost a forecast two passes over its hundred
queues per session although neither the cache's queues nor the scenario's change there. `QueueOrder`
keeps the names it last worked the order out from (the cache's in its order, the scenario's, the
children's) when that order was the cache's own and every queue the cache's object; while the names
are those, the session's queues are the cache's dict copied (docs/semantics.md F13: the order is a
function of those names alone, and so are the objects, each the cache's under its name).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.state import check

#: copy the cache's dict while the names the order is worked out from are the last snapshot's and that
#: order was the cache's own; False: order the queues name by name at every snapshot (the reference)
QUEUE_ORDER_KEPT = True


class QueueOrder:
    """A simulator's session queues from its cache's (see the module); one per simulator."""

    def __init__(self) -> None:
        #: the root queue sessions see when the scenario and the cache have none: one object for every
        #: session, as the cache's queues are (plugins keep what a queue decides keyed by the object,
        #: capacity's tree inputs, and sessions never edit one)
        self.root: QueueInfo | None = None
        #: the names the last order was worked out from, when it was the cache's own (None: work it out)
        self.names: tuple[tuple[str, ...], ...] | None = None

    def queues(self, held: dict[str, QueueInfo], scenario: Mapping[str, QueueInfo],
               children: Mapping[str, Iterable[QueueInfo]], hierarchical: bool, checking: bool
               ) -> dict[str, QueueInfo]:
        """The cache's queues `held` as a session sees them, in a new dict (`scenario`: the scenario's
        queues; `children`: the plan follower's, per plan; `hierarchical`: root is added when
        missing). Under the self-check a copy is compared with the order worked out again."""
        names = (tuple(held), tuple(scenario), tuple(q.name for kids in children.values() for q in kids))
        if QUEUE_ORDER_KEPT and self.names == names:
            queues = dict(held)
            if checking and list(queues) != list(self.reference(held, scenario, children, hierarchical)):
                raise check.StateCheckError(f"{check.ENV}: the session's queues are not in the order worked out")
            return queues
        queues = self.reference(held, scenario, children, hierarchical)
        self.names = names if list(queues) == list(held) and all(
            q is held[name] for name, q in queues.items()) else None
        return queues

    def reference(self, held: dict[str, QueueInfo], scenario: Mapping[str, QueueInfo],
                  children: Mapping[str, Iterable[QueueInfo]], hierarchical: bool) -> dict[str, QueueInfo]:
        """`queues` worked out name by name (the reference)."""
        queues = {name: held[name] for name in scenario if name in held}
        for kids in children.values():
            for q in kids:
                queues[q.name] = held[q.name]
        if hierarchical and ROOT_QUEUE not in queues:
            root = held.get(ROOT_QUEUE)
            if root is None:
                if self.root is None:
                    self.root = QueueInfo(name=ROOT_QUEUE, reclaimable=False)
                root = self.root
            queues[ROOT_QUEUE] = root
        for name, q in held.items():
            queues.setdefault(name, q)
        return queues


class CacheQueueOrder(QueueOrder):
    """The queues in the order a live scheduler cache holds them, for a simulation that stands for a
    live cluster (the service's forecast): a queue keeps its place while it exists, the queues that
    come (the plan followers' new reservation queues) go after every other, in name order as the
    service publishes them (service/live.py), and root, when the conf is hierarchical and no queue
    has that name, comes last, where `engine.prepare` adds it. `initial`: the cache's order at the
    start."""

    def __init__(self, initial: Iterable[str]) -> None:
        super().__init__()
        self.order: dict[str, None] = dict.fromkeys(initial)

    def queues(self, held: dict[str, QueueInfo], scenario: Mapping[str, QueueInfo],
               children: Mapping[str, Iterable[QueueInfo]], hierarchical: bool, checking: bool
               ) -> dict[str, QueueInfo]:
        """`held` in the cache's order (see the class)."""
        order = self.order
        for name in [n for n in order if n not in held]:
            del order[name]
        for name in sorted(n for n in held if n not in order and n != ROOT_QUEUE):
            order[name] = None
        queues = {name: held[name] for name in order}
        if ROOT_QUEUE in queues:
            pass  # the cache's own root queue, in its place
        elif ROOT_QUEUE in held:
            queues[ROOT_QUEUE] = held[ROOT_QUEUE]  # (the one `prepare` added to the start state)
        elif hierarchical:
            if self.root is None:
                self.root = QueueInfo(name=ROOT_QUEUE, reclaimable=False)
            queues[ROOT_QUEUE] = self.root
        return queues
