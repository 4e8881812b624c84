"""Python's cycle collector paused around work that allocates much and makes no cyclic garbage."""

from __future__ import annotations

import gc
import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

#: move what a paused step made into the oldest generation without a pass, when nothing of the
#: process is frozen (`collection_paused`); False leaves it in the youngest generation for the next
#: young collection to scan (the reference the tests compare with)
SETTLE = True

#: the self-check's switch (state/check.py names it too; this module sits below it and imports only
#: the standard library)
_CHECK_ENV = "APPORTION_CHECK_STATE"


class CyclicGarbageError(RuntimeError):
    """The self-check: a paused step that settles what it made left reference cycles unreachable."""


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
    (the dump's decoded objects too).

    What was allocated meanwhile would be the youngest generation's, far past its threshold, so the
    first allocation after would scan all of it, freeing nothing. When nothing of the process is
    frozen, it is moved into the oldest generation without a pass instead (frozen, then unfrozen,
    with whatever the caller held: as `cli/collector.py` does). A caller that keeps objects frozen (the service between ticks) is
    left as it is, the step's objects in the youngest generation, so that nothing of its is unfrozen.
    Under `APPORTION_CHECK_STATE=1` a settling step is checked to have left no cyclic garbage (a
    collection over what it made alone; what existed before is then settled even when the step
    raises). A step that raises settles nothing. Off the main thread it
    changes nothing (`owns_collector`).
    """
    if not owns_collector():
        yield
        return
    was = gc.isenabled()
    settle = was and SETTLE and gc.get_freeze_count() == 0
    checking = settle and os.environ.get(_CHECK_ENV, "") not in ("", "0")
    gc.disable()
    probe: list[None] | None = None
    if checking:
        gc.freeze()  # what was there before: the check's collection then looks at the step's alone
        # a tracked object made after that freeze: frozen too only if the step freezes the heap itself
        # (counting the frozen objects instead walks the whole heap, seconds in a large test process)
        probe = []
    done = False
    try:
        yield
        done = True
    finally:
        try:
            if checking:
                try:
                    if done:
                        _no_cyclic_garbage()
                finally:
                    # a step that froze the heap itself (engine.cycle_files) froze the check's part
                    # with it: that stays frozen, as it does without the check
                    if not _frozen(probe):
                        gc.unfreeze()
            if done and settle and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
        finally:
            if was:
                gc.enable()


def _frozen(obj: object) -> bool:
    """Whether a tracked object is in the permanent generation: in none of the collected ones (a walk
    over the unfrozen objects, which under the check's freeze are the step's own)."""
    return not any(o is obj for o in gc.get_objects())


def cyclic_garbage() -> Counter[str]:
    """What a collection over the unfrozen objects frees, by type name (nothing, for a step or run
    that made no reference cycle): the self-checks of paused steps and of runs with the collector off."""
    flags = gc.get_debug()
    gc.set_debug(flags | gc.DEBUG_SAVEALL)
    before = len(gc.garbage)
    try:
        gc.collect()
        return Counter(type(o).__qualname__ for o in gc.garbage[before:])
    finally:
        del gc.garbage[before:]
        gc.set_debug(flags)


def _no_cyclic_garbage() -> None:
    """The self-check of a settling step: a collection over the unfrozen objects frees nothing."""
    found = cyclic_garbage()
    if found:
        raise CyclicGarbageError(f"{_CHECK_ENV}: a step with the cycle collector paused left cyclic garbage: "
                                 + ", ".join(f"{n} {k}" for k, n in sorted(found.items())))
