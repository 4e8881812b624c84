"""Python's cycle collector while a simulation runs."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

#: The cycle collector's first threshold while a simulation runs (Python's default is 700).
GC_THRESHOLD = 50_000


@contextlib.contextmanager
def collector_for_long_runs() -> Iterator[None]:
    """Keep Python's cycle collector from scanning the simulation over and over.

    A session allocates some 100,000 objects that live until it ends. At the default threshold they
    trigger young collections mid-session, survive them, and count towards the next full collection,
    which scans everything alive: the scenario, every job's history and the session, and frees
    nothing (sessions free themselves on release; see Session.release). For the run, the objects
    that exist before it are frozen out of collections and the threshold is raised; both are
    restored afterwards. The measurements are in benchmarks/README.md.
    """
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(old[0], GC_THRESHOLD), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()
