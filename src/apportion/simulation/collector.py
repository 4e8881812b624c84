"""Python's cycle collector while a simulation runs."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from apportion.collection import cyclic_garbage, owns_collector
from apportion.state import check

#: The cycle collector's first threshold while a simulation runs (Python's default is 700).
GC_THRESHOLD = 50_000


@contextlib.contextmanager
def collector_for_long_runs(collect: bool = True) -> Iterator[None]:
    """Keep Python's cycle collector from scanning the simulation over and over.

    A session allocates some 100,000 objects that live until it ends. At the default threshold they
    trigger young collections mid-session, survive them, and count towards the next full collection,
    which scans everything alive: the scenario, every job's history and the session, and frees
    nothing (sessions free themselves on release; see Session.release). For the run, the objects
    that exist before it are frozen out of collections and the threshold is raised; both are
    restored afterwards. The measurements are in benchmarks/README.md.

    `collect=False`: the collector off for the run instead, for a run that is bounded and makes no
    cyclic garbage (a forecast's). Even at the raised threshold its young collections scan far more
    than the threshold says: the count is of allocations less deallocations, and a session frees as
    many objects from before as it makes, so the youngest generation grows far past it uncounted,
    and each of its few collections scans much of the session, to free nothing. What the run made
    and still lives then joins the oldest generation without a scan (frozen, then unfrozen with the
    rest). The self-check (`APPORTION_CHECK_STATE=1`) fails such a run that left any.

    A heap that was already frozen when the run started (the service freezes what lives after each
    tick, service/collector.py, and a forecast of its cache runs in its process) stays frozen, with
    what the run left: unfreezing it would hand the process's next full collection everything the
    service keeps, the pause its freezing is there to avoid. Off the main thread (a forecast the service
    runs in a worker) the collector is left alone (`owns_collector`).
    """
    if not owns_collector():
        yield
        return
    old = gc.get_threshold()
    was = gc.isenabled()
    kept_frozen = gc.get_freeze_count() > 0
    gc.freeze()
    if collect:
        gc.set_threshold(max(old[0], GC_THRESHOLD), *old[1:])
    else:
        gc.disable()
    try:
        yield
        if not collect and check.enabled():
            # what existed before is frozen: a collection now looks at what the run made alone
            _no_cyclic_garbage()
    finally:
        if not collect:
            gc.freeze()
            if was:
                gc.enable()
        gc.set_threshold(*old)
        if kept_frozen:
            gc.freeze()
        else:
            gc.unfreeze()


def _no_cyclic_garbage() -> None:
    """The self-check of a run with the collector off: it left no reference cycle unreachable."""
    found = cyclic_garbage()
    if found:
        raise check.StateCheckError(f"{check.ENV}: a run with the cycle collector off left cyclic garbage: "
                                    + ", ".join(f"{n} {k}" for k, n in sorted(found.items())))
