"""Python's cycle collector paused around work that allocates much and makes no cyclic garbage."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def owns_collector() -> bool:
    """Whether this thread may switch Python's cycle collector (process-wide state): the main thread
    only. A worker thread (the service's forecasts) leaves it to whoever runs the process, which in the
    service is its own schedule of collections and freezes (service/collector.py): switched off or
    frozen from a worker, the other threads' garbage would go uncollected or frozen with it."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def collection_paused() -> Iterator[None]:
    """The cycle collector off inside, and back as it was after.

    For reading a dump and building what lives on from it (records, a snapshot, a forecast's start
    state): the objects form no cycles and all live on, so the collections their allocation triggers
    find nothing, and they promote what they scan until a full collection scans everything alive
    (the dump's decoded objects too). What was allocated meanwhile is left where it is, in the
    youngest generation, for the next young collection to scan once: nothing here freezes or
    unfreezes, so a caller that keeps objects frozen (the service between ticks) keeps them so. Off
    the main thread it changes nothing (`owns_collector`).
    """
    if not owns_collector():
        yield
        return
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
