"""The cycle collector's schedule in a long-running server.

Python's full collections scan every tracked object, and the server holds hundreds of thousands
(each reservation's step function alone is some sixty): with the plan growing by hundreds of
reservations a second, full collections came every few seconds and stalled every request for up
to 0.1-0.5 s. Almost nothing the server keeps is cyclic garbage (it is freed by reference
counting), so between two ticks everything alive is frozen out of the collections (`gc.freeze`):
the young collections still find the cycles made since, and a full collection runs only once
the frozen objects have grown to `GROWTH` times what was alive after the last one (cyclic
garbage frozen in the meantime is freed then), instead of once they have grown by a quarter.
The measurements are in benchmarks/README.md (issue 18, fourth session).
"""

from __future__ import annotations

import gc

#: a full collection once the frozen objects reach this many times those alive after the last one
GROWTH = 2.0
#: ... and never for fewer frozen objects than this
FLOOR = 200_000


class Collector:
    """Freezes what the server holds between ticks; a full collection when it has doubled.

    The frozen objects are counted as they are frozen (the objects the collections still track,
    `gc.get_objects()`, a tick's worth), never by `gc.get_freeze_count()`, which walks the whole
    frozen list (13 ms for 300,000 objects on an idle core). Frozen objects freed
    by reference counting stay in the count until the next full collection counts again, so a
    full collection comes at the latest after as many objects as were alive after the last
    one have been frozen."""

    def __init__(self) -> None:
        #: objects alive after the last full collection, and frozen since (an upper bound)
        self.alive_after_full = 0
        self.frozen = 0
        #: full collections run (the status reports it)
        self.full_collections = 0
        self.running = False

    def start(self) -> None:
        """Once the state is loaded: collect, then freeze everything (modules, app, plans)."""
        self._full()
        self.running = True

    def settle(self) -> None:
        """Between ticks: freeze what is alive now, after a full collection if it is due."""
        if not self.running:
            return
        self.frozen += len(gc.get_objects())
        gc.freeze()
        if self.frozen > GROWTH * max(self.alive_after_full, FLOOR):
            gc.unfreeze()
            self._full()
            self.full_collections += 1

    def _full(self) -> None:
        gc.collect()
        gc.freeze()
        self.alive_after_full = self.frozen = gc.get_freeze_count()

    def stop(self) -> None:
        """At shutdown: the frozen objects go back to the collector."""
        if self.running:
            gc.unfreeze()
            self.running = False
